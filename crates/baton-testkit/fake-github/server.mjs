#!/usr/bin/env node
// Fake of the GitHub REST API "pulls" endpoints and issues/get, for
// integration tests.
//
// Every request is checked against GitHub's official OpenAPI description
// (@octokit/openapi, generated/api.github.com.json) and every answer is built
// from GitHub's own data: the pull request body is the spec's documented
// example for `pulls/create` (rewritten to match the request), an issue is
// the spec's example for `issues/get` (with its number), the response
// headers are the ones recorded from api.github.com in @octokit/fixtures.
// Our own answers are validated against the spec too; any mismatch is logged.
//
// Usage: node server.mjs [--port N] [--log FILE] [--fail-create N] [--issue N]...
// Issues exist only where --issue names them (any repository); reading one
// needs no token, as with a public repository.
// Modules are looked up in $FAKE_GITHUB_MODULES, else ./node_modules.
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

// ---------------------------------------------------------------- options
const opts = { port: 0, log: null, failCreate: 0, issues: new Set() };
for (let i = 2; i < process.argv.length; i++) {
  const flag = process.argv[i];
  const value = process.argv[++i];
  if (value === undefined) fail(`${flag} needs a value`);
  if (flag === "--port") opts.port = Number(value);
  else if (flag === "--log") opts.log = value;
  else if (flag === "--fail-create") opts.failCreate = Number(value);
  else if (flag === "--issue" && /^\d+$/.test(value)) opts.issues.add(Number(value));
  else fail(`unknown flag ${flag}`);
}
if (!Number.isInteger(opts.port) || !Number.isInteger(opts.failCreate)) fail("--port and --fail-create take integers");
function fail(msg) {
  console.error(`fake-github: ${msg}\nusage: node server.mjs [--port N] [--log FILE] [--fail-create N] [--issue N]...`);
  process.exit(2);
}

// ---------------------------------------------------------------- GitHub data
const here = path.dirname(fileURLToPath(import.meta.url));
const MODULES = path.resolve(process.env.FAKE_GITHUB_MODULES || path.join(here, "node_modules"));
if (!fs.existsSync(path.join(MODULES, "@octokit/openapi"))) fail(`no @octokit/openapi in ${MODULES}: run npm ci (see README.md)`);
const require = createRequire(path.join(MODULES, "noop.js"));
const readJson = (rel) => JSON.parse(fs.readFileSync(path.join(MODULES, rel), "utf8"));
const Ajv = require(path.join(MODULES, "ajv")).default;
const addFormats = require(path.join(MODULES, "ajv-formats")).default;

const spec = readJson("@octokit/openapi/generated/api.github.com.json"); // OpenAPI 3.0.3
const BASE_VERSION = "2022-11-28"; // the version the spec describes; later ones are patches on it
// API versions: the base one plus every version named in an x-github-breaking-changes entry.
const VERSIONS = new Set([BASE_VERSION]);
for (const s of Object.values(spec.components.schemas))
  for (const change of s["x-github-breaking-changes"] ?? []) VERSIONS.add(change.version);

// Response headers recorded from api.github.com (a POST answered 201).
const recorded = readJson("@octokit/fixtures/scenarios/api.github.com/labels/normalized-fixture.json")
  .find((r) => r.method === "post" && r.status === 201).headers;
const { connection, date, etag, location, "content-length": _len, ...RECORDED_HEADERS } = recorded;

// JSON Schema validation with ajv. OpenAPI 3.0 quirks: `nullable` is built into
// ajv; `example`, `x-*` etc. are ignored with strict:false. The spec's
// components are registered as "gh.json" so any sub-schema compiles on its own.
const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
ajv.addFormat("repo.nwo", /^[\w.-]+\/[\w.-]+$/); // GitHub's own format for "owner/repo"
// The spec writes `nullable` beside allOf/anyOf without a `type` (the issue
// schema's milestone, for one), which ajv refuses: there it becomes an
// explicit "or null".
function nullables(node) {
  if (Array.isArray(node)) return node.map(nullables);
  if (node === null || typeof node !== "object") return node;
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, nullables(v)]));
  if (out.nullable === true && out.type === undefined) {
    delete out.nullable;
    return { anyOf: [out, { type: "null" }] };
  }
  return out;
}
ajv.addSchema({ $id: "gh.json", components: nullables(spec.components) });
const compile = (schema) => ajv.compile(nullables(JSON.parse(JSON.stringify(schema).replaceAll('"$ref":"#/', '"$ref":"gh.json#/'))));
const deref = (o) => (o?.$ref ? o.$ref.slice(2).split("/").reduce((a, k) => a[k], spec) : o);

