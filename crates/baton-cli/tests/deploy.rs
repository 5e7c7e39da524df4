//! deploy/kubernetes and the image's clone step, checked with what a
//! platform checks them with: every overlay rendered by kubectl's
//! kustomize and validated in strict mode against Kubernetes' published
//! schemas (kubernetes-validate, three versions) and KEDA's (its API as
//! pydantic models, made strict JSON Schemas); the properties the docs
//! promise read off the rendered objects; the query KEDA scales on run
//! against a real PostgreSQL; `baton-clone` run for real.

use baton_testkit::{PgCluster, TestProject, wait_for};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The checkout's root (the running test's package is crates/baton-cli).
fn root() -> PathBuf {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    Path::new(&dir).join("../..").canonicalize().unwrap()
}

fn tool(var: &str, what: &str) -> PathBuf {
    PathBuf::from(std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with ./scripts/test, which installs {what}")
    }))
}

/// The Python of the platform tools (`OPS_PY`) and a program beside it.
fn ops(program: &str) -> PathBuf {
    tool("OPS_PY", "the platform tools").with_file_name(program)
}

const OVERLAYS: [&str; 4] = [
    "base",
    "overlays/keda-scaledobject",
    "overlays/keda-scaledjob",
    "overlays/ingress",
];

/// `kubectl kustomize DIR`: the rendered YAML.
fn render(dir: &str) -> String {
    let out = Command::new(tool("KUBECTL", "kubectl"))
        .arg("kustomize")
        .arg(root().join("deploy/kubernetes").join(dir))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the platform tools' Python on `script` with `input` on stdin.
fn python(script: &str, input: &str) -> (bool, String) {
    let mut child = Command::new(tool("OPS_PY", "the platform tools"))
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The rendered objects as JSON.
fn objects(yaml: &str) -> Vec<Value> {
    let (ok, out) = python(
        "import json, sys, yaml\nprint(json.dumps([d for d in yaml.safe_load_all(sys.stdin) if d]))",
        yaml,
    );
    assert!(ok, "{out}");
    serde_json::from_str(&out).unwrap()
}

/// kubernetes-validate in strict mode for Kubernetes `version`: whether
/// it passed, and what it said (KEDA's kinds, which it has no schema for,
/// are checked against KEDA's own below).
fn validate(yaml: &str, version: &str) -> (bool, String) {
    let file = tempfile::NamedTempFile::new().unwrap();
    fs_err::write(file.path(), yaml).unwrap();
    let out = Command::new(ops("kubernetes-validate"))
        .args(["--strict", "-k", version])
        .arg(file.path())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && !said.contains("ERROR"), said)
}

/// KEDA's objects against KEDA's API (cloudcoil's models of KEDA 2.16),
/// as JSON Schemas where every object with listed properties takes no
/// others (what `kubectl --validate=strict` does with a CRD's schema).
const KEDA: &str = r#"
import json, sys, yaml, jsonschema
import cloudcoil.models.keda.v1alpha1 as keda
def strict(node):
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for v in node.values(): strict(v)
    elif isinstance(node, list):
        for v in node: strict(v)
    return node
kinds = {k: strict(getattr(keda, k).model_json_schema(by_alias=True)) for k in ("ScaledObject", "ScaledJob", "TriggerAuthentication")}
bad = 0
seen = 0
for doc in yaml.safe_load_all(sys.stdin):
    if not doc or doc.get("apiVersion") != "keda.sh/v1alpha1": continue
    seen += 1
    for e in jsonschema.Draft202012Validator(kinds[doc["kind"]]).iter_errors(doc):
        bad += 1
        print("ERROR", doc["kind"], ".".join(map(str, e.path)), e.message[:200])
print("checked", seen)
sys.exit(1 if bad else 0)
"#;

/// The Kubernetes versions checked: the three newest kubernetes-validate
/// ships.
const VERSIONS: [&str; 3] = ["1.35.0", "1.36.0", "1.37.0"];

#[test]
fn every_overlay_renders_and_validates_strictly() {
    for dir in OVERLAYS {
        let yaml = render(dir);
        for v in VERSIONS {
            let (ok, said) = validate(&yaml, v);
            assert!(ok, "{dir} on Kubernetes {v}: {said}");
        }
        let (ok, said) = python(KEDA, &yaml);
        assert!(ok, "{dir} against KEDA's API: {said}");
        if dir.contains("keda") {
            assert!(!said.contains("checked 0"), "{dir}: no KEDA object: {said}");
        }
    }
    // The checks are strict: a misspelt field fails each of them.
    let yaml = render("overlays/keda-scaledobject");
    let typo = yaml.replacen("readOnlyRootFilesystem", "readOnlyRootFilesytem", 1);
    assert!(
        !validate(&typo, "1.37.0").0,
        "a misspelt field passed kubernetes-validate"
    );
    let typo = yaml.replacen("pollingInterval", "pollingIntervall", 1);
    assert!(
        !python(KEDA, &typo).0,
        "a misspelt field passed KEDA's schema"
    );
}

fn find<'a>(all: &'a [Value], kind: &str, name: &str) -> &'a Value {
    all.iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn seconds(arg: &str) -> u64 {
    humantime_secs(arg.trim_start_matches("--drain-timeout="))
}

