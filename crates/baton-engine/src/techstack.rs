//! Best-effort detection of a project's tech stack (languages, package managers, frameworks,
//! test tooling, compose services) from the manifests at its root and one folder level below.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value};

/// Folders never descended into while looking for manifests.
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    ".baton",
    "vendor",
    "dist",
    "build",
    ".venv",
];

/// Files larger than this are not read (manifests are small; this guards against oddities).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Detects the tech stack of the project at `root`.
///
/// Looks at manifests in `root` and in its immediate subfolders (except build output,
/// dependency and VCS folders) and returns a JSON object whose keys are `languages`,
/// `package_managers`, `frameworks`, `test_frameworks`, `e2e_frameworks`, `services` and
/// `manifests`, each an array of unique strings in first-seen order (files are visited in
/// sorted order, the root first). Empty arrays are omitted, so a folder without manifests
/// gives `{}`. Unreadable or malformed files are skipped; this never panics.
pub fn detect(root: &Path) -> Value {
    let mut stack = Stack::default();
    let root_names = file_names(root);
    scan_dir(root, "", &root_names, &root_names, &mut stack);
    for sub in subdirs(root) {
        let dir = root.join(&sub);
        let names = file_names(&dir);
        scan_dir(&dir, &format!("{sub}/"), &names, &root_names, &mut stack);
    }
    stack.into_json()
}

/// An insertion-ordered set of strings.
#[derive(Default)]
struct Set(Vec<String>);

impl Set {
    fn insert(&mut self, value: &str) {
        if !self.0.iter().any(|v| v == value) {
            self.0.push(value.to_owned());
        }
    }
}

#[derive(Default)]
struct Stack {
    languages: Set,
    package_managers: Set,
    frameworks: Set,
    test_frameworks: Set,
    e2e_frameworks: Set,
    services: Set,
    manifests: Set,
}

impl Stack {
    fn add(&mut self, kind: Kind, label: &str) {
        match kind {
            Kind::Framework => self.frameworks.insert(label),
            Kind::Test => self.test_frameworks.insert(label),
            Kind::E2e => self.e2e_frameworks.insert(label),
        }
    }

    fn into_json(self) -> Value {
        let mut map = Map::new();
        for (key, set) in [
            ("languages", self.languages),
            ("package_managers", self.package_managers),
            ("frameworks", self.frameworks),
            ("test_frameworks", self.test_frameworks),
            ("e2e_frameworks", self.e2e_frameworks),
            ("services", self.services),
            ("manifests", self.manifests),
        ] {
            if !set.0.is_empty() {
                map.insert(
                    key.to_owned(),
                    Value::Array(set.0.into_iter().map(Value::String).collect()),
                );
            }
        }
        Value::Object(map)
    }
}

/// What a recognised dependency says about the project.
#[derive(Clone, Copy)]
enum Kind {
    Framework,
    Test,
    E2e,
}

use Kind::{E2e, Framework, Test};

const RUST_DEPS: &[(&str, Kind, &str)] = &[
    ("axum", Framework, "axum"),
    ("actix-web", Framework, "actix-web"),
    ("rocket", Framework, "rocket"),
    ("warp", Framework, "warp"),
    ("poem", Framework, "poem"),
    ("salvo", Framework, "salvo"),
    ("loco-rs", Framework, "loco"),
    ("tokio", Framework, "tokio"),
    ("tonic", Framework, "tonic"),
    ("leptos", Framework, "leptos"),
    ("yew", Framework, "yew"),
    ("dioxus", Framework, "dioxus"),
    ("tauri", Framework, "tauri"),
    ("bevy", Framework, "bevy"),
    ("rstest", Test, "rstest"),
    ("insta", Test, "insta"),
    ("proptest", Test, "proptest"),
    ("playwright", E2e, "playwright"),
    ("thirtyfour", E2e, "selenium"),
];

