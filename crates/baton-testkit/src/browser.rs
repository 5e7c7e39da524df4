//! A real headless Chromium, driven over WebDriver (Debian's `chromium`
//! and `chromium-driver`, which `./scripts/test` installs): what a person
//! sees in the dashboard, asked of the browser itself.

use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The WebDriver element key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How long a page test waits at most for what a person waits for (an
/// element shown and enabled, a text shown) before it fails: long enough
/// for a machine busy with other work; a passing test never waits it out.
pub const PATIENCE: Duration = Duration::from_secs(90);

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium window of `width` ×
    /// `height`. Panics, saying how to get them, when they are missing.
    pub fn start(width: u32, height: u32) -> Browser {
        let chromium = ["/usr/bin/chromium", "/usr/lib/chromium/chromium"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("Chromium is missing: run ./scripts/test, which installs Debian's chromium and chromium-driver");
        let port = crate::free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver is missing: run ./scripts/test, which installs Debian's chromium-driver");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let base = format!("http://127.0.0.1:{port}");
        let until = Instant::now() + Duration::from_secs(30);
        while agent.get(&format!("{base}/status")).call().is_err() {
            assert!(Instant::now() < until, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut b = Browser {
            driver,
            base,
            session: String::new(),
            agent,
        };
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            // A page's confirm() waits for the test to answer it.
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         format!("--window-size={width},{height}"), "--hide-scrollbars"],
            }
        }}});
        let v = b.call("POST", "/session", Some(caps));
        b.session = v["sessionId"].as_str().expect("a session").to_string();
        b
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let value = self.try_call(method, path, body);
        assert!(
            value.get("error").is_none(),
            "WebDriver {method} {path}: {value}"
        );
        value
    }

    /// The WebDriver answer's value, an error included.
    fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let mut resp = match (method, body) {
            ("GET", _) => self.agent.get(&url).call(),
            ("DELETE", _) => self.agent.delete(&url).call(),
            (_, b) => self
                .agent
                .post(&url)
                .send_json(b.unwrap_or_else(|| json!({}))),
        }
        .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        let v: Value = resp.body_mut().read_json().unwrap();
        v["value"].clone()
    }

    fn session(&self, path: &str) -> String {
        format!("/session/{}{path}", self.session)
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", &self.session("/url"), Some(json!({"url": url})));
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            &self.session("/execute/sync"),
            Some(json!({"script": script, "args": args})),
        )
    }

    /// The serious and critical accessibility violations axe-core finds
    /// in the page as it is now, one line each (rule, impact, what it
    /// hit). axe-core is the npm package `./scripts/test` installs
    /// (`AXE_CORE_JS`); panics, saying so, when it is missing.
    pub fn serious_accessibility_violations(&self) -> Vec<String> {
        let path = std::env::var("AXE_CORE_JS").expect(
            "AXE_CORE_JS is not set: run the tests with ./scripts/test, which installs axe-core",
        );
        let source = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("axe-core is missing at {path} ({e}): run ./scripts/test"));
        self.js(&format!("{source}\nreturn null;"), json!([]));
        let v = self.js_async(
            "axe.run(document, {resultTypes: ['violations']}).then((r) => done(r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id + ' (' + v.impact + '): ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))).catch((e) => done(['axe failed: ' + e]));",
            json!([]),
        );
        v.as_array()
            .unwrap_or_else(|| panic!("axe-core answered {v}"))
            .iter()
            .map(|x| x.as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Runs `script` in the page and waits (up to 30 s) until it calls
    /// `done(value)`: that value.
    pub fn js_async(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            &self.session("/execute/async"),
            Some(json!({
                "script": format!("const done = arguments[arguments.length - 1];\n{script}"),
                "args": args
            })),
        )
    }

    /// The visible text of the first element matching `css`, if any.
    pub fn text(&self, css: &str) -> Option<String> {
        self.js(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;",
            json!([css]),
        )
        .as_str()
        .map(str::to_string)
    }

    /// Waits until the element matching `css` shows text containing `want`:
    /// up to `secs`, and never less than [`PATIENCE`] (what a person waits
    /// for on a busy machine; a passing test never waits it out).
    pub fn wait_text(&self, css: &str, want: &str, secs: u64) -> String {
        let secs = secs.max(PATIENCE.as_secs());
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let got = self.text(css);
            if let Some(t) = &got
                && t.contains(want)
            {
                return t.clone();
            }
            assert!(
                Instant::now() < until,
                "{css} did not show {want:?} within {secs}s; it shows {got:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The WebDriver id of the first element matching `css`, when there is
    /// one now.
    fn try_element(&self, css: &str) -> Option<String> {
        let el = self.try_call(
            "POST",
            &self.session("/element"),
            Some(json!({"using": "css selector", "value": css})),
        );
        el[ELEMENT].as_str().map(str::to_string)
    }

    /// Whether element `id` is shown and enabled: what a person waits for
    /// before clicking or typing (a click on a disabled button does
    /// nothing, and WebDriver says so without an error).
    fn ready(&self, id: &str) -> bool {
        let shown = self.try_call(
            "GET",
            &self.session(&format!("/element/{id}/displayed")),
            None,
        );
        let enabled = self.try_call(
            "GET",
            &self.session(&format!("/element/{id}/enabled")),
            None,
        );
        shown == Value::Bool(true) && enabled == Value::Bool(true)
    }

    /// Does `what` (`click`, `value`) to the element matching `css` once it
    /// is there, shown and enabled, as a person would: waiting for it (a
    /// dialog opening, a busy machine drawing slowly) up to [`PATIENCE`],
    /// and finding it again when the page redrew it between finding and
    /// acting (the dashboard redraws as the store changes).
    fn act(&self, css: &str, what: &str, body: Value) {
        let until = Instant::now() + PATIENCE;
        loop {
            let last;
            if let Some(id) = self.try_element(css) {
                if self.ready(&id) {
                    let path = self.session(&format!("/element/{id}/{what}"));
                    let v = self.try_call("POST", &path, Some(body.clone()));
                    match v.get("error").and_then(Value::as_str) {
                        None => return,
                        Some(
                            "stale element reference"
                            | "element not interactable"
                            | "element click intercepted"
                            | "no such element",
                        ) => last = v,
                        Some(_) => panic!("WebDriver POST {path}: {v}"),
                    }
                } else {
                    last = json!("not shown and enabled yet");
                }
            } else {
                last = json!("no such element yet");
            }
            assert!(
                Instant::now() < until,
                "{css} was never there to {what} (shown and enabled) within {PATIENCE:?}: {last}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Clicks the element matching `css`, as a person would, once it is
    /// shown and enabled.
    pub fn click(&self, css: &str) {
        self.act(css, "click", json!({}));
    }

    /// Types `text` into the element matching `css`, once it is shown and
    /// enabled.
    pub fn type_into(&self, css: &str, text: &str) {
        self.act(css, "value", json!({"text": text}));
    }

    /// Presses each key of `keys` in turn, as a person at the keyboard
    /// would, on whatever has the focus (WebDriver's actions: trusted key
    /// events). WebDriver's codes name the other keys: [`Browser::ESCAPE`],
    /// [`Browser::ENTER`].
    pub fn press(&self, keys: &str) {
        let actions: Vec<Value> = keys
            .chars()
            .flat_map(|k| {
                let k = k.to_string();
                [
                    json!({"type": "keyDown", "value": k}),
                    json!({"type": "keyUp", "value": k}),
                ]
            })
            .collect();
        self.call(
            "POST",
            &self.session("/actions"),
            Some(json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        );
    }
    pub const ESCAPE: &'static str = "\u{E00C}";
    pub const ENTER: &'static str = "\u{E007}";

    /// The text of the dialog (`alert`, `confirm`) the page shows, once it
    /// shows one.
    pub fn dialog_text(&self, secs: u64) -> String {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let mut resp = self
                .agent
                .get(&format!("{}{}", self.base, self.session("/alert/text")))
                .call()
                .unwrap();
            let v: Value = resp.body_mut().read_json().unwrap();
            if let Some(t) = v["value"].as_str() {
                return t.to_string();
            }
            assert!(Instant::now() < until, "no dialog within {secs}s: {v}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Answers the dialog the page shows: OK (`true`) or Cancel.
    pub fn answer_dialog(&self, ok: bool) {
        let what = if ok {
            "/alert/accept"
        } else {
            "/alert/dismiss"
        };
        self.call("POST", &self.session(what), Some(json!({})));
    }

    /// Resizes the window (a phone: 390 × 844).
    pub fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            &self.session("/window/rect"),
            Some(json!({"width": width, "height": height})),
        );
    }

    /// A PNG of the window.
    pub fn screenshot(&self) -> Vec<u8> {
        use base64::Engine as _;
        let b64 = self.call("GET", &self.session("/screenshot"), None);
        base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().expect("base64"))
            .unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self
                .agent
                .delete(&format!("{}/session/{}", self.base, self.session))
                .call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
