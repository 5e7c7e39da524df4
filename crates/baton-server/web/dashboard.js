"use strict";
let tasks = [];
let selected = null;
// What the selected task's running phase printed: its last lines, and
// where /output reads on from.
let output = { task: null, cursor: "", lines: [], running: null };
const OUTPUT_LINES = 200;



function renderTasks() {
  const q = document.getElementById("filter").value.trim().toLowerCase();
  const st = document.getElementById("status-filter").value;
  const body = document.getElementById("tasks");
  body.replaceChildren();
  const shown = tasks.filter((t) => (!st || t.status === st) &&
    (!q || [t.id, t.workflow, t.phase || "", t.description, t.status].join(" ").toLowerCase().includes(q)));
  for (const t of shown) {
    const row = el("tr", { "data-task": t.id, class: t.id === selected ? "selected" : "", onclick: () => select(t.id) },
      el("td", { class: "id" }, t.id, t.description ? el("div", { class: "desc" }, t.description) : null),
      el("td", { class: "status" }, badge(t.status)),
      el("td", { class: "phase" }, t.phase || "—"),
      el("td", { class: "hide-narrow" }, t.workflow),
      el("td", { title: t.created_at }, age(t.created_at)));
    body.append(row);
  }
  if (!shown.length) body.append(el("tr", {}, el("td", { colspan: "5", class: "empty" }, tasks.length ? "No task matches." : "No tasks yet.")));
}

function tokens(t) {
  if (!t) return "";
  const n = (t.input || 0) + (t.output || 0);
  return n ? n.toLocaleString() + " tokens" : "";
}

function renderDetail(doc) {
  document.getElementById("detail-empty").hidden = true;
  const body = document.getElementById("detail-body");
  body.hidden = false;
  const head = el("div", { class: "head" },
    el("span", { class: "title" }, doc.task_id), badge(doc.status));
  // A task waiting for a person's answer moves on with the answer (the
  // form below), not with a resume: the server would refuse it.
  const asks = doc.waiting && doc.waiting.question !== undefined;
  if (doc.resumable && !asks) head.append(el("button", { id: "resume", onclick: () => act("resume") }, "Resume"));
  if (!["COMPLETE", "CANCELLED"].includes(doc.status)) head.append(el("button", { id: "cancel", class: "secondary", onclick: () => act("cancel") }, "Cancel"));
  const notes = [];
  if (doc.waiting) notes.push(el("div", { class: "note" }, "Waits in " + doc.waiting.phase + " for " + doc.waiting.for));
  if (asks) notes.push(answerForm(doc.waiting));
  if (doc.failure) notes.push(el("div", { class: "note" }, doc.failure));
  for (const b of doc.blockers || []) notes.push(el("div", { class: "note" }, b));
  for (const k of doc.buffered_events || []) {
    notes.push(el("div", { class: "note buffered", "data-kept": k.delivery },
      "Kept for " + k.phase + ": " + k.event + " (delivery " + k.delivery + ", came " + age(k.received_at) + " ago, kept until " + new Date(k.expires_at).toLocaleString() + ")"));
  }
  const done = Object.fromEntries((doc.completed_phases || []).map((p) => [p.id, p]));
  const stages = doc.stage_results || {};
  const list = el("ol", { class: "timeline" });
  for (const p of doc.phases || []) {
    const c = done[p.id];
    const agents = [...new Set((p.agent_runs || []).map((r) => r.session && r.session.agent).filter(Boolean))];
    const meta = [
      p.attempt ? "attempt " + p.attempt : null,
      p.iteration ? "iteration " + (p.iteration + 1) : null,
      agents.length ? "agent " + agents.join(", ") : null,
      tokens(p.tokens),
      c && c.completed_at ? "done " + age(c.completed_at) + " ago" : null,
    ].filter(Boolean).join(" · ");
    const item = el("li", { class: p.status, "data-phase": p.id },
      el("div", { class: "phase-head" }, el("span", { class: "phase-name" }, p.id), badge(p.status)),
      meta ? el("div", { class: "meta" }, meta) : null);
    const stage = stages[p.id];
    if (stage) item.append(el("div", { class: "meta" }, stage.event + (stage.pr_number ? " · PR #" + stage.pr_number : "") + (stage.approved !== undefined ? (stage.approved ? " · approved" : " · not approved") : "")));
    if (c && c.summary) item.append(el("div", { class: "summary" }, c.summary));
    if (p.last_error) item.append(el("div", { class: "summary" }, p.last_error));
    if (p.status === "IN_PROGRESS" && output.task === doc.task_id && output.lines.length) item.append(outputBox());
    list.append(item);
  }
  body.replaceChildren(head, ...notes, list);
}


