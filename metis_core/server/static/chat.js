// Chat from the web view: start a session on a chosen model, send a message, render the turn as the
// SSE stream of POST /api/chat/sessions/<id>/messages brings it (text and thinking deltas, each
// stored answer and tool result, tool confirmations answered with buttons). Plain DOM, no
// dependencies; loaded before app.js, whose helpers (el, show, say, api, state, blockView,
// messageView) it uses when called.
"use strict";

const ANSWERS = [
  ["allow_once", "Allow once", "Allowed once"],
  ["allow_session", "Allow for this session", "Allowed for this session"],
  ["deny", "Deny", "Denied"],
];

async function postJson(path, body, signal) {
  const headers = { "content-type": "application/json" };
  if (state.token) headers.Authorization = "Bearer " + state.token;
  const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body), signal });
  if (response.status === 401) document.getElementById("token-form").hidden = false;
  return response;
}

async function failure(response) {
  try {
    const body = await response.json();
    return body.detail || response.statusText;
  } catch (error) {
    return response.statusText;
  }
}

// --- a new session ------------------------------------------------------------------------------

async function showNewChat() {
  const data = await api("/api/models");
  const usable = data.models.filter((m) => m.configured);
  const select = el("select", { id: "chat-model", name: "model" },
    el("option", { value: "" }, "Routed" + (data.default ? " (default " + data.default + ")" : "")),
    usable.map((m) => el("option", { value: m.id }, m.display_name ? m.id + " — " + m.display_name : m.id)));
  const form = el("form", { id: "new-chat", class: "stack" },
    el("p", {}, el("label", { for: "chat-model" }, "Model"), select),
    el("p", {}, el("label", { for: "chat-title" }, "Title (optional)"),
      el("input", { id: "chat-title", name: "title", type: "text", autocomplete: "off" })),
    el("p", {}, el("button", { type: "submit", id: "chat-start" }, "Start session")));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = {};
    if (select.value) body.model = select.value;
    if (form.elements.title.value.trim()) body.title = form.elements.title.value.trim();
    const response = await postJson("/api/chat/sessions", body);
    if (!response.ok) { say(await failure(response), true); return; }
    location.hash = "#/chat/" + (await response.json()).session.id;
  });
  show(el("h1", {}, "New chat"),
    usable.length ? form : el("p", { class: "error" }, "No model has a provider key on this server."),
    el("p", { class: "meta" }, "Models with a provider key on this server: " + usable.length + "."));
}

// --- one session's chat --------------------------------------------------------------------------

async function showChat(sessionId) {
  const detail = await api("/api/sessions/" + sessionId);
  const log = el("div", { id: "chat-log", class: "chat-log", role: "log", "aria-live": "polite",
    "aria-relevant": "additions", "aria-label": "Conversation" });
  try {
    (await api("/api/sessions/" + sessionId + "/messages")).messages.forEach((m) => log.append(messageView(m)));
  } catch (error) {
    log.append(el("p", { class: "withheld" }, error.message));
  }
  const input = el("textarea", { id: "chat-input", name: "text", rows: 3, required: true,
    "aria-describedby": "chat-hint" });
  const send = el("button", { type: "submit", id: "chat-send" }, "Send");
  const form = el("form", { id: "chat-form", class: "chat-form" },
    el("label", { for: "chat-input" }, "Message"), input,
    el("p", { id: "chat-hint", class: "meta" }, "Enter sends; Shift+Enter starts a new line."), send);
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || input.disabled) return;
    input.value = "";
    sendMessage(sessionId, text, log, input, send);
  });
  const s = detail.session;
  show(el("h1", {}, s.title || "Chat"),
    el("p", { class: "meta" }, el("span", { class: "mono" }, s.id), " · ", s.active_model || "routed", " · ",
      el("a", { href: "#/session/" + s.id }, "Record and trace")),
    el("section", { "aria-labelledby": "chat-h" }, el("h2", { id: "chat-h" }, "Conversation"), log), form);
  input.focus();
}

function parseFrame(text) {
  const frame = { event: "message", data: "" };
  for (const line of text.split("\n")) {
    if (line.startsWith("event: ")) frame.event = line.slice(7);
    else if (line.startsWith("data: ")) frame.data += line.slice(6);
  }
  frame.data = frame.data ? JSON.parse(frame.data) : null;
  return frame;
}