const JS_DEPS: &[(&str, Kind, &str)] = &[
    ("react", Framework, "react"),
    ("next", Framework, "next"),
    ("vue", Framework, "vue"),
    ("nuxt", Framework, "nuxt"),
    ("svelte", Framework, "svelte"),
    ("@sveltejs/kit", Framework, "sveltekit"),
    ("@angular/core", Framework, "angular"),
    ("solid-js", Framework, "solid"),
    ("preact", Framework, "preact"),
    ("astro", Framework, "astro"),
    ("@remix-run/react", Framework, "remix"),
    ("gatsby", Framework, "gatsby"),
    ("electron", Framework, "electron"),
    ("express", Framework, "express"),
    ("fastify", Framework, "fastify"),
    ("koa", Framework, "koa"),
    ("hono", Framework, "hono"),
    ("@hapi/hapi", Framework, "hapi"),
    ("@nestjs/core", Framework, "nestjs"),
    ("@nestjs/common", Framework, "nestjs"),
    ("jest", Test, "jest"),
    ("vitest", Test, "vitest"),
    ("mocha", Test, "mocha"),
    ("jasmine", Test, "jasmine"),
    ("ava", Test, "ava"),
    ("@playwright/test", E2e, "playwright"),
    ("playwright", E2e, "playwright"),
    ("playwright-core", E2e, "playwright"),
    ("cypress", E2e, "cypress"),
    ("puppeteer", E2e, "puppeteer"),
    ("puppeteer-core", E2e, "puppeteer"),
    ("selenium-webdriver", E2e, "selenium"),
    ("webdriverio", E2e, "webdriverio"),
    ("@wdio/cli", E2e, "webdriverio"),
];

/// Keys are normalised PEP 503 names (lowercase, `-` separated).
const PYTHON_DEPS: &[(&str, Kind, &str)] = &[
    ("django", Framework, "django"),
    ("flask", Framework, "flask"),
    ("fastapi", Framework, "fastapi"),
    ("starlette", Framework, "starlette"),
    ("litestar", Framework, "litestar"),
    ("sanic", Framework, "sanic"),
    ("tornado", Framework, "tornado"),
    ("aiohttp", Framework, "aiohttp"),
    ("pyramid", Framework, "pyramid"),
    ("falcon", Framework, "falcon"),
    ("streamlit", Framework, "streamlit"),
    ("pytest", Test, "pytest"),
    ("playwright", E2e, "playwright"),
    ("pytest-playwright", E2e, "playwright"),
    ("selenium", E2e, "selenium"),
    ("pyppeteer", E2e, "puppeteer"),
];

/// Go module paths; a module matches the path itself or any path below it (`/v5`, …).
const GO_MODULES: &[(&str, Kind, &str)] = &[
    ("github.com/gin-gonic/gin", Framework, "gin"),
    ("github.com/labstack/echo", Framework, "echo"),
    ("github.com/gofiber/fiber", Framework, "fiber"),
    ("github.com/go-chi/chi", Framework, "chi"),
    ("github.com/gorilla/mux", Framework, "gorilla-mux"),
    ("github.com/beego/beego", Framework, "beego"),
    ("google.golang.org/grpc", Framework, "grpc"),
    ("github.com/stretchr/testify", Test, "testify"),
    ("github.com/onsi/ginkgo", Test, "ginkgo"),
    (
        "github.com/playwright-community/playwright-go",
        E2e,
        "playwright",
    ),
    ("github.com/tebeka/selenium", E2e, "selenium"),
];

/// Lowercase substrings looked for in `pom.xml` and `build.gradle(.kts)`.
const JVM_MARKERS: &[(&str, Kind, &str)] = &[
    ("spring-boot", Framework, "spring-boot"),
    ("org.springframework.boot", Framework, "spring-boot"),
    ("quarkus", Framework, "quarkus"),
    ("micronaut", Framework, "micronaut"),
    ("io.ktor", Framework, "ktor"),
    ("junit", Test, "junit"),
    ("testng", Test, "testng"),
    ("selenium", E2e, "selenium"),
    ("com.microsoft.playwright", E2e, "playwright"),
];

/// Substrings of a compose `image:` (lowercased, tag removed) and the service they denote.
const WELL_KNOWN_IMAGES: &[(&str, &str)] = &[
    ("postgres", "postgres"),
    ("postgis", "postgres"),
    ("redis", "redis"),
    ("valkey", "valkey"),
    ("mysql", "mysql"),
    ("mariadb", "mariadb"),
    ("mongo", "mongo"),
    ("mssql", "mssql"),
    ("rabbitmq", "rabbitmq"),
    ("kafka", "kafka"),
    ("zookeeper", "zookeeper"),
    ("nats", "nats"),
    ("elasticsearch", "elasticsearch"),
    ("opensearch", "opensearch"),
    ("memcached", "memcached"),
    ("minio", "minio"),
    ("localstack", "localstack"),
    ("clickhouse", "clickhouse"),
    ("cassandra", "cassandra"),
    ("keycloak", "keycloak"),
    ("mailhog", "mailhog"),
    ("mailpit", "mailpit"),
    ("nginx", "nginx"),
];

