"use strict";
// The board: every task and agent instance of the project as a card in a
// column by state, the inbox beside it, a new task started from a
// workflow, and a card's page with its phases, its answers and actions,
// and the diff of its work (rendered by diff2html). Everything it shows
// is read from /api/v1; text from tasks and agents is only ever set as
// text, never as markup (the diff's markup is diff2html's, which escapes
// it).
// At most this many cards per column are drawn; the rest are counted.
const PER_COLUMN = 60;
const COLUMNS = [
  ["queued", "Queued"], ["running", "Running"], ["person", "Waiting on a person"],
  ["event", "Waiting on an event"], ["review", "In review"], ["failed", "Failed or crashed"], ["done", "Done"],
];
let state = { tasks: [], instances: [], inbox: [], links: [], latest: {} };
let open = null; // the card whose page is open: {kind, id}
const drafts = {}; // feedback being written, by review instance

const enc = encodeURIComponent;


function taskColumn(t, asks) {
  switch (t.status) {
    case "QUEUED": return "queued";
    case "RUNNING": return "running";
    case "WAITING": return asks.has(t.id + "/" + t.phase) ? "person" : "event";
    case "CRASHED": case "FAILED": return "failed";
    default: return "done";
  }
}

function instanceColumn(i) {
  switch (i.status) {
    case "started": case "working": return "running";
    case "review_requested": case "pr_created": return "review";
    case "failed": return "failed";
    default: return "done";
  }
}

function taskCard(t) {
  const live = t.status === "RUNNING" ? state.latest[t.id] || {} : {};
  const extra = [live.agent, live.tokens ? live.tokens.toLocaleString() + " tokens" : null].filter(Boolean).join(" · ");
  return el("button", { type: "button", class: "card", "data-task": t.id, onclick: () => openCard("task", t.id) },
    el("div", { class: "title" }, visible(t.description || t.id)),
    el("div", { class: "id" }, t.id),
    el("div", { class: "meta" }, badge(t.status), " ", [t.workflow, t.phase].filter(Boolean).join(" · "), " · ", age(t.created_at)),
    extra ? el("div", { class: "meta" }, visible(extra)) : null,
    live.line ? el("div", { class: "latest", title: visible(live.line) }, visible(live.line)) : null);
}

// A task that starts by itself once the tasks it needs are complete
// (each shown with how it stands), or a link that ended without starting
// (cancelled, or a task it needs was cancelled or is gone).
function linkCard(l) {
  const needs = l.needs.map((n) => {
    const s = (l.needs_status || {})[n];
    return n + (s === "COMPLETE" ? " ✓" : " (" + (s || "gone") + ")");
  }).join(", ");
  const stuck = l.needs.some((n) => ["FAILED", "CRASHED"].includes((l.needs_status || {})[n]));
  return el("div", { class: "card", "data-link": l.id },
    el("div", { class: "title" }, visible(l.description || l.id)),
    el("div", { class: "id" }, l.id),
    el("div", { class: "meta" }, badge(l.started ? "NOT STARTED" : "LINKED"), " ", l.workflow, " · after ", visible(needs)),
    l.started ? el("div", { class: "latest" }, visible(l.started.outcome)) : null,
    stuck && !l.started ? el("div", { class: "latest" }, "A task it needs stopped: resume it, or cancel this.") : null,
    l.started ? null : el("button", { type: "button", class: "secondary", "data-cancel-link": l.id,
      "aria-label": "Cancel linked task " + l.id, onclick: () => cancelLink(l.id) }, "Cancel"));
}

async function cancelLink(id) {
  if (!confirm("Cancel linked task " + id + "? It will not start.")) return;
  try { await api("/api/v1/links/" + enc(id) + "/cancel", "POST", { by: "board" }); }
  catch (e) { alert(e.message); }
  refresh();
}