// A PR schema as served in one API version: drop the properties that the
// version's breaking changes remove (e.g. merge_commit_sha in 2026-03-10).
function shapeFor(name, version) {
  const schema = structuredClone(spec.components.schemas[name]);
  const drop = [];
  for (const change of schema["x-github-breaking-changes"] ?? [])
    if (change.version <= version)
      for (const [key, val] of Object.entries(change.patch?.properties ?? {}))
        if (val === null) drop.push(key), delete schema.properties[key];
  schema.required = schema.required.filter((k) => !drop.includes(k));
  return { schema, drop, check: compile(schema) };
}
const SHAPES = Object.fromEntries([...VERSIONS].map((v) => [v, { full: shapeFor("pull-request", v), simple: shapeFor("pull-request-simple", v) }]));
SHAPES.listCheck = Object.fromEntries([...VERSIONS].map((v) => [v, compile({ type: "array", items: SHAPES[v].simple.schema })]));

// The three operations we serve, with their parameter/body/response validators.
const OWNER_REPO = "([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)";
const OPS = [
  { method: "POST", re: new RegExp(`^/repos/${OWNER_REPO}/pulls$`), path: "/repos/{owner}/{repo}/pulls", handler: createPull },
  { method: "GET", re: new RegExp(`^/repos/${OWNER_REPO}/pulls$`), path: "/repos/{owner}/{repo}/pulls", handler: listPulls },
  { method: "GET", re: new RegExp(`^/repos/${OWNER_REPO}/pulls/([^/]+)$`), path: "/repos/{owner}/{repo}/pulls/{pull_number}", handler: getPull },
  { method: "GET", re: new RegExp(`^/repos/${OWNER_REPO}/issues/([^/]+)$`), path: "/repos/{owner}/{repo}/issues/{issue_number}", handler: getIssue, anonymous: true },
];
for (const op of OPS) {
  const o = spec.paths[op.path][op.method.toLowerCase()];
  op.docs = o.externalDocs.url;
  op.params = o.parameters.map(deref).map((p) => ({ ...p, check: compile(p.schema) }));
  const body = o.requestBody?.content?.["application/json"]?.schema;
  op.body = body && { schema: body, check: compile(body) };
  op.responses = {};
  for (const [status, r] of Object.entries(o.responses)) {
    const schema = deref(r).content?.["application/json"]?.schema;
    if (schema) op.responses[status] = compile(schema);
  }
}
// Template for every PR: the spec's documented 201 answer of pulls/create.
const createOp = spec.paths["/repos/{owner}/{repo}/pulls"].post;
const TEMPLATE = deref(createOp.responses["201"].content["application/json"].examples.default).value;
// Template for every issue: the spec's documented 200 answer of issues/get.
const issueOp = spec.paths["/repos/{owner}/{repo}/issues/{issue_number}"].get;
const ISSUE = deref(deref(issueOp.responses["200"].content["application/json"].examples.default).value).value;

// ---------------------------------------------------------------- state
const repos = new Map(); // "owner/repo" (lower case) -> { next, pulls: [] }
let nextId = 1;
let failCreateLeft = opts.failCreate;
const repoState = (owner, repo) => {
  const key = `${owner}/${repo}`.toLowerCase();
  if (!repos.has(key)) repos.set(key, { next: 1, pulls: [] });
  return repos.get(key);
};