fn match_exact(stack: &mut Stack, table: &[(&str, Kind, &str)], name: &str) {
    for &(dep, kind, label) in table {
        if dep == name {
            stack.add(kind, label);
        }
    }
}

/// Names of the files (or symlinks, checked when read) directly in `dir` (sorted; empty if
/// unreadable).
fn file_names(dir: &Path) -> BTreeSet<String> {
    dir_entries(dir, |ty| ty.is_file() || ty.is_symlink())
}

/// Names of the subfolders of `root` worth scanning (sorted; symlinks are not followed).
fn subdirs(root: &Path) -> BTreeSet<String> {
    let mut dirs = dir_entries(root, |ty| ty.is_dir());
    dirs.retain(|name| !SKIPPED_DIRS.contains(&name.as_str()));
    dirs
}

fn dir_entries(dir: &Path, keep: impl Fn(&std::fs::FileType) -> bool) -> BTreeSet<String> {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return BTreeSet::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|ty| keep(&ty)))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

fn read_text(path: &Path) -> Option<String> {
    let meta = fs_err::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    fs_err::read_to_string(path).ok()
}

/// Scans the manifests of one folder. `prefix` is the folder's path relative to the root
/// (empty or ending in `/`); `names` are its files and `root_names` the root folder's files.
fn scan_dir(
    dir: &Path,
    prefix: &str,
    names: &BTreeSet<String>,
    root_names: &BTreeSet<String>,
    stack: &mut Stack,
) {
    for name in names {
        // Decide from the name alone: other files are never opened.
        let Some(kind) = Manifest::from_name(name) else {
            continue;
        };
        let Some(text) = read_text(&dir.join(name)) else {
            continue;
        };
        let ok = match kind {
            Manifest::Cargo => scan_cargo(&text, stack),
            Manifest::PackageJson => scan_package_json(&text, names, root_names, stack),
            Manifest::Pyproject => scan_pyproject(&text, names, stack),
            Manifest::SetupPy => {
                scan_python_dir(names, stack);
                stack.package_managers.insert("pip");
                true
            }
            Manifest::Requirements => scan_requirements(&text, names, stack),
            Manifest::GoMod => scan_go_mod(&text, stack),
            Manifest::Maven => scan_jvm(&text, "maven", dir, stack),
            Manifest::Gradle => scan_jvm(&text, "gradle", dir, stack),
            Manifest::Compose => scan_compose(&text, stack),
        };
        if ok {
            stack.manifests.insert(&format!("{prefix}{name}"));
        }
    }
}

#[derive(Clone, Copy)]
enum Manifest {
    Cargo,
    PackageJson,
    Pyproject,
    SetupPy,
    Requirements,
    GoMod,
    Maven,
    Gradle,
    Compose,
}

impl Manifest {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "Cargo.toml" => Self::Cargo,
            "package.json" => Self::PackageJson,
            "pyproject.toml" => Self::Pyproject,
            "setup.py" => Self::SetupPy,
            "go.mod" => Self::GoMod,
            "pom.xml" => Self::Maven,
            "build.gradle" | "build.gradle.kts" => Self::Gradle,
            n if n.starts_with("requirements") && n.ends_with(".txt") => Self::Requirements,
            n if (n.starts_with("compose.") || n.starts_with("docker-compose."))
                && (n.ends_with(".yml") || n.ends_with(".yaml")) =>
            {
                Self::Compose
            }
            _ => return None,
        })
    }
}

