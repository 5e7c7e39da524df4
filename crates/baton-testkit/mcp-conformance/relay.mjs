#!/usr/bin/env node
// Streamable HTTP -> stdio relay for MCP servers.
//
//   node relay.mjs [--host 127.0.0.1] [--port 0] [--log wire.jsonl]
//                  [--idle-timeout SECONDS] -- COMMAND [ARG...]
//
// Serves http://HOST:PORT/mcp (Streamable HTTP, MCP 2025-03-26 .. 2025-11-25).
// Each MCP session (started by a POST carrying an `initialize` request) gets
// its own child process `COMMAND ARG...` speaking MCP over stdio. JSON-RPC
// messages are copied verbatim: a POST body becomes one stdin line (only CR/LF
// whitespace is removed; batches are split into one line per message), and
// each stdout line is sent unchanged as one SSE `data:` field or JSON body.
// A POST without a session id whose messages are not `initialize` (stateless
// use, e.g. MCP 2026-07-28 `server/discover`) gets a one-off child that is
// stopped once the POST is answered.
//
// Prints exactly `listening http://HOST:PORT/mcp` on stdout when ready.
// Child stderr goes to the relay's stderr. No dependencies; Node >= 20.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import http from 'node:http';

// ---------------------------------------------------------------- arguments
function usage(msg) {
  if (msg) process.stderr.write(`relay: ${msg}\n`);
  process.stderr.write(
    'usage: relay.mjs [--host H] [--port N] [--log FILE] [--idle-timeout S] -- COMMAND [ARG...]\n',
  );
  process.exit(2);
}

const argv = process.argv.slice(2);
const opts = { host: '127.0.0.1', port: 0, log: null, idleTimeout: 300 };
let command = null;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
  if (a === '--') { command = argv.slice(i + 1); break; }
  else if (a === '--host') opts.host = val();
  else if (a === '--port') opts.port = Number(val());
  else if (a === '--log') opts.log = val();
  else if (a === '--idle-timeout') opts.idleTimeout = Number(val());
  else if (a === '-h' || a === '--help') usage();
  else usage(`unknown argument ${a}`);
}
if (!command || command.length === 0) usage('missing -- COMMAND');
if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) usage('bad --port');
if (!(opts.idleTimeout >= 0)) usage('bad --idle-timeout');

// ---------------------------------------------------------------- logging
const logStream = opts.log ? createWriteStream(opts.log, { flags: 'a' }) : null;
function log(session, event, extra) {
  if (!logStream) return;
  logStream.write(JSON.stringify({ t: new Date().toISOString(), session, event, ...extra }) + '\n');
}
function logMessage(session, dir, raw) {
  if (!logStream) return;
  let msg;
  try { msg = JSON.parse(raw); } catch { msg = raw; }
  log(session, dir, { msg });
}
function warn(text) { process.stderr.write(`relay: ${text}\n`); }

// ---------------------------------------------------------------- helpers
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const idKey = (id) => JSON.stringify(id);
const isRequest = (m) => typeof m.method === 'string' && 'id' in m;
const isNotification = (m) => typeof m.method === 'string' && !('id' in m);
const isResponse = (m) => !('method' in m) && 'id' in m && ('result' in m || 'error' in m);

function jsonRpcError(res, httpStatus, code, message, headers = {}) {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(httpStatus, { 'content-type': 'application/json', ...headers });
  res.end(body);
}

function accepts(req, type) {
  const a = String(req.headers.accept || '');
  return a.includes(type) || a.includes('*/*');
}

// Loopback-only Host/Origin check (DNS rebinding protection for a local endpoint).
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
function hostnameOf(hostHeader) {
  const h = String(hostHeader || '');
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.split(':')[0];
}
function originAllowed(req) {
  if (!LOOPBACK.has(hostnameOf(req.headers.host).toLowerCase())) return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try { return LOOPBACK.has(new URL(origin).hostname.toLowerCase()); } catch { return false; }
}

// ---------------------------------------------------------------- SSE / JSON sinks
// A sink receives raw JSON-RPC lines for one HTTP response.
class SseSink {
  constructor(res, headers) {
    this.res = res;
    this.open = true;
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      ...headers,
    });
    res.flushHeaders();
    res.on('close', () => { this.open = false; });
  }
  send(line) {
    if (!this.open) return false;
    this.res.write(`event: message\ndata: ${line}\n\n`);
    return true;
  }
  end() { if (this.open) { this.open = false; this.res.end(); } }
}

