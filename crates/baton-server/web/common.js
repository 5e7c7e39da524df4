"use strict";
// What both pages (the task list and the board) share: the API token (from
// `#token=` once, then kept in this browser), building elements, calling
// the API, ages, and showing text from tasks and agents safely.
const params = new URLSearchParams(location.hash.slice(1));
if (params.get("token")) {
  localStorage.setItem("baton-token", params.get("token"));
  history.replaceState(null, "", location.pathname);
}
const token = localStorage.getItem("baton-token") || "";

const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
};
const badge = (text) => el("span", { class: "badge " + text }, text);

// State changes go as JSON: a page on another site cannot send that
// without a preflight, which this server never grants.
async function api(path, method = "GET", body) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  if (method !== "GET") headers["Content-Type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((answer.message || r.statusText) + (answer.hint ? " (" + answer.hint + ")" : ""));
  return answer;
}

function age(ts) {
  const s = Math.max(0, (Date.now() - Date.parse(ts)) / 1000);
  if (s < 60) return Math.floor(s) + "s";
  if (s < 3600) return Math.floor(s / 60) + "m";
  if (s < 86400) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
}

// Text from a task, a phase or an agent, its control characters shown as
// escapes (as the command line shows them), never obeyed.
function visible(s) {
  return String(s).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
    (c) => c.charCodeAt(0) < 0x100 ? "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0") : "\\u{" + c.charCodeAt(0).toString(16) + "}");
}