async function sendMessage(sessionId, text, log, input, send) {
  input.disabled = send.disabled = true;
  log.append(messageView({ role: "user", content: [{ type: "text", text }] }));
  const turn = new TurnView(log);
  say("Answering…");
  state.turn = new AbortController();
  try {
    const response = await postJson("/api/chat/sessions/" + sessionId + "/messages", { text }, state.turn.signal);
    if (!response.ok) throw new Error(await failure(response));
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        turn.frame(parseFrame(buffer.slice(0, cut)));
        buffer = buffer.slice(cut + 2);
      }
    }
  } catch (error) {
    if (error.name !== "AbortError") turn.fail(error.message);
  } finally {
    state.turn = null;
    turn.end();
    input.disabled = send.disabled = false;
    if (document.body.contains(input)) input.focus();
  }
}

class TurnView {
  // One turn as it streams: a draft answer filled by deltas, replaced by the stored message.
  constructor(log) { this.log = log; this.draft = null; this.text = null; this.thinking = null; this.confirms = new Map(); }

  append(node) { this.log.append(node); node.scrollIntoView({ block: "nearest" }); return node; }

  draftArticle() {
    if (!this.draft) {
      this.draft = this.append(el("article", { class: "msg assistant draft", "aria-busy": "true",
        "aria-label": "assistant message, streaming" }, el("header", {}, "assistant · answering…")));
    }
    return this.draft;
  }

  frame(frame) {
    const data = frame.data;
    switch (frame.event) {
      case "text.delta":
        if (!this.text) { this.text = el("pre", {}); this.draftArticle().append(this.text); }
        this.text.append(data.text);
        break;
      case "thinking.delta":
        if (!this.thinking) {
          this.thinking = el("pre", {});
          this.draftArticle().append(el("details", { class: "thinking", open: true }, el("summary", {}, "Thinking"),
            this.thinking));
        }
        this.thinking.append(data.text);
        break;
      case "message":
        if (data.role === "assistant" && this.draft) {
          this.draft.replaceWith(messageView(data));
          this.draft = this.text = this.thinking = null;
        } else {
          this.append(messageView(data));
        }
        break;
      case "tool.confirmation_requested": this.ask(data.payload); break;
      case "tool.confirmation_resolved": this.resolved(data.payload); break;
      case "done":
        if (data.error) this.fail(data.error);
        say(data.error ? "The turn ended with an error." : "Answer complete.", Boolean(data.error));
        break;
      default: break;
    }
  }

  ask(p) {
    const heading = "confirm-h-" + p.confirmation_request_id;
    const outcome = el("p", { class: "meta", role: "status" });
    const buttons = ANSWERS.map(([answer, label]) => el("button", { type: "button", "data-answer": answer }, label));
    const box = el("div", { class: "confirm", role: "group", "aria-labelledby": heading,
      "data-request-id": p.confirmation_request_id },
    el("p", { id: heading }, el("strong", {}, "Allow " + p.tool_name + "?"), " It has " + p.side_effects +
      " side effects."),
    el("pre", {}, p.command_summary || p.input_summary), el("p", { class: "buttons" }, buttons), outcome);
    buttons.forEach((button) => button.addEventListener("click", () => this.answer(p, button, buttons, outcome)));
    this.confirms.set(p.confirmation_request_id, { buttons, outcome });
    this.append(box);
    buttons[0].focus();
    say(p.tool_name + " is waiting for your answer.");
  }

  async answer(p, button, buttons, outcome) {
    buttons.forEach((b) => { b.disabled = true; });
    const answer = button.getAttribute("data-answer");
    const response = await postJson("/api/chat/confirmations/" + encodeURIComponent(p.confirmation_request_id),
      { answer });
    if (!response.ok) {
      outcome.textContent = await failure(response);
      outcome.classList.add("error");
      buttons.forEach((b) => { b.disabled = false; });
      return;
    }
    outcome.textContent = ANSWERS.find(([a]) => a === answer)[2] + ".";
    button.setAttribute("aria-pressed", "true");
    say("Answering…");
  }

  resolved(p) {
    const pending = this.confirms.get(p.confirmation_request_id);
    if (!pending) return;
    pending.buttons.forEach((b) => { b.disabled = true; });
    if (!pending.outcome.textContent) {
      pending.outcome.textContent = p.decision === "timeout" ? "No answer in time: denied." :
        p.decision === "allow" ? "Allowed." : "Denied.";
    }
  }

  fail(message) { this.append(el("p", { class: "error", role: "alert" }, message)); }

  end() {
    if (this.draft) {  // the stream stopped before the answer was stored: keep what arrived, marked
      this.draft.removeAttribute("aria-busy");
      this.draft.querySelector("header").textContent = "assistant · incomplete";
    }
    this.confirms.forEach(({ buttons }) => buttons.forEach((b) => { b.disabled = true; }));
  }
}
