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

mod tables;
use tables::*;

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
mod tests;