fn scan_cargo(text: &str, stack: &mut Stack) -> bool {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return false;
    };
    stack.languages.insert("rust");
    stack.package_managers.insert("cargo");
    stack.test_frameworks.insert("cargo-test");

    let mut tables: Vec<&toml::Value> = Vec::new();
    for key in ["dependencies", "dev-dependencies", "build-dependencies"] {
        tables.extend(doc.get(key));
        tables.extend(lookup(&doc, &["workspace", key]));
    }
    if let Some(toml::Value::Table(targets)) = doc.get("target") {
        for target in targets.values() {
            for key in ["dependencies", "dev-dependencies"] {
                if let toml::Value::Table(t) = target {
                    tables.extend(t.get(key));
                }
            }
        }
    }
    for table in tables {
        let toml::Value::Table(deps) = table else {
            continue;
        };
        for (key, spec) in deps {
            // `foo = { package = "actix-web" }` renames a dependency.
            let name = spec
                .get("package")
                .and_then(toml::Value::as_str)
                .unwrap_or(key)
                .replace('_', "-");
            match_exact(stack, RUST_DEPS, &name);
        }
    }
    true
}

fn lookup<'a>(table: &'a toml::Table, path: &[&str]) -> Option<&'a toml::Value> {
    let (first, rest) = path.split_first()?;
    let mut value = table.get(*first)?;
    for key in rest {
        value = value.get(*key)?;
    }
    Some(value)
}

fn scan_package_json(
    text: &str,
    names: &BTreeSet<String>,
    root_names: &BTreeSet<String>,
    stack: &mut Stack,
) -> bool {
    let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    stack.languages.insert("javascript");

    let mut deps: Vec<&str> = Vec::new();
    for key in ["dependencies", "devDependencies"] {
        if let Some(Value::Object(map)) = doc.get(key) {
            deps.extend(map.keys().map(String::as_str));
        }
    }
    if deps.contains(&"typescript") || names.contains("tsconfig.json") {
        stack.languages.insert("typescript");
    }

    let manager = js_lock_manager(names)
        .or_else(|| js_lock_manager(root_names))
        .or_else(|| {
            // Corepack's `"packageManager": "pnpm@9.1.0"`.
            let field = doc.get("packageManager")?.as_str()?;
            let tool = field.split('@').next()?.trim();
            ["npm", "pnpm", "yarn", "bun"]
                .into_iter()
                .find(|known| *known == tool)
        })
        .unwrap_or("npm");
    stack.package_managers.insert(manager);

    for dep in deps {
        match_exact(stack, JS_DEPS, dep);
    }
    true
}

fn js_lock_manager(names: &BTreeSet<String>) -> Option<&'static str> {
    const LOCKS: &[(&str, &str)] = &[
        ("pnpm-lock.yaml", "pnpm"),
        ("yarn.lock", "yarn"),
        ("bun.lock", "bun"),
        ("bun.lockb", "bun"),
        ("package-lock.json", "npm"),
        ("npm-shrinkwrap.json", "npm"),
    ];
    LOCKS
        .iter()
        .find(|(lock, _)| names.contains(*lock))
        .map(|&(_, manager)| manager)
}

/// Records what any Python manifest implies, plus pytest hints from sibling files.
fn scan_python_dir(names: &BTreeSet<String>, stack: &mut Stack) {
    stack.languages.insert("python");
    if names.contains("pytest.ini") || names.contains("conftest.py") {
        stack.test_frameworks.insert("pytest");
    }
}