class JsonSink {
  constructor(res, headers, batch) {
    this.res = res; this.headers = headers; this.batch = batch;
    this.lines = []; this.open = true;
    res.on('close', () => { this.open = false; });
  }
  send(line) { if (!this.open) return false; this.lines.push(line); return true; }
  end() {
    if (!this.open) return;
    this.open = false;
    const body = this.batch ? `[${this.lines.join(',')}]` : (this.lines[0] ?? '');
    this.res.writeHead(200, { 'content-type': 'application/json', ...this.headers });
    this.res.end(body);
  }
}

// ---------------------------------------------------------------- sessions
const sessions = new Map(); // session id -> Session
const allSessions = new Set(); // including stateless one-offs
let shuttingDown = false;

class Session {
  constructor(id, stateful) {
    this.id = id;
    this.stateful = stateful;
    this.pending = new Map(); // idKey -> { stream, progressToken }
    this.streams = []; // open POST streams, oldest first: { sink, waiting:Set }
    this.getSink = null; // standalone GET SSE stream
    this.queue = []; // server messages waiting for a GET stream
    this.closed = false;
    this.lastActivity = Date.now();
    this.buf = '';
    allSessions.add(this);
    this.child = spawn(command[0], command.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
    log(id, 'spawn', { pid: this.child.pid, command });
    this.child.stdin.on('error', (e) => log(id, 'stdin-error', { error: String(e) }));
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => this.onStdout(chunk));
    this.child.on('error', (e) => {
      warn(`session ${id}: cannot run ${command[0]}: ${e.message}`);
      this.onExit(null, null, e.message);
    });
    this.child.on('exit', (code, signal) => this.onExit(code, signal));
  }

  touch() { this.lastActivity = Date.now(); }

  write(rawLine) {
    this.touch();
    logMessage(this.id, 'c2s', rawLine);
    if (this.closed || !this.child.stdin.writable) return;
    this.child.stdin.write(rawLine + '\n');
  }