function instanceCard(i) {
  const cfg = i.config || {};
  const what = cfg.instructions || (cfg.issue && cfg.issue.title) || cfg.review_prompt || i.id;
  // What its agent's turn now running printed last, and its tokens.
  const turn = (i.turns || [])[(i.turns || []).length - 1];
  const running = turn && state.tasks.some((t) => t.id === turn && t.status === "RUNNING");
  const live = running ? state.latest[turn] || {} : {};
  return el("button", { type: "button", class: "card", "data-instance": i.id, onclick: () => openCard("instance", i.id) },
    el("div", { class: "title" }, visible(what)),
    el("div", { class: "id" }, i.id + (cfg.type === "review" ? " · review" : "")),
    el("div", { class: "meta" }, badge(i.status), " ", [cfg.agent, (i.turns || []).length + " turn(s)",
      live.tokens ? live.tokens.toLocaleString() + " tokens" : null].filter(Boolean).join(" · "), " · ", age(i.started_at)),
    live.line ? el("div", { class: "latest", title: visible(live.line) }, visible(live.line)) : null);
}

function renderBoard() {
  const asks = new Set(state.inbox.map((i) => i.id));
  const cards = Object.fromEntries(COLUMNS.map(([k]) => [k, []]));
  for (const t of state.tasks) if (t.workflow !== "agent-turn") cards[taskColumn(t, asks)].push(() => taskCard(t));
  for (const i of state.instances) cards[instanceColumn(i)].push(() => instanceCard(i));
  for (const l of state.links) cards[l.started ? "done" : "queued"].push(() => linkCard(l));
  const board = document.getElementById("board");
  // The card that has the focus keeps it through the redraw.
  const focused = cardKey(document.activeElement);
  board.replaceChildren(...COLUMNS.map(([key, title]) => {
    const list = el("ol", {});
    for (const make of cards[key].slice(0, PER_COLUMN)) list.append(el("li", {}, make()));
    const more = cards[key].length - PER_COLUMN;
    return el("section", { class: "column", "data-column": key, "aria-label": title },
      el("h3", {}, el("span", {}, title), el("span", { class: "count" }, String(cards[key].length))),
      list,
      more > 0 ? el("div", { class: "more" }, more + " more (the Tasks view filters them all)") : null);
  }));
  if (focused) {
    const again = board.querySelector(focused);
    if (again) again.focus();
  }
}

// A selector that finds the card `e` is (or is in) again after a redraw.
function cardKey(e) {
  const card = e && e.closest && e.closest("#board .card");
  if (!card) return null;
  for (const k of ["task", "instance", "link"]) {
    if (card.dataset[k]) return ".card[data-" + k + '="' + CSS.escape(card.dataset[k]) + '"]';
  }
  return null;
}

// The keyboard, as on a Kanban board: n a new task, a a new agent, j/k
// (or the arrows) the next or previous card of a column, h/l the column
// before or after, i the inbox, ? these keys. Enter opens a card; Escape
// closes what is open. Keys typed into a field are the field's.
const CARDS = "li > .card";

function moveFocus(dx, dy) {
  const columns = [...document.querySelectorAll("#board .column")].filter((c) => c.querySelector(CARDS));
  if (!columns.length) return;
  const card = document.activeElement && document.activeElement.closest && document.activeElement.closest("#board .card");
  let col = card ? columns.indexOf(card.closest(".column")) : -1;
  let row = card ? [...columns[col].querySelectorAll(CARDS)].indexOf(card) : -1;
  if (col < 0) { col = 0; row = -1; dy = 1; dx = 0; }
  if (dx) { col = Math.min(columns.length - 1, Math.max(0, col + dx)); row = 0; }
  const cards = [...columns[col].querySelectorAll(CARDS)];
  row = dx ? 0 : Math.min(cards.length - 1, Math.max(0, row + dy));
  cards[row].focus();
  cards[row].scrollIntoView({ block: "nearest" });
}

function onKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
  if (document.querySelector("dialog[open]")) return;
  const t = e.target;
  if (t && (["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName) || t.isContentEditable)) return;
  const onCard = t && t.closest && t.closest("#board .card");
  const keys = {
    n: newTask, a: newAgent, "?": () => document.getElementById("keys").showModal(),
    j: () => moveFocus(0, 1), k: () => moveFocus(0, -1), h: () => moveFocus(-1, 0), l: () => moveFocus(1, 0),
    i: () => { const b = document.querySelector("#inbox button, #inbox input"); if (b) b.focus(); },
  };
  if (onCard) Object.assign(keys, { ArrowDown: keys.j, ArrowUp: keys.k, ArrowLeft: keys.h, ArrowRight: keys.l });
  const act = keys[e.key];
  if (!act) return;
  e.preventDefault();
  act();
}

function renderInbox() {
  const list = document.getElementById("inbox");
  list.replaceChildren();
  for (const item of state.inbox) {
    const choices = el("div", { class: "choices" });
    const options = item.options && item.options.length ? item.options
      : item.kind === "approval" ? ["approved", "denied"] : item.kind === "notify" ? ["acknowledged"] : [];
    for (const o of options) choices.append(el("button", { type: "button", "data-answer": o, onclick: () => answer(item.id, o) }, o));
    if (!options.length) {
      const input = el("input", { type: "text", "aria-label": "Answer to " + item.id, placeholder: "Your answer" });
      choices.append(input, el("button", { type: "button", onclick: () => answer(item.id, input.value) }, "Answer"));
    }
    list.append(el("li", { "data-item": item.id },
      el("div", { class: "text" }, visible(item.text)),
      el("div", { class: "meta" }, item.kind + " · " + (item.session || "") + (item.phase ? "/" + item.phase : "") + " · from " + visible(item.raised_by)),
      choices));
  }
  if (!state.inbox.length) list.append(el("li", { class: "empty" }, "Nothing waits for you."));
}

async function renderTeams() {
  const list = document.getElementById("teams");
  try {
    const teams = await api("/api/v1/teams");
    list.replaceChildren(...teams.map((t) => el("li", { "data-team": t.id },
      el("button", { type: "button", class: "card", onclick: () => openTeam(t.id) },
        el("div", { class: "title" }, visible(t.id)),
        el("div", { class: "meta" }, badge(t.status.toUpperCase()), " ", Object.keys(t.teammates || {}).length + " teammate(s) · " + (t.tasks || []).length + " task(s)")))));
    if (!teams.length) list.replaceChildren(el("li", { class: "empty" }, "No teams."));
  } catch (e) {
    list.replaceChildren(el("li", { class: "error" }, e.message));
  }
}

const when = (ms) => ms === null || ms === undefined ? "—" : age(new Date(ms).toISOString()) + " ago";

async function openTeam(id) {
  const dialog = document.getElementById("team");
  document.getElementById("team-title").textContent = "Team " + id;
  try {
    const t = await api("/api/v1/teams/" + enc(id));
    document.querySelector("#team-members tbody").replaceChildren(...t.members.map((m) => el("tr", { "data-member": m.name },
      el("td", {}, visible(m.name)), el("td", {}, m.role), el("td", {}, badge(m.liveness)),
      el("td", {}, when(m.last_seen)), el("td", {}, visible(m.current_task || "—")))));
    document.querySelector("#team-tasks tbody").replaceChildren(...(t.team.tasks || []).map((x) => el("tr", { "data-team-task": x.id },
      el("td", {}, visible(x.id + " " + x.title)), el("td", {}, badge(String(x.status).toUpperCase())), el("td", {}, visible(x.assigned_to || "—")))));
    document.getElementById("team-messages").replaceChildren(...t.messages.map((m) => el("li", {},
      el("div", { class: "where" }, visible(m.from) + " → " + visible(m.to) + " · " + m.type + " · " + when(m.ts_ms)),
      el("div", { class: "body" }, visible((m.subject ? m.subject + ": " : "") + m.body)))));
    if (!t.messages.length) document.getElementById("team-messages").replaceChildren(el("li", { class: "empty" }, "No messages."));
  } catch (e) {
    document.getElementById("team-messages").replaceChildren(el("li", { class: "error" }, e.message));
  }
  if (!dialog.open) dialog.showModal();
}

async function answer(id, choice) {
  try { await api("/api/v1/inbox/" + enc(id) + "/answer", "POST", { answer: choice, by: "board" }); }
  catch (e) { alert(e.message); }
  refresh();
}

// What running tasks said or did last, their agent and tokens, for
// their cards (one look for all of them).
async function pollLatest() {
  if (!state.tasks.some((t) => t.status === "RUNNING")) return;
  try {
    const rows = await api("/api/v1/activity");
    const latest = {};
    for (const r of rows) latest[r.id] = { line: r.line || (state.latest[r.id] || {}).line, agent: r.agent, tokens: r.tokens };
    state.latest = latest;
    renderBoard();
  } catch (e) { /* the next look tries again */ }
}

async function refresh() {
  try {
    // Outside a git repository there are no instances (the API says why).
    const [tasks, instances, inbox, links] = await Promise.all([api("/api/v1/tasks"), api("/api/v1/instances").catch(() => []),
      api("/api/v1/inbox"), api("/api/v1/links")]);
    state.tasks = tasks; state.instances = instances; state.inbox = inbox;
    // A link that started its task is that task's card now.
    state.links = links.filter((l) => !l.started || !["RUNNING", "QUEUED"].includes(l.started.outcome));
    renderBoard();
    renderInbox();
    renderTeams();
    if (open) await renderCard();
  } catch (e) {
    document.getElementById("live").textContent = e.message;
  }
}

function openCard(kind, id) {
  if (!open || open.kind !== kind || open.id !== id) {
    for (const f of ["cm-path", "cm-body", "cm-error"]) document.getElementById(f).value = "";
    document.getElementById("cm-line").value = "0";
    document.getElementById("cm-error").textContent = "";
  }
  open = { kind, id };
  const dialog = document.getElementById("card");
  document.getElementById("card-title").textContent = (kind === "task" ? "Task " : "Agent instance ") + id;
  if (!dialog.open) dialog.showModal();
  renderCard();
}

async function renderCard() {
  const { kind, id } = open;
  const actions = document.getElementById("card-actions");
  const body = document.getElementById("card-body");
  try {
    if (kind === "task") {
      const doc = await api("/api/v1/tasks/" + enc(id));
      open.ended = ["COMPLETE", "CANCELLED"].includes(doc.status);
      body.dataset.drawn = "";
      actions.replaceChildren(badge(doc.status));
      const asks = doc.waiting && doc.waiting.question !== undefined;
      if (doc.resumable && !asks) {
        actions.append(el("button", { type: "button", id: "card-resume", onclick: () => act(id, "resume") }, "Resume"));
        // Or go on with another agent CLI, which gets the handoff brief.
        const to = el("select", { id: "card-handoff-to", "aria-label": "Agent to hand the task to" });
        api("/api/v1/agents").then((agents) => to.replaceChildren(...agents.map((a) => el("option", { value: a.name }, a.name + (a.cli ? " (" + a.cli + ")" : ""))))).catch(() => {});
        actions.append(to, el("button", { type: "button", id: "card-handoff", onclick: () => handoff(id, to.value) }, "Hand off"));
      }
      if (!["COMPLETE", "CANCELLED"].includes(doc.status)) actions.append(el("button", { type: "button", class: "secondary", id: "card-cancel", onclick: () => act(id, "cancel") }, "Cancel"));
      const parts = [el("p", { class: "desc" }, visible(doc.description || ""))];
      if (asks) {
        const q = el("div", { class: "answer", id: "card-question" }, el("div", { class: "question" }, visible(doc.waiting.question)));
        for (const o of doc.waiting.options || []) q.append(el("button", { type: "button", "data-answer": o, onclick: () => answer(id + "/" + doc.waiting.phase, o) }, o));
        parts.push(q);
      }
      const list = el("ol", { class: "timeline" });
      for (const p of doc.phases || []) list.append(el("li", { class: p.status, "data-phase": p.id }, el("div", { class: "phase-head" }, el("span", { class: "phase-name" }, p.id), badge(p.status))));
      parts.push(list);
      // What its phases print, as they print it (kept across redraws),
      // and its session log: the agents' messages and tool calls.
      parts.push(el("h3", {}, "Output"), outputBox(id), el("h3", {}, "Session log"), logBox(id));
      body.replaceChildren(...parts);
    } else {
      const all = await api("/api/v1/instances");
      const i = all.find((x) => x.id === id);
      if (!i) throw new Error("no instance " + id);
      // Its turns, each a task of its own: how each stands, and what the
      // latest prints and its session log.
      const turns = (i.turns || []).map((t) => ({ id: t, status: ((state.tasks.find((x) => x.id === t)) || {}).status || "" }));
      const latest = turns.length ? turns[turns.length - 1].id : null;
      // Drawn again only when it changed, so what a person types or
      // selects there is left alone; the turns' statuses are redrawn
      // on their own, below.
      const key = JSON.stringify([id, i.status, turns.map((t) => t.id), i.state && i.state.pull_request]);
      if (body.dataset.drawn !== key) {
      body.dataset.drawn = key;
      actions.replaceChildren(badge(i.status));
      const live = !["pr_merged", "pr_closed", "finished", "terminated", "failed"].includes(i.status);
      const review = i.config && i.config.type === "review";
      const parts = [el("p", {}, visible((i.config && (i.config.instructions || i.config.review_prompt)) || "")),
        el("p", { class: "meta" }, "branch " + ((i.resources && i.resources.branch) || "—") + " · " + (i.turns || []).length + " turn(s)" +
          (i.state && i.state.pull_request ? " · pull request #" + i.state.pull_request.number : ""))];
      if (live && !review && i.status === "working") {
        actions.append(el("button", { type: "button", id: "card-review", onclick: () => instanceAct(id, "review", {}) }, "Request review"));
        actions.append(el("button", { type: "button", id: "card-push", onclick: () => instanceAct(id, "push", {}) }, "Push and open pull request"));
      }
      if (live && review) {
        // The page redraws as the store changes: what is typed is kept.
        const feedback = el("textarea", { id: "card-feedback", rows: "3", oninput: (e) => { drafts[id] = e.target.value; } });
        feedback.value = drafts[id] || "";
        parts.push(el("label", { for: "card-feedback" }, "Feedback for the coding agent"), feedback,
          el("div", { class: "card-actions" }, el("button", { type: "button", id: "card-merge-back", onclick: () => instanceAct(id, "merge-back", { feedback: drafts[id] || "" }).then(() => { delete drafts[id]; }) }, "Merge back with this feedback")));
      }
      if (live) actions.append(el("button", { type: "button", class: "secondary", id: "card-kill", onclick: () => {
        if (confirm("End agent " + id + "? Its worktree is kept if it holds work.")) instanceAct(id, "kill", {});
      } }, "End agent"));
      parts.push(el("h3", {}, "Turns"), el("ol", { class: "timeline", id: "card-turns" }));
      if (latest) parts.push(el("h3", {}, "Output of turn " + latest), outputBox(latest), el("h3", {}, "Session log of turn " + latest), logBox(latest));
      body.replaceChildren(...parts);
      } else if (latest) {
        logBox(latest, document.getElementById("card-log"));
      }
      const list = document.getElementById("card-turns");
      if (list) list.replaceChildren(...turns.map((t) => el("li", { "data-turn": t.id },
        el("div", { class: "phase-head" }, el("span", { class: "phase-name" }, t.id), badge(t.status)))));
    }
  } catch (e) {
    body.replaceChildren(el("p", { class: "error" }, e.message));
  }
  renderDiff(kind, id);
}

// The open task's output: its lines, and the event stream that brings
// them.
let follow = { id: null, source: null, lines: [] };
const OUTPUT_LINES = 300;

function outputBox(id) {
  if (follow.id !== id) {
    if (follow.source) follow.source.close();
    follow = { id, source: null, lines: [] };
    const src = new EventSource("/api/v1/tasks/" + enc(id) + "/output/stream" + (token ? "?access_token=" + enc(token) : ""));
    src.addEventListener("output", (e) => {
      const page = JSON.parse(e.data);
      follow.lines = follow.lines.concat(page.lines.map((l) => "[" + l.phase + "] " + l.text)).slice(-OUTPUT_LINES);
      const box = document.getElementById("card-output");
      if (box) { box.textContent = follow.lines.map(visible).join("\n"); box.scrollTop = box.scrollHeight; }
    });
    follow.source = src;
  }
  const box = el("pre", { id: "card-output", class: "output", role: "log", tabindex: "0", "aria-label": "Output of task " + id }, follow.lines.map(visible).join("\n") || "");
  return box;
}

// A task's session log as it stands now, in `box` (a new one by default).
function logBox(id, box) {
  box = box || el("pre", { id: "card-log", class: "log", role: "log", tabindex: "0", "aria-label": "Session log of task " + id }, "");
  api("/api/v1/tasks/" + enc(id) + "/log").then((l) => { box.textContent = visible(l.markdown); }).catch((e) => { box.textContent = e.message; });
  return box;
}

function stopFollowing() {
  if (follow.source) follow.source.close();
  follow = { id: null, source: null, lines: [] };
}

// Where the open card's API lives.
const cardPath = (kind, id) => "/api/v1/" + (kind === "task" ? "tasks/" : "instances/") + enc(id);

async function renderComments(kind, id) {
  const list = document.getElementById("card-comments");
  try {
    const all = await api(cardPath(kind, id) + "/comments");
    list.replaceChildren(...all.map((c) => el("li", { "data-comment": c.id },
      el("div", { class: "where" }, visible(c.path) + (c.line ? ":" + c.line : "") + " · " + visible(c.by)),
      el("div", { class: "body" }, visible(c.body)),
      el("div", { class: "state" }, c.delivered ? "reached the agent in " + visible(c.delivered.to)
        : open && open.ended ? "kept for the agent: the task has ended, and gets it if it runs a phase again (baton resume " + id + " --from PHASE)"
        : "waiting for the agent's next step"))));
    if (!all.length) list.replaceChildren(el("li", { class: "empty" }, "No comments yet."));
  } catch (e) {
    list.replaceChildren(el("li", { class: "error" }, e.message));
  }
}

// A click on a line of the diff: comment on that file and line.
function pickLine(e) {
  const row = e.target.closest("tr");
  const file = e.target.closest(".d2h-file-wrapper");
  if (!row || !file) return;
  const name = file.querySelector(".d2h-file-name");
  const num = row.querySelector(".line-num2");
  document.getElementById("cm-path").value = name ? name.textContent.trim() : "";
  document.getElementById("cm-line").value = num && num.textContent.trim() ? num.textContent.trim() : "0";
  document.getElementById("cm-body").focus();
}

async function sendComment(e) {
  e.preventDefault();
  const { kind, id } = open;
  const error = document.getElementById("cm-error");
  error.textContent = "";
  try {
    await api(cardPath(kind, id) + "/comments", "POST", {
      path: document.getElementById("cm-path").value,
      line: Number(document.getElementById("cm-line").value || 0),
      body: document.getElementById("cm-body").value,
      by: "board",
    });
    document.getElementById("cm-body").value = "";
  } catch (err) {
    error.textContent = err.message;
  }
  renderComments(kind, id);
}

async function renderDiff(kind, id) {
  renderComments(kind, id);
  const box = document.getElementById("card-diff");
  try {
    const d = await api(cardPath(kind, id) + "/diff");
    if (!d.patch) { box.replaceChildren(el("div", { class: "empty" }, d.base ? "No changes." : "Nothing to compare yet.")); return; }
    // diff2html escapes the diff's text in the markup it returns.
    box.innerHTML = Diff2Html.html(d.patch, { drawFileList: true, outputFormat: "line-by-line", matching: "none" });
    if (d.truncated) box.prepend(el("div", { class: "note" }, "The diff is cut at 2 MiB; the file list above is whole."));
  } catch (e) {
    box.replaceChildren(el("div", { class: "empty" }, e.message));
  }
}

async function handoff(id, to) {
  try { await api("/api/v1/tasks/" + enc(id) + "/handoff", "POST", { to }); }
  catch (e) { alert(e.message); }
  refresh();
}

async function act(id, what) {
  if (what === "cancel" && !confirm("Cancel task " + id + "? Its running phase is stopped and the task ends CANCELLED.")) return;
  try { await api("/api/v1/tasks/" + enc(id) + "/" + what, "POST"); }
  catch (e) { alert(e.message); }
  refresh();
}

async function instanceAct(id, what, body) {
  try {
    const r = await api("/api/v1/instances/" + enc(id) + "/" + what, "POST", body);
    if (what === "kill" && r.kept && r.kept.length) alert("Kept: " + r.kept.map((k) => k.instance + " (" + k.detail + ")").join("; "));
    if (what === "review" && r.id) { await refresh(); openCard("instance", r.id); return; }
  } catch (e) { alert(e.message); }
  refresh();
}

async function newAgent() {
  const select = document.getElementById("na-agent");
  document.getElementById("na-error").textContent = "";
  try {
    const agents = await api("/api/v1/agents");
    select.replaceChildren(...agents.map((a) => el("option", { value: a.name }, a.name + (a.cli ? " (" + a.cli + ")" : ""))));
    const def = agents.find((a) => a.default);
    if (def) select.value = def.name;
  } catch (e) {
    document.getElementById("na-error").textContent = e.message;
  }
  document.getElementById("new-agent").showModal();
}

async function startAgent(e) {
  e.preventDefault();
  const issue = document.getElementById("na-issue").value.trim();
  try {
    const r = await api("/api/v1/instances", "POST", {
      agent: document.getElementById("na-agent").value,
      instructions: document.getElementById("na-instructions").value,
      issue: issue ? Number(issue) : undefined,
      require_review: document.getElementById("na-review").checked,
    });
    document.getElementById("new-agent").close();
    document.getElementById("na-instructions").value = "";
    await refresh();
    openCard("instance", r.id);
  } catch (err) {
    document.getElementById("na-error").textContent = err.message;
  }
}

async function newTask() {
  const dialog = document.getElementById("new-task");
  const select = document.getElementById("nt-workflow");
  document.getElementById("nt-error").textContent = "";
  try {
    const workflows = (await api("/api/v1/workflows")).filter((w) => !w.error);
    select.replaceChildren(...workflows.map((w) => el("option", { value: w.name }, w.name)));
    const show = () => {
      const w = workflows.find((x) => x.name === select.value);
      document.getElementById("nt-workflow-about").textContent = w ? visible(w.description) + " — phases: " + w.phases.join(", ") : "";
      const flags = document.getElementById("nt-flags");
      flags.replaceChildren(el("legend", {}, "Flags"));
      for (const [name, value] of Object.entries((w && w.flags) || {})) {
        const id = "nt-flag-" + name;
        const input = typeof value === "boolean"
          ? el("input", { type: "checkbox", id, "data-flag": name })
          : el("input", { type: "text", id, "data-flag": name, value: String(value) });
        if (typeof value === "boolean" && value) input.checked = true;
        flags.append(el("label", { class: "check", for: id }, input, " " + name));
      }
      flags.hidden = !Object.keys((w && w.flags) || {}).length;
    };
    select.onchange = show;
    document.getElementById("nt-tasks").replaceChildren(...state.tasks.filter((t) => t.status !== "COMPLETE").slice(0, 200)
      .map((t) => el("option", { value: t.id }, visible(t.description || t.id))));
    show();
  } catch (e) {
    document.getElementById("nt-error").textContent = e.message;
  }
  dialog.showModal();
}

async function startTask(e) {
  e.preventDefault();
  const needs = document.getElementById("nt-needs").value.split(",").map((x) => x.trim()).filter(Boolean);
  const flags = [...document.querySelectorAll("#nt-flags [data-flag]")].map((i) =>
    i.dataset.flag + "=" + (i.type === "checkbox" ? String(i.checked) : i.value));
  try {
    const r = await api("/api/v1/tasks", "POST", {
      workflow: document.getElementById("nt-workflow").value,
      description: document.getElementById("nt-description").value,
      flags,
      queue: document.getElementById("nt-queue").checked,
      needs,
    });
    document.getElementById("new-task").close();
    document.getElementById("nt-description").value = "";
    document.getElementById("nt-needs").value = "";
    await refresh();
    if (r.status !== "LINKED") openCard("task", r.id);
  } catch (err) {
    document.getElementById("nt-error").textContent = err.message;
  }
}

function listen() {
  const live = document.getElementById("live");
  const src = new EventSource("/api/v1/stream" + (token ? "?access_token=" + enc(token) : ""));
  src.addEventListener("open", () => { live.className = "on"; live.textContent = "live"; });
  src.addEventListener("changed", refresh);
  src.addEventListener("error", () => { live.className = ""; live.textContent = "reconnecting…"; });
}

document.addEventListener("keydown", onKey);
document.getElementById("keys-open").addEventListener("click", () => document.getElementById("keys").showModal());
document.getElementById("keys-close").addEventListener("click", () => document.getElementById("keys").close());
document.getElementById("new-task-open").addEventListener("click", newTask);
document.getElementById("new-task-cancel").addEventListener("click", () => document.getElementById("new-task").close());
document.getElementById("new-task-form").addEventListener("submit", startTask);
document.getElementById("new-agent-open").addEventListener("click", newAgent);
document.getElementById("new-agent-cancel").addEventListener("click", () => document.getElementById("new-agent").close());
document.getElementById("new-agent-form").addEventListener("submit", startAgent);
document.getElementById("card-diff").addEventListener("click", pickLine);
document.getElementById("team-close").addEventListener("click", () => document.getElementById("team").close());
document.getElementById("comment-form").addEventListener("submit", sendComment);
document.getElementById("card-close").addEventListener("click", () => { open = null; stopFollowing(); document.getElementById("card").close(); });
document.getElementById("card").addEventListener("close", () => { open = null; stopFollowing(); });
refresh();
listen();
setInterval(pollLatest, 2000);
setInterval(refresh, 10000);