fn scan_pyproject(text: &str, names: &BTreeSet<String>, stack: &mut Stack) -> bool {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return false;
    };
    scan_python_dir(names, stack);

    let poetry = lookup(&doc, &["tool", "poetry"]).is_some() || names.contains("poetry.lock");
    let uv = lookup(&doc, &["tool", "uv"]).is_some() || names.contains("uv.lock");
    if poetry {
        stack.package_managers.insert("poetry");
    }
    if uv {
        stack.package_managers.insert("uv");
    }
    if !poetry && !uv {
        stack.package_managers.insert("pip");
    }

    let mut deps: Vec<String> = Vec::new();
    let mut push_specs = |value: Option<&toml::Value>| {
        if let Some(toml::Value::Array(items)) = value {
            deps.extend(
                items
                    .iter()
                    .filter_map(|v| v.as_str())
                    .filter_map(pep508_name),
            );
        }
    };
    push_specs(lookup(&doc, &["project", "dependencies"]));
    push_specs(lookup(&doc, &["tool", "uv", "dev-dependencies"]));
    for groups in [
        lookup(&doc, &["project", "optional-dependencies"]),
        doc.get("dependency-groups"),
    ] {
        if let Some(toml::Value::Table(groups)) = groups {
            for group in groups.values() {
                push_specs(Some(group));
            }
        }
    }

    let mut poetry_tables: Vec<&toml::Value> = Vec::new();
    poetry_tables.extend(lookup(&doc, &["tool", "poetry", "dependencies"]));
    poetry_tables.extend(lookup(&doc, &["tool", "poetry", "dev-dependencies"]));
    if let Some(toml::Value::Table(groups)) = lookup(&doc, &["tool", "poetry", "group"]) {
        poetry_tables.extend(groups.values().filter_map(|g| g.get("dependencies")));
    }
    for table in poetry_tables {
        if let toml::Value::Table(t) = table {
            deps.extend(t.keys().filter_map(|k| pep508_name(k)));
        }
    }

    for dep in &deps {
        match_python_dep(stack, dep);
    }
    if lookup(&doc, &["tool", "pytest"]).is_some() {
        stack.test_frameworks.insert("pytest");
    }
    if text.contains("unittest") {
        stack.test_frameworks.insert("unittest");
    }
    true
}

fn scan_requirements(text: &str, names: &BTreeSet<String>, stack: &mut Stack) -> bool {
    scan_python_dir(names, stack);
    stack.package_managers.insert("pip");
    for line in text.lines() {
        let line = line.trim();
        // Options (`-r other.txt`, `-e .`, `--index-url …`) and comments name no package.
        if line.starts_with('-') || line.starts_with('#') {
            continue;
        }
        if let Some(name) = pep508_name(line) {
            match_python_dep(stack, &name);
        }
    }
    true
}

fn match_python_dep(stack: &mut Stack, name: &str) {
    match_exact(stack, PYTHON_DEPS, name);
    // Plugins (`pytest-asyncio`, `pytest-cov`, …) imply pytest itself.
    if name.starts_with("pytest-") {
        stack.test_frameworks.insert("pytest");
    }
}

/// The normalised distribution name at the start of a PEP 508 requirement
/// (`"Flask_Login[extra]>=1; python_version>'3'"` → `flask-login`).
fn pep508_name(spec: &str) -> Option<String> {
    let spec = spec.trim_start();
    let end = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(spec.len());
    let name = &spec[..end];
    if name.is_empty() {
        return None;
    }
    Some(name.to_ascii_lowercase().replace(['_', '.'], "-"))
}

fn scan_go_mod(text: &str, stack: &mut Stack) -> bool {
    stack.languages.insert("go");
    stack.package_managers.insert("go");
    stack.test_frameworks.insert("go-test");

    let mut in_block = false;
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or_default().trim();
        let module = if in_block {
            if line.starts_with(')') {
                in_block = false;
                continue;
            }
            line
        } else if let Some(rest) = line.strip_prefix("require")
            && (rest.is_empty() || rest.starts_with([' ', '\t', '(']))
        {
            let rest = rest.trim_start();
            if rest.starts_with('(') {
                in_block = true;
                continue;
            }
            rest
        } else {
            continue;
        };
        let Some(path) = module.split_whitespace().next() else {
            continue;
        };
        let path = path.trim_matches('"');
        for &(prefix, kind, label) in GO_MODULES {
            let below = path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
            if below {
                stack.add(kind, label);
            }
        }
    }
    true
}

fn scan_jvm(text: &str, manager: &str, dir: &Path, stack: &mut Stack) -> bool {
    let lower = text.to_ascii_lowercase();
    let kotlin = [
        "org.jetbrains.kotlin",
        "kotlin(",
        "kotlin-maven-plugin",
        "kotlin-stdlib",
    ]
    .iter()
    .any(|marker| lower.contains(marker));
    if kotlin {
        stack.languages.insert("kotlin");
    }
    if !kotlin || dir.join("src/main/java").is_dir() {
        stack.languages.insert("java");
    }
    stack.package_managers.insert(manager);
    for &(marker, kind, label) in JVM_MARKERS {
        if lower.contains(marker) {
            stack.add(kind, label);
        }
    }
    true
}