  onStdout(chunk) {
    this.touch();
    this.buf += chunk;
    let nl;
    while ((nl = this.buf.indexOf('\n')) >= 0) {
      let line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line.trim() === '') continue;
      this.route(line);
    }
  }

  route(line) {
    logMessage(this.id, 's2c', line);
    let msg;
    try { msg = JSON.parse(line); } catch {
      warn(`session ${this.id}: server wrote a non-JSON stdout line, dropped: ${line.slice(0, 200)}`);
      return;
    }
    if (!isObj(msg)) {
      warn(`session ${this.id}: server wrote a non-object JSON line, dropped`);
      return;
    }
    if (isResponse(msg)) {
      const p = this.pending.get(idKey(msg.id));
      if (p) {
        this.pending.delete(idKey(msg.id));
        p.stream.sink.send(line);
        p.stream.waiting.delete(idKey(msg.id));
        if (p.stream.waiting.size === 0) this.finishStream(p.stream);
        return;
      }
      log(this.id, 'unmatched-response', {});
      this.toGetStream(line);
      return;
    }
    // Server-originated request or notification: send it on the POST stream it
    // most likely belongs to (progress token match, else the newest open POST
    // stream), else on the GET stream, else queue it for the next GET stream.
    let target = null;
    const token = msg.params?.progressToken;
    if (msg.method === 'notifications/progress' && token !== undefined) {
      for (const p of this.pending.values()) {
        if (p.progressToken !== undefined && idKey(p.progressToken) === idKey(token)) { target = p.stream; break; }
      }
    }
    if (!target) {
      for (let i = this.streams.length - 1; i >= 0; i--) {
        const s = this.streams[i];
        if (s.sink instanceof SseSink && s.sink.open) { target = s; break; }
      }
    }
    if (target && target.sink.send(line)) return;
    this.toGetStream(line);
  }

  toGetStream(line) {
    if (this.getSink && this.getSink.send(line)) return;
    if (!this.stateful) { log(this.id, 'dropped', {}); return; }
    this.queue.push(line);
    if (this.queue.length > 1000) this.queue.shift();
  }

  finishStream(stream) {
    stream.sink.end();
    this.streams = this.streams.filter((s) => s !== stream);
    if (!this.stateful && this.streams.length === 0) this.close('stateless request answered');
  }

  // A POST with `msgs` (parsed) and `raws` (the stdin lines to write).
  handlePost(req, res, msgs, raws, batch) {
    this.touch();
    const headers = this.stateful ? { 'mcp-session-id': this.id } : {};
    const requests = msgs.filter(isRequest);
    if (requests.length === 0) {
      for (const r of raws) this.write(r);
      res.writeHead(202, headers);
      res.end();
      return;
    }
    const sink = accepts(req, 'text/event-stream')
      ? new SseSink(res, headers)
      : new JsonSink(res, headers, batch);
    const stream = { sink, waiting: new Set() };
    for (const m of requests) {
      stream.waiting.add(idKey(m.id));
      this.pending.set(idKey(m.id), { stream, progressToken: m.params?._meta?.progressToken });
    }
    this.streams.push(stream);
    res.on('close', () => {
      if (stream.waiting.size > 0) log(this.id, 'client-closed-post-stream', { waiting: [...stream.waiting] });
      this.streams = this.streams.filter((s) => s !== stream);
      if (!this.stateful && this.streams.length === 0) this.close('client went away');
    });
    for (const r of raws) this.write(r);
  }

  handleGet(req, res) {
    this.touch();
    if (this.getSink && this.getSink.open) {
      jsonRpcError(res, 409, -32000, 'Conflict: only one SSE stream is allowed per session');
      return;
    }
    const sink = new SseSink(res, { 'mcp-session-id': this.id });
    this.getSink = sink;
    res.on('close', () => { if (this.getSink === sink) this.getSink = null; this.touch(); });
    const queued = this.queue;
    this.queue = [];
    for (const line of queued) sink.send(line);
  }

  onExit(code, signal, error) {
    if (this.exited) return;
    this.exited = true;
    log(this.id, 'exit', { code, signal, error });
    if (!this.closed && !shuttingDown) {
      warn(`session ${this.id}: server exited (code ${code}, signal ${signal})`);
    }
    // Answer what is still pending so clients do not hang; these errors come
    // from the relay, not from the server.
    for (const [key, p] of this.pending) {
      p.stream.sink.send(JSON.stringify({
        jsonrpc: '2.0',
        id: JSON.parse(key),
        error: { code: -32000, message: `relay: MCP server process exited (code ${code}, signal ${signal}) before answering` },
      }));
    }
    this.pending.clear();
    for (const s of this.streams) s.sink.end();
    this.streams = [];
    if (this.getSink) this.getSink.end();
    this.getSink = null;
    this.closed = true;
    sessions.delete(this.id);
    allSessions.delete(this);
    maybeFinishShutdown();
  }

  // MCP stdio shutdown: close stdin, then SIGTERM, then SIGKILL.
  close(reason) {
    if (this.closed) return;
    this.closed = true;
    sessions.delete(this.id);
    log(this.id, 'close', { reason });
    if (this.exited) return;
    try { this.child.stdin.end(); } catch { /* ignore */ }
    const term = setTimeout(() => { if (!this.exited) this.child.kill('SIGTERM'); }, 2000);
    const kill = setTimeout(() => { if (!this.exited) this.child.kill('SIGKILL'); }, 5000);
    term.unref(); kill.unref();
  }
}