fn humantime_secs(s: &str) -> u64 {
    s.trim_end_matches('s').parse().expect("seconds")
}

/// What docs/kubernetes.md promises of the objects, read off them.
#[test]
fn the_workers_are_probed_drained_unprivileged_and_given_secrets_by_reference() {
    let all = objects(&render("base"));
    let worker = find(&all, "Deployment", "baton-worker");
    let pod = &worker["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "worker");
    assert!(args.contains(&"--listen=0.0.0.0:9090"), "{args:?}");
    assert!(args.contains(&"--log-format=json"), "{args:?}");
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    // The drain fits in the grace period, with time to release after it.
    let drain = seconds(
        args.iter()
            .find(|a| a.starts_with("--drain-timeout="))
            .unwrap(),
    );
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(drain + 20 <= grace, "drain {drain}s, grace {grace}s");
    // Not root, nothing written outside its volumes, no privilege.
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    for c in pod["containers"]
        .as_array()
        .unwrap()
        .iter()
        .chain(pod["initContainers"].as_array().unwrap())
    {
        let s = &c["securityContext"];
        assert_eq!(s["readOnlyRootFilesystem"], true, "{c}");
        assert_eq!(s["allowPrivilegeEscalation"], false, "{c}");
        assert_eq!(s["capabilities"]["drop"], serde_json::json!(["ALL"]), "{c}");
        // Secrets by reference only: no value of one is written here.
        for e in c["env"].as_array().into_iter().flatten() {
            let name = e["name"].as_str().unwrap();
            if [
                "BATON_DATABASE_URL",
                "BATON_REPOSITORY",
                "BATON_SERVER_TOKEN",
                "BATON_WEBHOOK_SECRET",
            ]
            .contains(&name)
            {
                assert!(
                    e["value"].is_null() && e["valueFrom"]["secretKeyRef"].is_object(),
                    "{e}"
                );
            }
        }
    }
    // No rights on the Kubernetes API.
    assert_eq!(pod["serviceAccountName"], "baton");
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(
        find(&all, "ServiceAccount", "baton")["automountServiceAccountToken"],
        false
    );
    assert!(
        !all.iter().any(
            |o| ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"]
                .contains(&o["kind"].as_str().unwrap())
        ),
        "no role is granted"
    );
    // A disruption takes one worker at a time.
    let pdb = find(&all, "PodDisruptionBudget", "baton-worker");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        worker["spec"]["selector"]["matchLabels"]
    );
    // The git cache is a volume of its own.
    assert!(
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["mountPath"] == "/var/cache/baton")
    );

    // The ScaledJob runs one task per pod and never restarts one in place.
    let jobs = objects(&render("overlays/keda-scaledjob"));
    assert!(
        !jobs
            .iter()
            .any(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "baton-worker"),
        "the Jobs replace the Deployment"
    );
    let job = find(&jobs, "ScaledJob", "baton-worker");
    let spec = &job["spec"]["jobTargetRef"]["template"]["spec"];
    assert_eq!(spec["restartPolicy"], "Never");
    assert_eq!(spec["containers"][0]["args"][1], "--once");
    // Both scalers read the queue the same way, authenticated by the
    // workers' own database URL.
    let scaled = objects(&render("overlays/keda-scaledobject"));
    let so = find(&scaled, "ScaledObject", "baton-worker");
    assert_eq!(so["spec"]["scaleTargetRef"]["name"], "baton-worker");
    let (a, b) = (&so["spec"]["triggers"][0], &job["spec"]["triggers"][0]);
    for t in [a, b] {
        assert_eq!(t["type"], "postgresql");
        for k in ["query", "targetQueryValue", "activationTargetQueryValue"] {
            assert!(t["metadata"][k].is_string(), "{k}: {t}");
        }
        assert_eq!(t["authenticationRef"]["name"], "baton-database");
    }
    assert_eq!(a["metadata"]["query"], b["metadata"]["query"]);
    let auth = find(&scaled, "TriggerAuthentication", "baton-database");
    assert_eq!(
        auth["spec"]["secretTargetRef"][0]["parameter"],
        "connection"
    );
}

