// The review page: lists sessions, shows one, posts accept/reject to /v1/feedback.
// Every value from the server is put in the page as text (textContent), never as HTML.
"use strict";

const KEY = "shadowrl-api-key";
const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

async function api(path, init = {}) {
  const headers = { ...(init.headers || {}) };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = `Bearer ${key}`;
  const resp = await fetch(path, { ...init, headers });
  if (resp.status === 401) {
    askForKey(key ? "that key was refused" : "this server needs an API key");
    throw new Error("unauthorized");
  }
  const body = await resp.json();
  if (!resp.ok) throw new Error(body.error ? body.error.message : resp.statusText);
  return body;
}

function askForKey(why) {
  $("key-form").hidden = false;
  showError(why);
}

function showError(text) {
  $("error").hidden = !text;
  $("error").textContent = text || "";
}

async function showList() {
  const { data } = await api("/ui/api/sessions");
  const tbody = $("sessions");
  tbody.replaceChildren();
  for (const s of data) {
    const row = el("tr");
    row.dataset.session = s.id;
    const cells = [s.id, s.kind, s.status, s.signals.join(", ") || "—", s.checkpoint || "—",
      s.requests, s.generated_tokens, s.updated_at];
    for (const c of cells) row.append(el("td", c));
    row.addEventListener("click", () => { location.href = `/ui/sessions/${encodeURIComponent(s.id)}`; });
    tbody.append(row);
  }
  $("empty").hidden = data.length > 0;
  $("list").hidden = false;
}

function block(cls, label, text) {
  const div = el("div", undefined, cls);
  div.append(el("div", label, "meta"), el("pre", text));
  return div;
}

function showTurn(r) {
  const turn = el("div", undefined, "turn");
  turn.dataset.request = r.id;
  const exact = r.token_exact ? "token-exact" : "re-rendered (token_exact=false)";
  turn.append(el("div", `${r.endpoint} · ${r.response_id} · ${r.created_at} · ${exact} · ` +
    `${r.prompt_tokens} prompt + ${r.generated_tokens} generated tokens · ${r.finish_reason}`, "meta"));
  turn.append(block("prompt", r.continues ? "prompt (new tokens)" : "prompt", r.prompt));
  turn.append(block("reply", "reply", r.reply));
  for (const call of r.tool_calls) turn.append(block("call", "tool call", JSON.stringify(call, null, 2)));
  return turn;
}

function showStep(st) {
  const div = el("div", undefined, "turn");
  div.append(el("div", `step ${st.index}`, "meta"));
  for (const call of st.tool_calls) div.append(block("call", `call ${call.name || ""}`, JSON.stringify(call.arguments ?? call, null, 2)));
  for (const res of st.results) {
    const label = `result ${res.name || ""}${res.is_error ? " (error)" : ""}`;
    div.append(block("result", label, res.output ?? JSON.stringify(res, null, 2)));
  }
  return div;
}

function showDiff(text, pre = $("diff")) {
  pre.replaceChildren();
  for (const line of text.split("\n")) {
    const cls = line.startsWith("+") && !line.startsWith("+++") ? "diff-add"
      : line.startsWith("-") && !line.startsWith("---") ? "diff-del" : undefined;
    pre.append(el("span", line + "\n", cls));
  }
}

async function showSession(id) {
  const s = await api(`/ui/api/sessions/${encodeURIComponent(id)}`);
  $("title").textContent = `Session ${s.id}`;
  const facts = $("facts");
  facts.replaceChildren();
  for (const [k, v] of [["kind", s.kind], ["status", s.status], ["checkpoint", s.checkpoint],
    ["created", s.created_at], ["task", s.task], ["workspace", s.workspace]]) {
    if (v === null || v === undefined) continue;
    facts.append(el("dt", k), el("dd", v));
  }
  const fb = $("feedback");
  fb.replaceChildren(...s.feedback.map((f) =>
    el("li", `${f.signal}${f.value === null ? "" : ` (${f.value})`} at ${f.at}`)));
  if (!s.feedback.length) fb.append(el("li", "none yet"));
  $("transcript").replaceChildren(...s.requests.map(showTurn));
  $("steps").replaceChildren(...s.steps.map(showStep));
  $("steps-section").hidden = s.steps.length === 0;
  $("diff-section").hidden = !s.diff;
  if (s.diff) showDiff(s.diff);
  $("branch-section").hidden = !(s.branching && s.kind === "agent" && s.steps.length);
  $("branch-turn").max = String(s.steps.length);
  $("detail").hidden = false;
}

// K fresh continuations from a turn, run by the server; their diffs side by side.
async function branch(id) {
  const k = Number($("branch-k").value), fromTurn = Number($("branch-turn").value);
  $("branch-status").textContent = `running ${k} continuations…`;
  $("branches").replaceChildren();
  try {
    const out = await api(`/ui/api/sessions/${encodeURIComponent(id)}/branch`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ k, from_turn: fromTurn }),
    });
    $("branch-status").textContent = out.not_judged ? `not judged: ${out.not_judged}` : "";
    $("branches").replaceChildren(...out.branches.map((b, i) => {
      const col = el("div", undefined, "branch");
      col.dataset.branch = String(i + 1);
      const score = b.score === null ? "not judged" : `score ${b.score}`;
      col.append(el("div", `#${i + 1} · ${score} · ${b.end} · ${b.turns} turns in all`, "meta"));
      const pre = el("pre");
      showDiff(b.diff || "(no change)", pre);
      col.append(pre);
      return col;
    }));
  } catch (e) {
    $("branch-status").textContent = "";
    if (e.message !== "unauthorized") showError(e.message);
  }
}

async function give(id, signal) {
  $("feedback-status").textContent = "sending…";
  try {
    await api("/v1/feedback", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ session_id: id, signal }),
    });
    $("feedback-status").textContent = `${signal} recorded`;
    await showSession(id);
  } catch (e) {
    $("feedback-status").textContent = "";
    if (e.message !== "unauthorized") showError(e.message);
  }
}

async function route() {
  showError("");
  const m = location.pathname.match(/^\/ui\/sessions\/(.+)$/);
  try {
    if (m) {
      const id = decodeURIComponent(m[1]);
      $("accept").onclick = () => give(id, "accept");
      $("reject").onclick = () => give(id, "reject");
      $("branch-form").onsubmit = (ev) => { ev.preventDefault(); branch(id); };
      await showSession(id);
    } else {
      await showList();
    }
  } catch (e) {
    if (e.message !== "unauthorized") showError(e.message);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY, $("key-input").value.trim());
    $("key-form").hidden = true;
    route();
  });
  route();
});