/// A line-based read of a compose file: the keys directly under the top-level `services:`
/// are service names, and `image:` lines below them may name a well-known service.
fn scan_compose(text: &str, stack: &mut Stack) -> bool {
    let mut in_services = false;
    let mut service_indent: Option<usize> = None;
    for raw in text.lines() {
        let line = raw.trim_end();
        let content = line.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = line.len() - content.len();
        if indent == 0 {
            in_services = content
                .strip_prefix("services:")
                .is_some_and(|rest| rest.trim().is_empty() || rest.trim().starts_with('#'));
            service_indent = None;
            continue;
        }
        if !in_services {
            continue;
        }
        let level = *service_indent.get_or_insert(indent);
        if indent == level {
            if let Some(name) = yaml_key(content) {
                stack.services.insert(name);
            }
        } else if indent > level
            && let Some(image) = content.strip_prefix("image:")
            && let Some(service) = well_known_image(image)
        {
            stack.services.insert(service);
        }
    }
    true
}

/// The key of a `key:` line opening a mapping, if it looks like a compose service name.
fn yaml_key(content: &str) -> Option<&str> {
    let (key, rest) = content.split_once(':')?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let key = key.trim().trim_matches(|c| c == '"' || c == '\'');
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    valid.then_some(key)
}

fn well_known_image(value: &str) -> Option<&'static str> {
    let value = value.split(" #").next().unwrap_or_default().trim();
    let value = value.trim_matches(|c| c == '"' || c == '\'');
    let value = value.split('@').next().unwrap_or_default();
    // Drop the tag (`postgres:16`), but not a registry port (`localhost:5000/redis`).
    let (dir, last) = value.rsplit_once('/').unwrap_or(("", value));
    let last = last.split(':').next().unwrap_or_default();
    let image = format!("{dir}/{last}").to_ascii_lowercase();
    WELL_KNOWN_IMAGES
        .iter()
        .find(|(needle, _)| image.contains(needle))
        .map(|&(_, service)| service)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(root: &Path, rel: &str, contents: impl AsRef<[u8]>) {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).unwrap();
        }
        fs_err::write(path, contents).unwrap();
    }

    fn strings(value: &Value, key: &str) -> Vec<String> {
        value
            .get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[track_caller]
    fn assert_has(value: &Value, key: &str, expected: &[&str]) {
        let got = strings(value, key);
        for want in expected {
            assert!(
                got.iter().any(|g| g == want),
                "{key} should contain {want:?}, got {got:?} in {value}"
            );
        }
    }

    #[test]
    fn rust_axum_project_with_playwright_e2e_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "Cargo.toml",
            r#"
[package]
name = "shop"
version = "0.1.0"
edition = "2024"

[dependencies]
axum = "0.8"
tokio = { version = "1", features = ["full"] }
web = { package = "actix-web", version = "4" }

[dev-dependencies]
insta = "1"
"#,
        );
        write(
            root,
            "e2e/package.json",
            r#"{
  "name": "e2e",
  "private": true,
  "devDependencies": { "@playwright/test": "^1.45.0", "typescript": "^5.4.0" }
}"#,
        );
        write(root, "e2e/package-lock.json", "{}");

        let stack = detect(root);
        assert_eq!(
            strings(&stack, "languages"),
            ["rust", "javascript", "typescript"]
        );
        assert_eq!(strings(&stack, "package_managers"), ["cargo", "npm"]);
        assert_eq!(
            strings(&stack, "frameworks"),
            ["axum", "tokio", "actix-web"]
        );
        assert_eq!(strings(&stack, "test_frameworks"), ["cargo-test", "insta"]);
        assert_eq!(strings(&stack, "e2e_frameworks"), ["playwright"]);
        assert_eq!(
            strings(&stack, "manifests"),
            ["Cargo.toml", "e2e/package.json"]
        );
        assert!(stack.get("services").is_none(), "{stack}");
    }

    #[test]
    fn python_fastapi_project_with_compose_services() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "pyproject.toml",
            r#"
[project]
name = "api"
version = "0.1.0"
dependencies = ["FastAPI>=0.110", "uvicorn[standard]", "SQLAlchemy ~= 2.0"]