/// The query KEDA scales the workers on counts exactly the tasks a
/// worker could claim now, on a real PostgreSQL: queued tasks nobody
/// runs, and one whose worker died once its lease expired; not one a
/// live worker runs, nor those done, failed, waiting or not queued.
#[test]
fn kedas_queue_query_counts_exactly_what_a_worker_could_claim() {
    let yaml = render("overlays/keda-scaledobject");
    let query = find(&objects(&yaml), "ScaledObject", "baton-worker")["spec"]["triggers"][0]["metadata"]["query"]
        .as_str()
        .unwrap()
        .to_string();
    let cluster = PgCluster::start();
    let url = cluster.create_database();
    let mut p = TestProject::new();
    p.database_url = Some(url.clone());
    let cfg = p.root().join(".baton/config.toml");
    let text = fs_err::read_to_string(&cfg)
        .unwrap()
        .replace("ttl = \"30s\"", "ttl = \"2s\"");
    fs_err::write(&cfg, text).unwrap();
    let marks = p.root().join("marks");
    fs_err::create_dir_all(&marks).unwrap();
    // Its first run of a task sleeps long; a run after that passes.
    p.workflow(
        "slow",
        &format!(
            "name = \"slow\"\n[[phase]]\nid = \"a\"\nrun = \"if [ -f {m}/$BATON_TASK_ID ]; then echo again; else touch {m}/$BATON_TASK_ID; sleep 120; fi\"\n",
            m = marks.display()
        ),
    );
    p.workflow(
        "quick",
        "name = \"quick\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n",
    );
    p.workflow(
        "fails",
        "name = \"fails\"\n[[phase]]\nid = \"a\"\nrun = \"exit 3\"\nmax_attempts = 1\n",
    );
    p.workflow(
        "asks",
        "name = \"asks\"\n[[phase]]\nid = \"a\"\nwait = { human = \"Go?\", options = [\"yes\"] }\n",
    );
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "workflows"]);
    let count = || -> u64 {
        let out = Command::new(cluster_psql())
            .args([url.as_str(), "-tAc", query.as_str()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    let queue =
        |wf: &str, id: &str| assert_eq!(p.run(&["run", wf, "x", "--queue", "--id", id]).0, 0);
    // Done, failed and waiting: each run by a worker once.
    for (wf, id) in [("quick", "done"), ("fails", "failed"), ("asks", "waits")] {
        queue(wf, id);
        let (code, _, err) = p.run(&["worker", "--once"]);
        assert!(code <= 1, "{err}");
    }
    assert_eq!(p.state("waits")["status"], "WAITING");
    assert_eq!(
        p.run(&["run", "asks", "x", "--id", "local"]).0,
        4,
        "not queued"
    );
    assert_eq!(count(), 0);
    // One a live worker runs, one whose worker is killed.
    queue("slow", "held");
    let mut live = p
        .baton(&["worker"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the live worker's phase", || {
        marks.join("held").exists().then_some(())
    });
    queue("slow", "orphan");
    let mut doomed = p
        .baton(&["worker"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_for("the doomed worker's phase", || {
        marks.join("orphan").exists().then_some(())
    });
    queue("quick", "free");
    assert_eq!(count(), 1, "only the free one while both workers live");
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(doomed.id() as i32),
        nix::sys::signal::SIGKILL,
    );
    let _ = doomed.wait();
    // Its lease expires (2s): claimable again, and counted.
    wait_for("the orphan's lease to expire", || {
        (count() == 2).then_some(())
    });
    // And a worker claims exactly those two, then finds nothing.
    let mut claimed = Vec::new();
    loop {
        let before: Vec<String> = ["free", "orphan"]
            .iter()
            .filter(|id| p.state(id)["status"] == "COMPLETE")
            .map(|s| s.to_string())
            .collect();
        let (code, _, err) = p.run(&["worker", "--once"]);
        assert_eq!(code, 0, "{err}");
        if err.contains("no queued task") {
            break;
        }
        for id in ["free", "orphan"] {
            if p.state(id)["status"] == "COMPLETE" && !before.contains(&id.to_string()) {
                claimed.push(id);
            }
        }
        assert!(claimed.len() <= 2, "{claimed:?}");
    }
    claimed.sort();
    assert_eq!(claimed, ["free", "orphan"]);
    assert_eq!(count(), 0);
    let _ = live.kill();
    let _ = live.wait();
    drop(cluster);
}

fn cluster_psql() -> PathBuf {
    ["/usr/bin/psql"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .or_else(|| {
            std::fs::read_dir("/usr/lib/postgresql")
                .ok()?
                .flatten()
                .map(|d| d.path().join("bin/psql"))
                .find(|p| p.exists())
        })
        .expect("psql: install Debian's postgresql package; ./scripts/test does this")
}

use std::os::unix::process::CommandExt;

/// The image's init step, `deploy/docker/baton-clone`, run for real: it
/// clones the repository through its cache, again from a fresh clone
/// with the cache warm, and a worker runs a queued task in the clone.
#[test]
fn baton_clone_makes_a_project_a_worker_runs_in() {
    let p = TestProject::new();
    p.workflow(
        "quick",
        "name = \"quick\"\n[[phase]]\nid = \"a\"\nrun = \"echo hi > hi.txt\"\n",
    );
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "workflows"]);
    let remote = tempfile::tempdir().unwrap();
    let bare = remote.path().join("repo.git");
    let st = Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(p.root())
        .arg(&bare)
        .status()
        .unwrap();
    assert!(st.success());
    let pod = tempfile::tempdir().unwrap();
    let (work, cache) = (pod.path().join("work"), pod.path().join("cache"));
    fs_err::create_dir_all(&cache).unwrap();
    let clone = || {
        let out = Command::new(root().join("deploy/docker/baton-clone"))
            .env("BATON_REPOSITORY", &bare)
            .env("BATON_WORK", &work)
            .env("BATON_GIT_CACHE", &cache)
            .env("GIT_CONFIG_GLOBAL", pod.path().join("gitconfig"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(clone().contains("baton-clone:"));
    assert!(
        cache.join("mirror.git").is_dir(),
        "the cache holds the mirror"
    );
    fs_err::write(work.join("project/stray.txt"), "left by a dead pod").unwrap();
    clone();
    assert!(
        !work.join("project/stray.txt").exists(),
        "a fresh clone each time"
    );
    let project = work.join("project");
    let run = |args: &[&str]| {
        Command::new(baton_testkit::baton_bin())
            .args(args)
            .env("BATON_PROJECT", &project)
            .env("GIT_CONFIG_GLOBAL", pod.path().join("gitconfig"))
            .output()
            .unwrap()
    };
    assert!(
        run(&["run", "quick", "x", "--queue", "--id", "c1"])
            .status
            .success()
    );
    let out = run(&["worker", "--once"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: Value = serde_json::from_slice(&run(&["show", "c1", "--json"]).stdout).unwrap();
    assert_eq!(shown["status"], "COMPLETE");
    // Its work is on the remote's branch.
    let log = Command::new("git")
        .arg("--git-dir")
        .arg(&bare)
        .args(["log", "--format=%s", "baton/c1"])
        .output()
        .unwrap();
    assert!(
        log.status.success() && !log.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&log.stderr)
    );
}