function outputBox() {
  const box = el("pre", { id: "output", class: "output" }, output.lines.map((l) => visible(l.text)).join("\n"));
  requestAnimationFrame(() => { box.scrollTop = box.scrollHeight; });
  return box;
}

// While the selected task runs, what its running phase prints, about once
// a second.
async function pollOutput() {
  const t = tasks.find((x) => x.id === selected);
  if (!selected || !t || t.status !== "RUNNING") return;
  if (output.task !== selected) output = { task: selected, cursor: "", lines: [], running: null };
  try {
    const r = await api("/api/v1/tasks/" + encodeURIComponent(selected) + "/output" + (output.cursor ? "?after=" + encodeURIComponent(output.cursor) : ""));
    if (output.task !== selected) return;
    output.cursor = r.cursor;
    if (r.running !== output.running) output.lines = [];
    output.running = r.running;
    output.lines = output.lines.concat(r.lines.filter((l) => l.phase === r.running)).slice(-OUTPUT_LINES);
    const box = document.getElementById("output");
    const item = document.querySelector('li[data-phase="' + CSS.escape(r.running || "") + '"]');
    if (box && output.lines.length) {
      box.textContent = output.lines.map((l) => visible(l.text)).join("\n");
      box.scrollTop = box.scrollHeight;
    } else if (item && output.lines.length) {
      item.append(outputBox());
    }
  } catch (e) { /* the next look tries again */ }
}

function answerForm(w) {
  const form = el("form", { id: "answer", class: "answer" }, el("div", { class: "question" }, w.question));
  const send = (answer) => answerWith(answer);
  if (w.options && w.options.length) {
    for (const o of w.options) form.append(el("button", { type: "button", "data-answer": o, onclick: () => send(o) }, o));
  } else {
    const input = el("input", { type: "text", name: "answer", "aria-label": "Your answer", placeholder: "Your answer" });
    form.append(input, el("button", { type: "submit" }, "Answer"));
    form.addEventListener("submit", (e) => { e.preventDefault(); send(input.value); });
  }
  return form;
}

async function answerWith(answer) {
  try { await api("/api/v1/tasks/" + encodeURIComponent(selected) + "/answer", "POST", { answer, by: "dashboard" }); }
  catch (e) { alert(e.message); }
  refresh();
}

async function act(what) {
  if (what === "cancel" && !confirm("Cancel task " + selected + "? Its running phase is stopped and the task ends CANCELLED.")) return;
  try { await api("/api/v1/tasks/" + encodeURIComponent(selected) + "/" + what, "POST"); }
  catch (e) { alert(e.message); }
  refresh();
}

async function select(id) {
  selected = id;
  renderTasks();
  try { renderDetail(await api("/api/v1/tasks/" + encodeURIComponent(id))); }
  catch (e) { document.getElementById("detail-body").replaceChildren(el("div", { class: "empty" }, e.message)); }
}

async function renderDeliveries() {
  const rows = await api("/api/v1/deliveries?limit=20");
  const body = document.querySelector("#deliveries tbody");
  body.replaceChildren();
  for (const d of rows) {
    body.append(el("tr", { "data-delivery": d.id },
      el("td", {}, d.event + (d.action ? "." + d.action : ""), el("div", { class: "desc" }, d.repository || "")),
      el("td", { class: "decision" }, badge(d.decision), el("div", { class: "desc why" }, d.why)),
      el("td", { class: "hide-narrow", title: d.received_at }, age(d.received_at) + " ago")));
  }
  if (!rows.length) body.append(el("tr", {}, el("td", { colspan: "3", class: "empty" }, "No deliveries yet.")));
}

async function refresh() {
  try {
    tasks = await api("/api/v1/tasks");
    renderTasks();
    await renderDeliveries();
    if (selected) renderDetail(await api("/api/v1/tasks/" + encodeURIComponent(selected)));
  } catch (e) {
    document.getElementById("live").textContent = e.message;
  }
}

function listen() {
  const live = document.getElementById("live");
  const src = new EventSource("/api/v1/stream" + (token ? "?access_token=" + encodeURIComponent(token) : ""));
  src.addEventListener("open", () => { live.className = "on"; live.textContent = "live"; });
  src.addEventListener("changed", refresh);
  src.addEventListener("error", () => { live.className = ""; live.textContent = "reconnecting…"; });
}

document.getElementById("filter").addEventListener("input", renderTasks);
document.getElementById("status-filter").addEventListener("change", renderTasks);
refresh();
listen();
setInterval(renderTasks, 15000);
setInterval(pollOutput, 1000);
