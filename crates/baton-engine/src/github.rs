//! GitHub's REST API, the part baton uses: opening a pull request
//! (`POST /repos/{owner}/{repo}/pulls`) and finding the open one of a
//! branch (`GET /repos/{owner}/{repo}/pulls?head=…`), with the token from
//! `GITHUB_TOKEN`, `GH_TOKEN` or `gh auth token`, against github.com or a
//! GitHub Enterprise server (`[github] api_url`).

use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

/// `owner/name` of a repository on GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    pub owner: String,
    pub name: String,
}

impl std::fmt::Display for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

impl Repo {
    /// `owner/name`.
    pub fn parse(s: &str) -> Option<Repo> {
        let (owner, name) = s.trim().split_once('/')?;
        let ok = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        };
        (ok(owner) && ok(name)).then(|| Repo {
            owner: owner.into(),
            name: name.into(),
        })
    }

    /// The repository a git remote URL names: `git@HOST:o/r.git`,
    /// `https://HOST/o/r(.git)`, `ssh://git@HOST/o/r.git`.
    pub fn of_remote_url(url: &str) -> Option<Repo> {
        let url = url.trim().trim_end_matches('/');
        let path = if let Some(rest) = url.split_once("://").map(|(_, r)| r) {
            rest.split_once('/')?.1
        } else {
            // scp-like: [user@]host:path
            let (host, path) = url.split_once(':')?;
            if host.contains('/') {
                return None;
            }
            path
        };
        let path = path.strip_suffix(".git").unwrap_or(path);
        let mut parts = path.rsplit('/');
        let name = parts.next()?;
        let owner = parts.next()?;
        Repo::parse(&format!("{owner}/{name}"))
    }
}

/// A pull request as baton records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    pub number: u32,
    pub url: String,
}

/// What opening a pull request asks.
#[derive(Debug, Clone)]
pub struct NewPull<'a> {
    pub title: &'a str,
    pub body: &'a str,
    /// The branch with the work.
    pub head: &'a str,
    /// The branch it goes into.
    pub base: &'a str,
    pub draft: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitHubError {
    #[error("no GitHub token: GITHUB_TOKEN and GH_TOKEN are unset and `gh auth token` gave none")]
    NoToken,
    /// GitHub answered with an error status.
    #[error("GitHub answered {status}: {message}")]
    Status { status: u16, message: String },
    #[error("cannot reach GitHub at {api}: {message}")]
    Transport { api: String, message: String },
}

/// An issue as baton reads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Issue {
    pub number: u32,
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    pub html_url: String,
}

/// A client for one API base URL, with a token (`None`: anonymous, which
/// reads public repositories only).
pub struct GitHub {
    api: String,
    token: Option<String>,
    agent: ureq::Agent,
}