[project.optional-dependencies]
dev = ["pytest>=8", "pytest-asyncio"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"#,
        );
        write(root, "uv.lock", "version = 1\n");
        write(
            root,
            "docker-compose.yml",
            r#"# local dev stack
services:
  db:
    image: "postgres:16-alpine"
    environment:
      POSTGRES_PASSWORD: secret   # not a service
  cache:
    image: docker.io/library/redis:7 # pinned
  api:
    build: .
    depends_on:
      - db
      - cache

volumes:
  pgdata:
"#,
        );

        let stack = detect(root);
        assert_eq!(strings(&stack, "languages"), ["python"]);
        assert_eq!(strings(&stack, "package_managers"), ["uv"]);
        assert_eq!(strings(&stack, "frameworks"), ["fastapi"]);
        assert_eq!(strings(&stack, "test_frameworks"), ["pytest"]);
        assert_eq!(
            strings(&stack, "services"),
            ["db", "postgres", "cache", "redis", "api"]
        );
        assert_eq!(
            strings(&stack, "manifests"),
            ["docker-compose.yml", "pyproject.toml"]
        );
    }

    #[test]
    fn poetry_and_requirements_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "backend/pyproject.toml",
            r#"
[tool.poetry.dependencies]
python = "^3.12"
Django = "^5.0"

[tool.poetry.group.test.dependencies]
selenium = "*"

