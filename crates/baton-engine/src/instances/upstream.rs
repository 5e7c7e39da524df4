//! The instances' upstream: which GitHub repository they work for (GitHub's
//! API itself is `crate::github`), through which API and
//! with which token: from `[github]` in .baton/config.toml, else the
//! remote's URL, `GITHUB_API_URL` and the token of `GITHUB_TOKEN`,
//! `GH_TOKEN` or `gh auth token`. Pull requests are opened there
//! (`pull_request.rs`), and a coding instance's issue is read from there.

use super::Agents;
use crate::error::{Error, Result};
use crate::github::{GitHub, GitHubError, Repo};
use baton_core::instance::{ErrorCode, GithubIssue};

/// Where pull requests go: the API, the repository, the git remote.
pub(super) struct Target {
    pub github: GitHub,
    pub repo: Repo,
    pub remote: String,
}

impl Agents<'_> {
    fn remote_name(&self) -> String {
        self.eng.project.config.push_remote()
    }

    /// The repository: `[github] repository`, else the remote's URL.
    fn repository(&self, remote: &str, code: ErrorCode) -> Result<Repo> {
        self.eng
            .project
            .config
            .github_repository(&self.git)
            .ok_or_else(|| {
                let url = self
                    .git
                    .run(&["remote", "get-url", remote], &[])
                    .unwrap_or_default();
                Error::coded(
                    code,
                    format!(
                        "cannot tell the GitHub repository from remote {remote}'s URL {:?}",
                        url.trim()
                    ),
                )
                .hint("set repository = \"owner/name\" under [github] in .baton/config.toml")
            })
    }

    fn api_url(&self) -> String {
        self.eng
            .project
            .config
            .github
            .api_url
            .clone()
            .or_else(|| {
                std::env::var("GITHUB_API_URL")
                    .ok()
                    .filter(|s| !s.is_empty())
            })
            .unwrap_or_else(|| "https://api.github.com".into())
    }

    /// Where a pull request is opened: a remote to push to, the
    /// repository, and a token (required).
    pub(super) fn pull_request_target(&self) -> Result<Target> {
        let failed = |what: String| Error::coded(ErrorCode::PrCreationFailed, what);
        let remote = self.remote_name();
        if !self.git.has_remote(&remote) {
            return Err(failed(format!("the repository has no remote {remote:?} to push to"))
                .hint("add it (`git remote add origin URL`), or name another under [github] remote in .baton/config.toml"));
        }
        let repo = self.repository(&remote, ErrorCode::PrCreationFailed)?;
        let (token, _) = crate::github::token().ok_or_else(|| {
            failed("no GitHub token: GITHUB_TOKEN and GH_TOKEN are unset and `gh auth token` gave none".into())
                .hint("export GITHUB_TOKEN (a token that may push and open pull requests), or run `gh auth login`; nothing was pushed")
        })?;
        Ok(Target {
            github: GitHub::new(&self.api_url(), Some(token)),
            repo,
            remote,
        })
    }

    /// Issue `number` of the repository, for `baton agent spawn --issue`
    /// (a token is used when there is one: a public repository needs none).
    pub(super) fn read_issue(&self, number: u32) -> Result<GithubIssue> {
        let code = ErrorCode::InvalidConfiguration;
        let repo = self.repository(&self.remote_name(), code)?;
        let token = crate::github::token().map(|(t, _)| t);
        let anonymous = token.is_none();
        let issue = GitHub::new(&self.api_url(), token)
            .issue(&repo, number)
            .map_err(|e| match e {
                GitHubError::Status {
                    status: 404 | 410, ..
                } => Error::coded(code, format!("{repo} has no issue #{number} ({e})")).hint(
                    if anonymous {
                        "check the number; for a private repository export GITHUB_TOKEN (or run `gh auth login`); nothing was started"
                    } else {
                        "check the number and that the token may read the repository; nothing was started"
                    },
                ),
                e => Error::coded(code, format!("cannot read issue #{number} of {repo}: {e}"))
                    .hint("check the network and [github] api_url in .baton/config.toml; nothing was started"),
            })?;
        Ok(GithubIssue {
            number: issue.number,
            title: issue.title,
            body: issue.body.unwrap_or_default(),
            url: issue.html_url,
        })
    }
}
