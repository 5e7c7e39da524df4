//! Secrets never reach a file baton writes: a phase that prints a planted
//! secret of every kind (and the value of a secret-looking environment
//! variable) leaves none of them in the store, the task's files, `baton
//! log`, `baton show`, or a team's mailbox; the rest of what it said is
//! there.

use baton_testkit::{TestProject, on_both_backends};

const PLANTED: &[&str] = &[
    "sk-ant-api03-Abc123Def456Ghi789Jkl012Mno345Pqr678",
    "sk-proj-Zyx987Wvu654Tsr321Qpo098Nml765",
    "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
    "AKIAIOSFODNN7EXAMPLE",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "xoxb-1234567890-0987654321-abcdefABCDEF",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "hunter2-pass",
    "MIIEpAIBAAKCAQEAplanted",
    "tok-planted-env-value-42",
];

/// Every file under `dir`, as bytes.
fn files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for e in fs_err::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if let Ok(b) = std::fs::read(&p) {
            out.push((p, b));
        }
    }
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

on_both_backends! {
    fn planted_secrets_never_reach_a_file_baton_writes() {
        let p = TestProject::new();
        // The user's own script (not in .baton), printing what a careless
        // agent or tool would.
        let script = format!(
            "echo \"keys: {} {} {} {} {} {} {}\"\necho \"password=hunter2-pass\"\nprintf -- '-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIBAAKCAQEAplanted\\n-----END RSA PRIVATE KEY-----\\n'\necho \"env: $MY_API_TOKEN\" >&2\necho \"the summary with {} inside\" > \"$BATON_SUMMARY_FILE\"\n",
            PLANTED[0], PLANTED[1], PLANTED[2], PLANTED[3], PLANTED[4], PLANTED[5], PLANTED[6], PLANTED[2]
        );
        fs_err::write(p.root().join("leak.sh"), script).unwrap();
        p.workflow("w", "name = \"w\"\n[[phase]]\nid = \"leak\"\nrun = \"sh leak.sh\"\n");
        let out = p
            .baton(&["run", "w", "x", "--id", "t"])
            .env("MY_API_TOKEN", "tok-planted-env-value-42")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let team = p
            .baton(&["team", "create", "crew", "--teammate", "ana:engineer"])
            .output()
            .unwrap();
        assert!(team.status.success());
        let msg = p
            .baton(&["team", "msg", "send", "crew", "--to", "ana", &format!("use {}", PLANTED[3])])
            .output()
            .unwrap();
        assert!(msg.status.success());

        let mut all = Vec::new();
        files(&p.root().join(".baton"), &mut all);
        all.retain(|(path, _)| !path.starts_with(p.root().join(".baton/workflows")));
        let (_, log, _) = p.run(&["log", "t", "--json"]);
        let (_, show, _) = p.run(&["show", "t", "--json"]);
        let (_, mail, _) = p.run(&["team", "msg", "ls", "crew", "--json"]);
        all.push(("baton log".into(), log.into_bytes()));
        all.push(("baton show".into(), show.clone().into_bytes()));
        all.push(("team msg ls".into(), mail.clone().into_bytes()));
        for secret in PLANTED {
            for (path, bytes) in &all {
                assert!(!contains(bytes, secret), "{secret} is in {}", path.display());
            }
        }
        // What was around the secrets is kept, marked.
        assert!(show.contains("the summary with [REDACTED:github-token] inside"), "{show}");
        assert!(mail.contains("use [REDACTED:aws-access-key]"), "{mail}");
        let out_file = all
            .iter()
            .find(|(path, _)| path.to_string_lossy().ends_with(".out"))
            .expect("the phase's output file");
        let text = String::from_utf8_lossy(&out_file.1);
        assert!(text.contains("keys: [REDACTED:anthropic-key] [REDACTED:openai-key]"), "{text}");
        assert!(text.contains("password=[REDACTED:value]"), "{text}");
        assert!(text.contains("[REDACTED:private-key]"), "{text}");
        let err_file = all
            .iter()
            .find(|(path, _)| path.to_string_lossy().ends_with(".err"))
            .expect("the phase's error file");
        assert!(String::from_utf8_lossy(&err_file.1).contains("env: [REDACTED:env]"));
    }
}