/// The token to use, and where it came from.
pub fn token() -> Option<(String, &'static str)> {
    for var in ["GITHUB_TOKEN", "GH_TOKEN"] {
        if let Ok(t) = std::env::var(var)
            && !t.trim().is_empty()
        {
            return Some((t.trim().to_string(), var));
        }
    }
    let out = std::process::Command::new("gh")
        .args(["auth", "token"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let t = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !t.is_empty()).then_some((t, "gh auth token"))
}

#[derive(Deserialize)]
struct PullJson {
    number: u32,
    html_url: String,
}

#[derive(Deserialize, Default)]
struct ErrorJson {
    #[serde(default)]
    message: String,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
}

impl GitHub {
    pub fn new(api: &str, token: Option<String>) -> GitHub {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .user_agent(concat!("baton/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        GitHub {
            api: api.trim_end_matches('/').to_string(),
            token,
            agent,
        }
    }

    /// Opens the pull request; if GitHub says one is open for that branch
    /// already (a retry after a lost answer), returns that one.
    pub fn create_pull(&self, repo: &Repo, p: &NewPull<'_>) -> Result<Pull, GitHubError> {
        let url = format!("{}/repos/{}/{}/pulls", self.api, repo.owner, repo.name);
        let body = json!({
            "title": p.title,
            "body": p.body,
            "head": p.head,
            "base": p.base,
            "draft": p.draft,
        });
        let mut last = None;
        // A server error or a dropped connection gets two more tries.
        for attempt in 0..3 {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(300 << attempt));
            }
            let sent = self
                .request(self.agent.post(&url))
                .send_json(&body)
                .map_err(|e| self.transport(e));
            let mut resp = match sent {
                Ok(r) => r,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            let status = resp.status().as_u16();
            let text = resp.body_mut().read_to_string().unwrap_or_default();
            if status == 201 {
                let pj: PullJson =
                    serde_json::from_str(&text).map_err(|e| GitHubError::Status {
                        status,
                        message: format!("an answer baton cannot read: {e}"),
                    })?;
                return Ok(Pull {
                    number: pj.number,
                    url: pj.html_url,
                });
            }
            let err = error_of(status, &text);
            if status == 422
                && err.to_string().contains("already exists")
                && let Some(existing) = self.open_pull_for(repo, p.head)?
            {
                return Ok(existing);
            }
            if status >= 500 {
                last = Some(err);
                continue;
            }
            return Err(err);
        }
        Err(last.expect("three attempts failed"))
    }

    /// The open pull request whose head is `branch` of `repo`'s owner.
    pub fn open_pull_for(&self, repo: &Repo, branch: &str) -> Result<Option<Pull>, GitHubError> {
        let url = format!("{}/repos/{}/{}/pulls", self.api, repo.owner, repo.name);
        let head = format!("{}:{branch}", repo.owner);
        let get = self
            .request(self.agent.get(&url))
            .query("head", &head)
            .query("state", "open");
        let pulls: Vec<PullJson> = self.read_json(get)?;
        Ok(pulls.into_iter().next().map(|pj| Pull {
            number: pj.number,
            url: pj.html_url,
        }))
    }

    /// Issue `number` of `repo`.
    pub fn issue(&self, repo: &Repo, number: u32) -> Result<Issue, GitHubError> {
        let url = format!(
            "{}/repos/{}/{}/issues/{number}",
            self.api, repo.owner, repo.name
        );
        self.read_json(self.request(self.agent.get(&url)))
    }

    /// Sends a GET and reads its 200 answer as `T`.
    fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        get: ureq::RequestBuilder<ureq::typestate::WithoutBody>,
    ) -> Result<T, GitHubError> {
        let mut resp = get.call().map_err(|e| self.transport(e))?;
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        if status != 200 {
            return Err(error_of(status, &text));
        }
        serde_json::from_str(&text).map_err(|e| GitHubError::Status {
            status,
            message: format!("an answer baton cannot read: {e}"),
        })
    }

    fn request<B>(&self, r: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        let r = r
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28");
        match &self.token {
            Some(t) => r.header("Authorization", &format!("Bearer {t}")),
            None => r,
        }
    }

    fn transport(&self, e: ureq::Error) -> GitHubError {
        GitHubError::Transport {
            api: self.api.clone(),
            message: e.to_string(),
        }
    }
}

/// GitHub's error answer as one message (its `message` and the
/// `errors[].message` details).
fn error_of(status: u16, text: &str) -> GitHubError {
    let e: ErrorJson = serde_json::from_str(text).unwrap_or_default();
    let mut message = if e.message.is_empty() {
        text.chars().take(300).collect()
    } else {
        e.message
    };
    let details: Vec<String> = e
        .errors
        .iter()
        .filter_map(|d| {
            d.get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
                .or_else(|| {
                    let field = d.get("field")?.as_str()?;
                    let code = d.get("code")?.as_str()?;
                    Some(format!("{field}: {code}"))
                })
        })
        .collect();
    if !details.is_empty() {
        message = format!("{message} ({})", details.join("; "));
    }
    GitHubError::Status { status, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_name_their_repository() {
        let r = |s: &str| Repo::of_remote_url(s).map(|r| r.to_string());
        assert_eq!(
            r("git@github.com:acme/app.git").as_deref(),
            Some("acme/app")
        );
        assert_eq!(
            r("https://github.com/acme/app").as_deref(),
            Some("acme/app")
        );
        assert_eq!(
            r("https://github.com/acme/app.git/").as_deref(),
            Some("acme/app")
        );
        assert_eq!(
            r("ssh://git@ghe.example.com:2222/acme/app.git").as_deref(),
            Some("acme/app")
        );
        assert_eq!(r("/srv/git/app.git"), None);
        assert_eq!(r("../remote.git"), None);
    }

    #[test]
    fn error_answers_read_as_one_message() {
        let e = error_of(
            422,
            r#"{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for acme:b."}]}"#,
        );
        assert_eq!(
            e.to_string(),
            "GitHub answered 422: Validation Failed (A pull request already exists for acme:b.)"
        );
        let e = error_of(
            422,
            r#"{"message":"Validation Failed","errors":[{"field":"head","code":"invalid"}]}"#,
        );
        assert!(e.to_string().ends_with("(head: invalid)"), "{e}");
    }
}