// Rewrite the template's octocat/Hello-World to the given owner/repo.
function rebrand(obj, owner, repo, swaps = []) {
  let s = JSON.stringify(obj)
    .replaceAll("octocat/Hello-World", `${owner}/${repo}`)
    .replace(/\/octocat(?=[/"{])/g, `/${owner}`) // user URLs
    .replaceAll('"login":"octocat"', `"login":"${owner}"`)
    .replaceAll('"name":"Hello-World"', `"name":"${repo}"`);
  for (const [from, to] of swaps) s = s.replace(from, to);
  return JSON.parse(s);
}
const fakeSha = (s) => crypto.createHash("sha1").update(s).digest("hex");

function makePull(owner, repo, number, b, headOwner, headRepo, branch) {
  const headSha = fakeSha(`${headOwner}/${headRepo}:${branch}`);
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const id = nextId++;
  const pr = rebrand(TEMPLATE, owner, repo, [
    [/\/(pulls?|issues)\/1347(?=[/".])/g, `/$1/${number}`],
    [new RegExp(TEMPLATE.head.sha, "g"), headSha],
  ]);
  Object.assign(pr, {
    id, node_id: `PR_fake${Buffer.from(String(id)).toString("base64url")}`, number,
    state: "open", locked: false, active_lock_reason: null,
    title: b.title ?? `Issue #${b.issue}`, body: b.body ?? null, draft: b.draft ?? false,
    user: rebrand(TEMPLATE.user, headOwner, headRepo),
    labels: [], milestone: null, assignee: null, assignees: [], requested_reviewers: [], requested_teams: [],
    created_at: now, updated_at: now, closed_at: null, merged_at: null, merge_commit_sha: null,
    merged: false, mergeable: null, rebaseable: null, mergeable_state: "unknown", merged_by: null,
    comments: 0, review_comments: 0, maintainer_can_modify: b.maintainer_can_modify ?? false,
    author_association: headOwner.toLowerCase() === owner.toLowerCase() ? "OWNER" : "CONTRIBUTOR",
    head: { ...rebrand(TEMPLATE.head, headOwner, headRepo), label: `${headOwner}:${branch}`, ref: branch, sha: headSha },
    base: { ...rebrand(TEMPLATE.base, owner, repo), label: `${owner}:${b.base}`, ref: b.base, sha: fakeSha(`${owner}/${repo}:${b.base}`) },
  });
  pr.head.repo.fork = `${headOwner}/${headRepo}`.toLowerCase() !== `${owner}/${repo}`.toLowerCase();
  return pr;
}
// A stored PR as served in the request's API version ("simple" = list items).
function present(pr, version, simple = false) {
  const shape = SHAPES[version][simple ? "simple" : "full"];
  const keys = Object.keys(shape.schema.properties);
  return Object.fromEntries(Object.entries(pr).filter(([k]) => keys.includes(k) || (!simple && !shape.drop.includes(k))));
}

// ---------------------------------------------------------------- handlers
const DOCS = "https://docs.github.com/rest";
const validationFailed = (ctx, errors) =>
  send(ctx, 422, { message: "Validation Failed", errors, documentation_url: ctx.op.docs, status: "422" });

function createPull(ctx, [owner, repo]) {
  const b = ctx.body;
  if (b.title === undefined && b.issue === undefined) {
    ctx.problems.push("body: title is required unless issue is given");
    return validationFailed(ctx, [{ resource: "PullRequest", field: "title", code: "missing_field" }]);
  }
  if (failCreateLeft > 0) {
    failCreateLeft--;
    return send(ctx, 502, { message: "Server Error" });
  }
  const colon = b.head.indexOf(":");
  const headOwner = colon >= 0 ? b.head.slice(0, colon) : owner;
  const branch = colon >= 0 ? b.head.slice(colon + 1) : b.head;
  const [hrOwner, hrName] = b.head_repo ? b.head_repo.split("/") : [headOwner, repo];
  const state = repoState(owner, repo);
  const label = `${headOwner}:${branch}`.toLowerCase();
  if (state.pulls.some((p) => p.state === "open" && p.head.label.toLowerCase() === label && p.base.ref === b.base)) {
    const message = `A pull request already exists for ${headOwner}:${branch}.`;
    ctx.problems.push(`duplicate: ${message}`);
    return validationFailed(ctx, [{ resource: "PullRequest", code: "custom", message }]);
  }
  const pr = makePull(owner, repo, state.next++, b, hrOwner, hrName, branch);
  state.pulls.push(pr);
  send(ctx, 201, present(pr, ctx.version), { location: pr.url }, SHAPES[ctx.version].full.check);
}

function listPulls(ctx, [owner, repo]) {
  const q = ctx.query;
  let pulls = repoState(owner, repo).pulls.filter((p) => (q.state ?? "open") === "all" || p.state === (q.state ?? "open"));
  if (q.head !== undefined) {
    if (!q.head.includes(":")) ctx.problems.push("warning: query head should be OWNER:BRANCH (GitHub filters on user:ref-name)");
    pulls = pulls.filter((p) => (q.head.includes(":") ? p.head.label.toLowerCase() === q.head.toLowerCase() : p.head.ref === q.head));
  }
  if (q.base !== undefined) pulls = pulls.filter((p) => p.base.ref === q.base);
  if ((q.direction ?? (q.sort && q.sort !== "created" ? "asc" : "desc")) === "desc") pulls = [...pulls].reverse();
  const perPage = q.per_page ?? 30, page = q.page ?? 1;
  pulls = pulls.slice((page - 1) * perPage, page * perPage);
  send(ctx, 200, pulls.map((p) => present(p, ctx.version, true)), {}, SHAPES.listCheck[ctx.version]);
}

function getPull(ctx, [owner, repo, number]) {
  const pr = repoState(owner, repo).pulls.find((p) => p.number === number);
  if (!pr) return send(ctx, 404, { message: "Not Found", documentation_url: ctx.op.docs, status: "404" });
  send(ctx, 200, present(pr, ctx.version), {}, SHAPES[ctx.version].full.check);
}

function getIssue(ctx, [owner, repo, number]) {
  if (!opts.issues.has(number)) return send(ctx, 404, { message: "Not Found", documentation_url: ctx.op.docs, status: "404" });
  const issue = rebrand(ISSUE, owner, repo, [[/\/issues\/1347(?=[/"])/g, `/issues/${number}`]]);
  issue.number = number;
  send(ctx, 200, issue);
}

// ---------------------------------------------------------------- request checks
// JSON Schema sees strings in path/query; convert per the parameter's type.
function coerce(value, schema) {
  if ((schema.type === "integer" || schema.type === "number") && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  if (schema.type === "boolean" && (value === "true" || value === "false")) return value === "true";
  return value;
}
const ajvProblems = (where, errors) =>
  errors.map((e) => `${where}${e.instancePath} ${e.message}${e.params?.allowedValues ? ` (${e.params.allowedValues.join(", ")})` : ""}`);
const ACCEPT_OK = /^(\*\/\*|application\/\*|application\/json|application\/vnd\.github(\.v3)?(\.(raw|text|html|full|diff|patch))?(\+json)?)$/;

// Returns the GitHub validation errors; fills ctx.problems, ctx.query, ctx.params.
function validateRequest(ctx, match) {
  const errors = [];
  const fieldError = (where, field, e) =>
    errors.push({ resource: "PullRequest", field, code: e.keyword === "required" ? "missing_field" : "invalid", message: `${where} ${e.message}` });
  const pathValues = match.slice(1);
  ctx.params = [];
  for (const p of ctx.op.params) {
    if (p.in === "path") {
      const value = coerce(decodeURIComponent(pathValues.shift()), p.schema);
      ctx.params.push(value);
      if (!p.check(value)) p.check.errors.forEach((e) => fieldError(`path ${p.name}`, p.name, e));
      ctx.problems.push(...ajvProblems(`path ${p.name}`, p.check.errors ?? []));
    } else if (p.in === "query" && ctx.url.searchParams.has(p.name)) {
      const value = coerce(ctx.url.searchParams.get(p.name), p.schema);
      ctx.query[p.name] = value;
      if (!p.check(value)) p.check.errors.forEach((e) => fieldError(`query ${p.name}`, p.name, e));
      ctx.problems.push(...ajvProblems(`query ${p.name}`, p.check.errors ?? []));
    }
  }
  for (const name of ctx.url.searchParams.keys())
    if (!ctx.op.params.some((p) => p.in === "query" && p.name === name)) ctx.problems.push(`warning: unknown query parameter ${name} (GitHub ignores it)`);
  if (ctx.op.body) {
    if (!ctx.op.body.check(ctx.body)) {
      ctx.problems.push(...ajvProblems("body", ctx.op.body.check.errors));
      for (const e of ctx.op.body.check.errors) fieldError(`body${e.instancePath}`, e.params.missingProperty ?? e.instancePath.slice(1), e);
    }
    for (const key of Object.keys(ctx.body ?? {}))
      if (!(key in ctx.op.body.schema.properties)) ctx.problems.push(`warning: unknown body field ${key} (GitHub ignores it)`);
  }
  return errors;
}

async function handle(req, res) {
  const url = new URL(req.url, "http://127.0.0.1");
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const raw = Buffer.concat(chunks).toString("utf8");
  const ctx = { req, res, url, problems: [], query: {}, version: BASE_VERSION, body: null, op: null };
  ctx.entry = { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body: null };
  let bodyError = null;
  if (raw.length > 0) {
    try { ctx.body = ctx.entry.body = JSON.parse(raw); } catch (e) { bodyError = `body is not valid JSON: ${e.message}`; }
  }
  const h = req.headers;
  // Routing: GitHub answers 404 for unknown paths and unsupported methods alike.
  let match = null;
  ctx.op = OPS.find((op) => op.method === req.method && (match = url.pathname.match(op.re)));
  if (!ctx.op) {
    ctx.problems.push(`no such endpoint: ${req.method} ${url.pathname}`);
    return send(ctx, 404, { message: "Not Found", documentation_url: DOCS, status: "404" });
  }
  // Headers, in the order GitHub checks them.
  if (!h["user-agent"]) {
    ctx.problems.push("header User-Agent missing (GitHub rejects such requests with 403)");
    return send(ctx, 403, "Request forbidden by administrative rules. Please make sure your request has a User-Agent header (https://docs.github.com/en/rest/overview/resources-in-the-rest-api#user-agent-required). Check https://developer.github.com for other possible causes.\n");
  }
  const version = h["x-github-api-version"];
  if (version === undefined) ctx.problems.push(`warning: header X-GitHub-Api-Version missing (GitHub assumes ${BASE_VERSION})`);
  else if (!VERSIONS.has(version)) {
    ctx.problems.push(`header X-GitHub-Api-Version ${version} is not one of ${[...VERSIONS].join(", ")}`);
    return send(ctx, 400, { message: `API version ${version} is not supported.`, documentation_url: "https://docs.github.com/rest/overview/api-versions", status: "400" });
  } else ctx.version = version;
  const anonymousOk = ctx.op.anonymous && !h.authorization;
  if (!anonymousOk && (!h.authorization || !/^(bearer|token) \S+$/i.test(h.authorization))) {
    ctx.problems.push(h.authorization ? "header Authorization is not 'Bearer TOKEN' or 'token TOKEN'" : "header Authorization missing");
    return send(ctx, 401, { message: h.authorization ? "Bad credentials" : "Requires authentication", documentation_url: DOCS, status: "401" });
  }
  const accepts = (h.accept ?? "").split(",").map((a) => a.split(";")[0].trim());
  if (!h.accept) ctx.problems.push("warning: header Accept missing (GitHub recommends application/vnd.github+json)");
  else if (!accepts.some((a) => ACCEPT_OK.test(a))) ctx.problems.push(`warning: header Accept '${h.accept}' is not application/vnd.github+json or compatible`);
  if (ctx.op.body) {
    if (bodyError) {
      ctx.problems.push(bodyError);
      return send(ctx, 400, { message: "Problems parsing JSON", documentation_url: ctx.op.docs, status: "400" });
    }
    if (!/^application\/json\b/.test(h["content-type"] ?? "")) ctx.problems.push(`warning: header Content-Type '${h["content-type"] ?? ""}' is not application/json`);
  }
  const errors = validateRequest(ctx, match);
  if (errors.length) return validationFailed(ctx, errors);
  ctx.op.handler(ctx, ctx.params);
}

// Answer, after checking the answer against the spec and logging the exchange.
function send(ctx, status, body, headers = {}, check = ctx.op?.responses[status]) {
  const text = typeof body === "string" ? body : JSON.stringify(body, null, 2);
  if (check && typeof body !== "string" && !check(body)) ctx.problems.push(...ajvProblems(`response ${status}`, check.errors));
  if (opts.log) fs.appendFileSync(opts.log, JSON.stringify({ ...ctx.entry, status, problems: ctx.problems }) + "\n");
  ctx.res.writeHead(status, {
    ...RECORDED_HEADERS,
    "x-github-api-version-selected": ctx.version,
    "x-github-request-id": crypto.randomUUID().toUpperCase(),
    ...headers,
    "content-type": typeof body === "string" ? "text/plain; charset=utf-8" : "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  ctx.res.end(text);
}

// ---------------------------------------------------------------- start
const server = http.createServer((req, res) =>
  handle(req, res).catch((e) => {
    console.error(e);
    if (!res.headersSent) send({ res, entry: { method: req.method, path: req.url }, problems: [`fake-github crashed: ${e.message}`], version: BASE_VERSION }, 500, { message: "Server Error" });
  }),
);
server.listen(opts.port, "127.0.0.1", () => console.log(`listening http://127.0.0.1:${server.address().port}`));
