// The metis web view: a session's conversation, waterfall and causal trace (with live mode), chat
// (chat.js), the console pages (console.js), the audit log and gateway keys. Plain DOM, no
// dependencies; every value is inserted as text, never HTML (markdown.js builds nodes, too).
"use strict";

const state = { token: sessionStorage.getItem("metis-token") || "", socket: null, turn: null };
const main = document.getElementById("main");
const statusLine = document.getElementById("status");

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function show(...nodes) {
  main.replaceChildren(...nodes.flat().filter((node) => node !== null && node !== undefined));
}

function say(text, isError) {
  statusLine.textContent = text;
  statusLine.classList.toggle("error", Boolean(isError));
}

async function api(path) {
  const headers = state.token ? { Authorization: "Bearer " + state.token } : {};
  const response = await fetch(path, { headers });
  if (response.status === 401) {
    document.getElementById("token-form").hidden = false;
    throw new Error("Open the link `metis serve` printed when it started, or enter a gateway key.");
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail || response.statusText);
  return body;
}

function usd(value) {
  const n = Number(value || 0);
  return "$" + (n < 0.01 && n > 0 ? n.toFixed(6) : n.toFixed(4));
}

// A total that may leave out calls nobody priced: never "$0" for those.
function spend(value, unpriced) {
  if (!unpriced) return usd(value);
  const calls = unpriced + (unpriced === 1 ? " call" : " calls") + " unpriced";
  return value === null || Number(value) === 0 ? "cost unknown (" + calls + ")" : "≥ " + usd(value) + ", " + calls;
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

// --- one session: conversation, trace tree, live mode ---------------------------------------------

function blockView(block, rich) {
  switch (block.type) {
    case "text": return rich ? renderMarkdown(block.text) : el("pre", {}, block.text);
    case "thinking": return el("details", { class: "thinking" }, el("summary", {}, "Thinking"), el("pre", {}, block.text));
    case "redacted_thinking": return el("p", { class: "meta" }, "(redacted thinking)");
    case "tool_use": return el("details", { class: "tool-use", open: true },
      el("summary", {}, "Tool call: ", el("code", {}, block.name)), el("pre", {}, JSON.stringify(block.input, null, 2)));
    case "tool_result": return el("details", { class: "tool-result", open: true },
      el("summary", {}, block.is_error ? "Tool error" : "Tool result"),
      (block.content || []).map((inner) => blockView(inner, rich)));
    case "image":
      if (block.source.kind === "base64") {
        return el("img", { src: "data:" + block.media_type + ";base64," + block.source.data, alt: "Attached image" });
      }
      if (block.source.kind === "url") return el("img", { src: block.source.data, alt: "Image from " + block.source.data });
      return el("p", { class: "meta" }, "Image file: " + block.source.data);
    default: return el("p", { class: "meta" }, "(" + block.type + ")");
  }
}

function messageView(message, rich) {
  return el("article", { class: "msg " + message.role, "aria-label": message.role + " message" },
    el("header", {}, message.role, message.metadata && message.metadata.model ? " · " + message.metadata.model : ""),
    message.content.map((block) => blockView(block, rich)));
}

function eventSummary(event) {
  const p = event.payload;
  if (!p) return el("span", { class: "meta withheld" }, "content withheld (private)");
  const parts = [];
  if (p.model) parts.push(p.model);
  if (p.input_tokens !== undefined) parts.push(p.input_tokens + " in / " + p.output_tokens + " out tokens");
  if (p.cost_usd !== undefined) parts.push(p.pricing_version === "unpriced" ? "cost unknown" : usd(p.cost_usd));
  if (p.latency_ms !== undefined) parts.push(p.latency_ms + " ms");
  if (p.tool_name) parts.push(p.tool_name);
  if (p.decision) parts.push(p.decision + (p.scope ? " (" + p.scope + ")" : ""));
  return el("span", { class: "meta" }, parts.join(" · "));
}

class TraceTree {
  constructor(root) { this.root = root; this.items = new Map(); this.lists = new Map(); }

  add(event) {
    if (this.items.has(event.id)) return;
    const item = el("li", { "data-event-id": event.id, "data-type": event.type });
    const children = el("ul", {});
    const label = [el("span", { class: "etype" }, event.type), eventSummary(event)];
    item.append(el("details", { open: event.parent_event_id ? null : true }, el("summary", {}, label), children));
    this.items.set(event.id, item);
    this.lists.set(event.id, children);
    const parentList = this.lists.get(event.parent_event_id);
    (parentList || this.root).append(item);
  }
}

function startLive(sessionId, lastId, tree, log, button) {
  stopLive();
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  const tokenPart = state.token ? "?token=" + encodeURIComponent(state.token) : "";
  const socket = new WebSocket(scheme + location.host + "/ws/events" + tokenPart);
  state.socket = socket;
  let last = lastId;
  socket.onopen = () => socket.send(JSON.stringify({ session_ids: [sessionId], last_event_id: last || "" }));
  socket.onmessage = (message) => {
    const frame = JSON.parse(message.data);
    if (frame.kind === "event") {
      last = frame.event.id;
      tree.add(frame.event);
      log.append(el("li", { "data-event-id": frame.event.id }, when(frame.event.timestamp), " ",
        el("span", { class: "etype" }, frame.event.type)));
      log.scrollTop = log.scrollHeight;
    } else if (frame.kind === "subscribed") {
      say("Following this session live.");
    } else if (frame.kind === "dropped" || frame.kind === "error") {
      say("Live stream ended: " + (frame.reason || frame.detail), true);
    }
  };
  socket.onclose = () => {
    if (state.socket === socket) { button.textContent = "Follow live"; button.setAttribute("aria-pressed", "false"); }
  };
  button.textContent = "Stop following";
  button.setAttribute("aria-pressed", "true");
}

function stopLive() {
  if (state.socket) { const s = state.socket; state.socket = null; s.close(); }
}

async function showSession(sessionId) {
  const [detail, trace, timeline] = await Promise.all([api("/api/sessions/" + sessionId),
    api("/api/sessions/" + sessionId + "/trace"), api("/api/console/sessions/" + sessionId + "/timeline")]);
  let conversation;
  try {
    const messages = (await api("/api/sessions/" + sessionId + "/messages")).messages;
    conversation = messages.length ? messages.map((m) => messageView(m, true)) : el("p", {}, "No messages yet.");
  } catch (error) {
    conversation = el("p", { class: "withheld" }, error.message);
  }
  const treeRoot = el("ul", { class: "tree", id: "trace-tree", "aria-label": "Causal trace" });
  const tree = new TraceTree(treeRoot);
  trace.events.forEach((event) => tree.add(event));
  const lastId = trace.events.length ? trace.events[trace.events.length - 1].id : "";
  const log = el("ul", { class: "live-log", id: "live-log", role: "log", "aria-live": "polite", "aria-label": "Live events" });
  const button = el("button", { type: "button", id: "live-toggle", "aria-pressed": "false" }, "Follow live");
  button.addEventListener("click", () => {
    if (state.socket) { stopLive(); button.textContent = "Follow live"; button.setAttribute("aria-pressed", "false"); }
    else startLive(sessionId, lastId, tree, log, button);
  });
  const s = detail.session;
  const t = detail.totals;
  const spanDetail = el("div", { id: "span-detail", "aria-live": "polite" }, el("p", { class: "meta" },
    "Choose a span to see its events."));
  show(
    el("h1", {}, s.title || s.id),
    el("p", { class: "meta" }, el("span", { class: "mono" }, s.id), " · ", s.answered_by || s.active_model || "routed", " · ",
      t.model_calls + " model calls · " + spend(t.cost_usd, t.unpriced_message_count) + " · " + t.input_tokens + " in / " +
      t.output_tokens + " out tokens"),
    el("p", {}, button, " ", el("a", { href: "#/chat/" + s.id, id: "chat-link" }, "Chat in this session")),
    el("div", { class: "columns timeline" },
      el("div", {},
        el("section", { "aria-labelledby": "timeline-h" }, el("h2", { id: "timeline-h" }, "Timeline"),
          timeline.spans.length ? waterfall(timeline, trace.events, spanDetail) : el("p", {}, "No spans recorded.")),
        el("section", { "aria-labelledby": "span-h" }, el("h2", { id: "span-h" }, "Span details"), spanDetail)),
      el("section", { "aria-labelledby": "conv-h" }, el("h2", { id: "conv-h" }, "Conversation"), conversation)),
    el("div", {},
      el("section", { "aria-labelledby": "trace-h" }, el("h2", { id: "trace-h" }, "Trace"),
        el("p", {}, el("button", { type: "button", id: "expand-all", onclick: () =>
          treeRoot.querySelectorAll("details").forEach((d) => { d.open = true; }) }, "Expand all")),
        treeRoot,
        el("h2", { id: "live-h" }, "Live events"), log)));
}

// --- audit ----------------------------------------------------------------------------------------

async function showAudit() {
  const data = await api("/api/audit?limit=500");
  const rows = data.events.slice().reverse().map((e) => el("tr", {},
    el("td", {}, when(e.timestamp)), el("td", {}, e.type), el("td", {}, e.actor),
    el("td", {}, e.session_id === "system" ? "system" : el("a", { href: "#/session/" + e.session_id }, e.session_id)),
    el("td", {}, e.payload ? el("code", {}, JSON.stringify(e.payload)) : el("span", { class: "withheld" }, "withheld"))));
  show(el("h1", {}, "Audit log"), rows.length ? el("table", { id: "audit" },
    el("thead", {}, el("tr", {}, ["When", "Event", "Actor", "Session", "Details"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows)) : el("p", {}, "No audit events."));
}

// --- gateway keys -------------------------------------------------------------------------------

async function showKeys() {
  const data = await api("/api/gateway/keys");
  const rows = data.keys.map((k) => el("tr", {},
    el("td", {}, k.name), el("td", {}, k.scope), el("td", { class: "mono" }, k.prefix),
    el("td", {}, k.user_id || k.team_id || ""),
    el("td", { class: "num" }, k.budget_usd ? usd(k.budget_usd) + " / " + k.budget_period : "none"),
    el("td", { class: "num" }, k.spent_usd === null ? "" : usd(k.spent_usd) + " spent, " + usd(k.reserved_usd) + " held, " + usd(k.remaining_usd) + " left"),
    el("td", { class: "num" }, k.rpm === null ? "" : k.rpm),
    el("td", {}, k.revoked_at ? "revoked " + when(k.revoked_at) : k.expires_at ? "expires " + when(k.expires_at) : "active")));
  const limits = data.limits.map((l) => el("tr", {}, el("td", {}, l.scope), el("td", { class: "mono" }, l.subject_id),
    el("td", { class: "num" }, l.budget_usd ? usd(l.budget_usd) + " / " + l.budget_period : "none"),
    el("td", { class: "num" }, l.rpm === null ? "" : l.rpm)));
  show(el("h1", {}, "Gateway keys"),
    rows.length ? el("table", { id: "keys" }, el("thead", {}, el("tr", {}, ["Name", "Scope", "Prefix", "Owner", "Budget",
      "This window", "Requests/min", "State"].map((h, i) => el("th", { scope: "col", class: i >= 4 && i <= 6 ? "num" : null }, h)))), el("tbody", {}, rows))
      : el("p", {}, "No gateway keys."),
    limits.length ? el("table", { id: "limits" }, el("caption", {}, "User and team limits"),
      el("thead", {}, el("tr", {}, ["Scope", "Subject", "Budget", "Requests/min"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, limits)) : null);
}

// --- routing --------------------------------------------------------------------------------------

async function route() {
  stopLive();
  if (state.turn) state.turn.abort();  // leaving a chat mid-turn cancels the turn, as Ctrl-C does
  say("");
  const hash = location.hash || "#/";
  state.routed = hash;
  try {
    if (hash.startsWith("#/session/")) await showSession(decodeURIComponent(hash.slice(10)));
    else if (hash.startsWith("#/chat/")) await showChat(decodeURIComponent(hash.slice(7)));
    else if (hash.startsWith("#/chat")) await showNewChat();
    else if (hash.startsWith("#/costs")) await showUsage();
    else if (hash.startsWith("#/quality")) await showQuality();
    else if (hash.startsWith("#/gateway")) await showGateway();
    else if (hash.startsWith("#/audit")) await showAudit();
    else if (hash.startsWith("#/keys")) await showKeys();
    else await showSessionsTable();
    if (!main.contains(document.activeElement)) main.focus({ preventScroll: true });
  } catch (error) {
    show(el("p", { class: "error", role: "alert" }, error.message));
  }
}

document.getElementById("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  state.token = document.getElementById("token-input").value;
  sessionStorage.setItem("metis-token", state.token);
  e.target.hidden = true;
  route();
});
// "#" and "#/" are one page: going from the first to the second must not draw it twice.
window.addEventListener("hashchange", () => { if ((location.hash || "#/") !== state.routed) route(); });
route();