// ---------------------------------------------------------------- HTTP
function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > 16 * 1024 * 1024) { reject(new Error('body too large')); req.destroy(); return; }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handlePost(req, res) {
  let text;
  try { text = await readBody(req); } catch (e) { jsonRpcError(res, 413, -32600, String(e.message)); return; }
  let parsed;
  try { parsed = JSON.parse(text); } catch { jsonRpcError(res, 400, -32700, 'Parse error: body is not JSON'); return; }
  const batch = Array.isArray(parsed);
  const msgs = batch ? parsed : [parsed];
  if (msgs.length === 0 || !msgs.every((m) => isObj(m) && (isRequest(m) || isNotification(m) || isResponse(m)))) {
    jsonRpcError(res, 400, -32600, 'Invalid Request: body is not a JSON-RPC message (or batch of them)');
    return;
  }
  // Verbatim: a single message is written as received minus CR/LF (raw CR/LF
  // can only be insignificant whitespace in JSON); batch members are
  // re-serialized one per line, since stdio framing has no batches.
  const raws = batch ? msgs.map((m) => JSON.stringify(m)) : [text.replace(/[\r\n]+/g, ' ').trim()];

  const sid = req.headers['mcp-session-id'];
  let session;
  if (sid !== undefined) {
    session = sessions.get(String(sid));
    if (!session) { jsonRpcError(res, 404, -32001, 'Session not found'); return; }
  } else if (msgs.some((m) => isRequest(m) && m.method === 'initialize')) {
    session = new Session(randomUUID(), true);
    sessions.set(session.id, session);
  } else if (msgs.some(isRequest)) {
    session = new Session(`stateless-${randomUUID()}`, false);
  } else {
    jsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    return;
  }
  session.handlePost(req, res, msgs, raws, batch);
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://relay');
  if (url.pathname !== '/mcp') { jsonRpcError(res, 404, -32000, 'Not Found'); return; }
  if (!originAllowed(req)) { jsonRpcError(res, 403, -32000, 'Forbidden: Host/Origin is not loopback'); return; }
  log(null, 'http', { method: req.method, session: req.headers['mcp-session-id'] });
  if (req.method === 'POST') {
    handlePost(req, res).catch((e) => { warn(`POST failed: ${e.stack || e}`); if (!res.headersSent) jsonRpcError(res, 500, -32603, 'Internal error'); });
    return;
  }
  if (req.method === 'GET' || req.method === 'DELETE') {
    const sid = req.headers['mcp-session-id'];
    if (sid === undefined) {
      if (req.method === 'GET') { res.writeHead(405, { allow: 'POST' }); res.end(); } else jsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return;
    }
    const session = sessions.get(String(sid));
    if (!session) { jsonRpcError(res, 404, -32001, 'Session not found'); return; }
    if (req.method === 'DELETE') {
      session.close('DELETE');
      res.writeHead(200);
      res.end();
      return;
    }
    if (!accepts(req, 'text/event-stream')) { jsonRpcError(res, 406, -32000, 'Not Acceptable: GET needs Accept: text/event-stream'); return; }
    session.handleGet(req, res);
    return;
  }
  res.writeHead(405, { allow: 'GET, POST, DELETE' });
  res.end();
});

// Close sessions that have had no traffic and no open stream for a while
// (clients often disconnect without DELETE).
if (opts.idleTimeout > 0) {
  setInterval(() => {
    const now = Date.now();
    for (const s of sessions.values()) {
      const busy = s.pending.size > 0 || s.streams.length > 0 || (s.getSink && s.getSink.open);
      if (!busy && now - s.lastActivity > opts.idleTimeout * 1000) s.close('idle');
    }
  }, Math.min(opts.idleTimeout * 1000, 10000)).unref();
}

// ---------------------------------------------------------------- shutdown
function maybeFinishShutdown() {
  if (shuttingDown && allSessions.size === 0) {
    if (logStream) logStream.end(() => process.exit(0)); else process.exit(0);
  }
}
function shutdown(sig) {
  if (shuttingDown) return;
  shuttingDown = true;
  log(null, 'shutdown', { signal: sig });
  server.close();
  server.closeAllConnections?.();
  // stdin EOF first (the MCP stdio way to stop a server), then signals.
  for (const s of allSessions) s.close('relay shutdown');
  setTimeout(() => {
    for (const s of allSessions) if (!s.exited) s.child.kill('SIGTERM');
  }, 1000).unref();
  setTimeout(() => {
    for (const s of allSessions) if (!s.exited) s.child.kill('SIGKILL');
    process.exit(0);
  }, 3000);
  maybeFinishShutdown();
}
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGHUP', () => shutdown('SIGHUP'));
process.on('exit', () => {
  for (const s of allSessions) {
    if (!s.exited) { try { s.child.kill('SIGKILL'); } catch { /* ignore */ } }
  }
});

server.listen(opts.port, opts.host, () => {
  const { port } = server.address();
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  process.stdout.write(`listening http://${host}:${port}/mcp\n`);
});
server.on('error', (e) => { warn(`cannot listen: ${e.message}`); process.exit(1); });