[tool.taskipy.tasks]
test = "python -m unittest discover"
"#,
        );
        write(
            root,
            "requirements-dev.txt",
            "# tools\n-r requirements.txt\nflask==3.0  # web\n--index-url https://x\n",
        );

        let stack = detect(root);
        assert_eq!(strings(&stack, "languages"), ["python"]);
        assert_eq!(strings(&stack, "package_managers"), ["pip", "poetry"]);
        assert_eq!(strings(&stack, "frameworks"), ["flask", "django"]);
        assert_eq!(strings(&stack, "test_frameworks"), ["unittest"]);
        assert_eq!(strings(&stack, "e2e_frameworks"), ["selenium"]);
        assert_eq!(
            strings(&stack, "manifests"),
            ["requirements-dev.txt", "backend/pyproject.toml"]
        );
    }

    #[test]
    fn go_gin_project() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "go.mod",
            "module example.com/svc\n\ngo 1.22\n\nrequire github.com/labstack/echo/v4 v4.12.0\n\n\
             require (\n\tgithub.com/gin-gonic/gin v1.10.0\n\
             \tgithub.com/stretchr/testify v1.9.0 // indirect\n)\n",
        );

        let stack = detect(root);
        assert_eq!(
            stack,
            json!({
                "languages": ["go"],
                "package_managers": ["go"],
                "frameworks": ["echo", "gin"],
                "test_frameworks": ["go-test", "testify"],
                "manifests": ["go.mod"],
            })
        );
    }

    #[test]
    fn jvm_builds_use_substring_checks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "pom.xml",
            "<project><dependencies>\
             <dependency><artifactId>spring-boot-starter-web</artifactId></dependency>\
             <dependency><artifactId>junit-jupiter</artifactId></dependency>\
             </dependencies></project>",
        );
        write(
            root,
            "android/build.gradle.kts",
            "plugins { kotlin(\"jvm\") version \"2.0.0\" }\n\
             dependencies { testImplementation(\"org.seleniumhq.selenium:selenium-java:4.0\") }\n",
        );

        let stack = detect(root);
        assert_eq!(strings(&stack, "languages"), ["java", "kotlin"]);
        assert_eq!(strings(&stack, "package_managers"), ["maven", "gradle"]);
        assert_eq!(strings(&stack, "frameworks"), ["spring-boot"]);
        assert_eq!(strings(&stack, "test_frameworks"), ["junit"]);
        assert_eq!(strings(&stack, "e2e_frameworks"), ["selenium"]);
    }

    #[test]
    fn empty_folder_gives_empty_object() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(detect(dir.path()), json!({}));
    }

    #[test]
    fn missing_folder_gives_empty_object() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(detect(&dir.path().join("nope")), json!({}));
    }

    #[test]
    fn malformed_manifests_are_skipped_without_panicking() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "package.json", r#"{"dependencies": {"react": "#);
        write(root, "web/package.json", "[1, 2, 3]");
        write(root, "api/package.json", r#"{"dependencies": ["vue"]}"#);
        write(root, "Cargo.toml", "[dependencies\naxum = ");
        write(root, "pyproject.toml", [0xff, 0xfe, 0x00, 0x80]);
        write(
            root,
            "compose.yaml",
            "services: {db: {image: postgres}}\n\t\t:::\n",
        );
        write(root, "go.mod", "require (\n\"\"\n)\n)\nrequire\n");

        let stack = detect(root);
        assert_has(&stack, "manifests", &["api/package.json", "go.mod"]);
        let manifests = strings(&stack, "manifests");
        assert!(!manifests.contains(&"package.json".to_owned()), "{stack}");
        assert!(!manifests.contains(&"Cargo.toml".to_owned()), "{stack}");
        assert!(stack.get("frameworks").is_none(), "{stack}");
        assert!(!strings(&stack, "languages").contains(&"rust".to_owned()));
    }

    #[test]
    fn skipped_and_deeper_folders_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for skipped in SKIPPED_DIRS {
            write(
                root,
                &format!("{skipped}/Cargo.toml"),
                "[dependencies]\naxum = \"1\"\n",
            );
        }
        write(
            root,
            "a/b/package.json",
            r#"{"dependencies": {"react": "18"}}"#,
        );
        assert_eq!(detect(root), json!({}));
    }

    #[test]
    fn folders_named_like_manifests_are_not_manifests() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs_err::create_dir_all(root.join("Cargo.toml")).unwrap();
        fs_err::create_dir_all(root.join("web/package.json")).unwrap();
        assert_eq!(detect(root), json!({}));
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_manifest_files_are_read_but_symlinked_folders_are_not_entered() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        write(
            outside.path(),
            "compose.yaml",
            "services:\n  mq:\n    image: rabbitmq:3\n",
        );
        write(
            outside.path(),
            "package.json",
            r#"{"dependencies": {"vue": "3"}}"#,
        );
        let root = dir.path();
        std::os::unix::fs::symlink(
            outside.path().join("compose.yaml"),
            root.join("compose.yaml"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("linked")).unwrap();
        assert_eq!(
            detect(root),
            json!({ "services": ["mq", "rabbitmq"], "manifests": ["compose.yaml"] })
        );
    }

    #[test]
    fn workspace_cargo_and_shared_js_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/*\"]\n\n[workspace.dependencies]\nactix-web = \"4\"\n",
        );
        write(root, "pnpm-lock.yaml", "lockfileVersion: '9.0'\n");
        write(
            root,
            "web/package.json",
            r#"{"dependencies": {"next": "14", "react": "18"}, "devDependencies": {"vitest": "1", "cypress": "13"}}"#,
        );
        write(root, "web/tsconfig.json", "{}");
        write(
            root,
            "tools/package.json",
            r#"{"packageManager": "yarn@4.1.0", "dependencies": {"express": "4"}}"#,
        );
        write(root, "tools/yarn.lock", "");

        let stack = detect(root);
        assert_eq!(
            stack,
            json!({
                "languages": ["rust", "javascript", "typescript"],
                "package_managers": ["cargo", "yarn", "pnpm"],
                "frameworks": ["actix-web", "express", "next", "react"],
                "test_frameworks": ["cargo-test", "vitest"],
                "e2e_frameworks": ["cypress"],
                "manifests": ["Cargo.toml", "tools/package.json", "web/package.json"],
            })
        );
    }

    #[test]
    fn compose_images_with_registries_and_tags() {
        assert_eq!(well_known_image(" postgres:16"), Some("postgres"));
        assert_eq!(well_known_image(" 'bitnami/kafka:3.7'"), Some("kafka"));
        assert_eq!(
            well_known_image(" localhost:5000/redis@sha256:abc"),
            Some("redis")
        );
        assert_eq!(well_known_image(" mongo-express"), Some("mongo"));
        assert_eq!(well_known_image(" ghcr.io/acme/app:1.0"), None);
        assert_eq!(well_known_image(""), None);
    }

    #[test]
    fn pep508_names_are_normalised() {
        assert_eq!(
            pep508_name("Flask_Login[x]>=1").as_deref(),
            Some("flask-login")
        );
        assert_eq!(
            pep508_name("zope.interface").as_deref(),
            Some("zope-interface")
        );
        assert_eq!(pep508_name(">=1"), None);
    }
}
