//! Detection on real-looking project folders.

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
