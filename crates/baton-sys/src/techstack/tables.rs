//! The tables techstack detection matches names against: dependencies
//! that name a framework or test tool, per ecosystem, and well-known
//! container images.

/// What a recognised dependency says about the project.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Framework,
    Test,
    E2e,
}

use Kind::{E2e, Framework, Test};

pub(super) const RUST_DEPS: &[(&str, Kind, &str)] = &[
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

pub(super) const JS_DEPS: &[(&str, Kind, &str)] = &[
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
pub(super) const PYTHON_DEPS: &[(&str, Kind, &str)] = &[
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
pub(super) const GO_MODULES: &[(&str, Kind, &str)] = &[
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
pub(super) const JVM_MARKERS: &[(&str, Kind, &str)] = &[
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
pub(super) const WELL_KNOWN_IMAGES: &[(&str, &str)] = &[
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
