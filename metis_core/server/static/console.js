// The console pages: the sessions table (filters, sort, search hits, keyset pages), a session's
// waterfall, usage over time with CSV export, quality, and gateway operations. Plain DOM and SVG,
// no dependencies; loaded before app.js, whose helpers (el, show, say, api, state, usd, spend, when)
// it uses when called. Every value goes in as text, never as HTML.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const STATUSES = ["ok", "error", "cancelled", "refused", "open"];
const SESSION_FILTERS = ["since", "until", "model", "status", "key", "user", "team", "tool", "min_score", "feedback", "q"];

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function hashParams() {
  return new URLSearchParams(location.hash.split("?")[1] || "");
}

function toHash(page, params) {
  const kept = new URLSearchParams();
  for (const [key, value] of params) if (value) kept.set(key, value);
  const query = kept.toString();
  return "#/" + page + (query ? "?" + query : "");
}

function ms(value) {
  if (value === null || value === undefined) return "";
  return value >= 1000 ? (value / 1000).toFixed(2) + " s" : Math.round(value) + " ms";
}

// Text with every case-insensitive occurrence of `needle` in a <mark>, built as nodes.
function highlighted(text, needle) {
  const out = [];
  const lower = text.toLowerCase();
  const wanted = needle.toLowerCase();
  let at = 0;
  for (let found = lower.indexOf(wanted); wanted && found >= 0; found = lower.indexOf(wanted, at)) {
    out.push(text.slice(at, found), el("mark", {}, text.slice(found, found + wanted.length)));
    at = found + wanted.length;
  }
  out.push(text.slice(at));
  return out;
}

// A bar chart: one bar per row, `value` its height; `label` under it; a <title> for screen readers.
function barChart(id, rows, format, caption) {
  const width = 760, height = 240, pad = 40;
  const chart = svg("svg", { viewBox: "0 0 " + width + " " + height, role: "img", id, "aria-label": caption });
  chart.append(svg("title", {}, caption + ": " + rows.map((r) => r.label + " " + format(r.value)).join(", ")));
  const max = Math.max(...rows.map((r) => r.value), 1e-9);
  const slot = (width - pad * 2) / Math.max(rows.length, 1);
  const every = Math.ceil(rows.length / 16);
  rows.forEach((r, i) => {
    const h = (r.value / max) * (height - pad * 2);
    const barWidth = Math.min(slot * 0.7, 48);
    chart.append(svg("rect", { class: "bar" + (r.cls ? " " + r.cls : ""), x: pad + i * slot + (slot - barWidth) / 2,
      y: height - pad - h, width: barWidth, height: Math.max(h, 1), "data-key": r.label }));
    if (i % every === 0) {
      chart.append(svg("text", { x: pad + i * slot + slot / 2, y: height - pad + 14, "text-anchor": "middle" },
        r.label.length > 10 ? r.label.slice(5) : r.label));
    }
  });
  chart.append(svg("text", { x: 4, y: pad - 10 }, format(max)));
  return el("figure", { class: "chart" }, chart, el("figcaption", {}, caption));
}

// Bars per bucket stacked by group (a colour per group, up to eight, then grey), with a legend.
function stackedChart(id, series, value, format, caption) {
  const width = 760, height = 240, pad = 40;
  const buckets = [...new Set(series.map((r) => r.bucket))].sort();
  const keys = [...new Set(series.map((r) => r.key))].sort();
  const totals = new Map(buckets.map((b) => [b, 0]));
  series.forEach((r) => totals.set(r.bucket, totals.get(r.bucket) + value(r)));
  const max = Math.max(...totals.values(), 1e-9);
  const chart = svg("svg", { viewBox: "0 0 " + width + " " + height, role: "img", id, "aria-label": caption });
  chart.append(svg("title", {}, caption + ": " + buckets.map((b) => b + " " + format(totals.get(b))).join(", ")));
  const slot = (width - pad * 2) / Math.max(buckets.length, 1);
  const barWidth = Math.min(slot * 0.7, 48);
  const every = Math.ceil(buckets.length / 16);
  buckets.forEach((bucket, i) => {
    let top = height - pad;
    for (const r of series.filter((row) => row.bucket === bucket)) {
      const h = (value(r) / max) * (height - pad * 2);
      top -= h;
      const bar = svg("rect", { class: "bar series-" + Math.min(keys.indexOf(r.key), 8), x: pad + i * slot + (slot - barWidth) / 2,
        y: top, width: barWidth, height: Math.max(h, 1), "data-key": r.key, "data-bucket": bucket });
      bar.append(svg("title", {}, bucket + " · " + r.key + ": " + format(value(r))));
      chart.append(bar);
    }
    if (i % every === 0) {
      chart.append(svg("text", { x: pad + i * slot + slot / 2, y: height - pad + 14, "text-anchor": "middle" },
        bucket.length > 10 ? bucket.slice(5) : bucket));
    }
  });
  chart.append(svg("text", { x: 4, y: pad - 10 }, format(max)));
  const legend = el("ul", { class: "legend" }, keys.map((key, i) => el("li", {},
    el("span", { class: "swatch series-" + Math.min(i, 8), "aria-hidden": "true" }), key)));
  return el("figure", { class: "chart" }, chart, el("figcaption", {}, caption), legend);
}

function table(id, caption, headers, rows) {
  if (!rows.length) return el("p", { id }, caption + ": nothing in this range.");
  return el("table", { id }, caption ? el("caption", {}, caption) : null,
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col", class: h.num ? "num" : null }, h.label || h)))),
    el("tbody", {}, rows));
}

function rangeForm(id, fields, onSubmit) {
  const params = hashParams();
  const form = el("form", { id, class: "filters" }, fields.map(([name, label, control]) => {
    const input = control || el("input", { name, type: name === "since" || name === "until" ? "date" : "text" });
    input.id = input.id || id + "-" + name;
    input.name = name;
    if (params.get(name)) input.value = params.get(name);
    return el("span", { class: "field" }, el("label", { for: input.id }, label), input);
  }), el("button", { type: "submit" }, "Apply"));
  form.addEventListener("submit", (e) => { e.preventDefault(); onSubmit(new FormData(form)); });
  return form;
}

function select(options) {
  return el("select", {}, options.map(([value, label]) => el("option", { value }, label)));
}

// --- sessions table -------------------------------------------------------------------------------

const SORTABLE = { Started: "started", Updated: "updated", Cost: "cost", "Tokens in": "tokens_in", "Tokens out": "tokens_out" };

async function showSessionsTable() {
  const params = hashParams();
  const form = rangeForm("session-filters", [
    ["q", "Search sessions", el("input", { type: "search", id: "session-search" })],
    ["since", "From"], ["until", "To"], ["model", "Model"],
    ["status", "Status", select([["", "any"], ...STATUSES.map((s) => [s, s])])],
    ["key", "Key"], ["user", "User"], ["team", "Team"], ["tool", "Tool used"],
    ["min_score", "Min eval score", el("input", { type: "number", min: 0, max: 1, step: 0.05 })],
    ["feedback", "Feedback", select([["", "any"], ["up", "thumbs up"], ["down", "thumbs down"]])],
  ], (data) => {
    const next = new URLSearchParams();
    for (const name of SESSION_FILTERS) next.set(name, data.get(name) || "");
    for (const name of ["sort", "order"]) next.set(name, params.get(name) || "");
    location.hash = toHash("", next);
  });
  const query = new URLSearchParams();
  for (const [key, value] of params) query.set(key, value);
  const data = await api("/api/console/sessions?" + query.toString());
  const needle = params.get("q") || "";
  const sort = params.get("sort") || "updated";
  const order = params.get("order") || "desc";
  const header = (label, num) => {
    const key = SORTABLE[label];
    if (!key) return { label, num };
    const next = new URLSearchParams(params);
    next.delete("cursor");
    next.set("sort", key);
    next.set("order", sort === key && order === "desc" ? "asc" : "desc");
    const mark = sort === key ? (order === "desc" ? " ▼" : " ▲") : "";
    return { label: el("a", { href: toHash("", next), class: "sort", "data-sort": key,
      "aria-sort": sort === key ? (order === "desc" ? "descending" : "ascending") : null }, label + mark), num };
  };
  const rows = data.sessions.map((s) => el("tr", { "data-session-id": s.id, "data-status": s.status },
    el("td", {}, el("a", { href: "#/session/" + s.id, class: "session-link" }, s.title || s.id),
      s.hits.map((hit) => el("div", { class: "hit" }, highlighted(hit, needle)))),
    el("td", {}, s.models.join(", ")),
    el("td", {}, el("span", { class: "badge " + s.status }, s.status)),
    el("td", { class: "num" }, s.turns),
    el("td", { class: "num" }, s.input_tokens), el("td", { class: "num" }, s.output_tokens),
    el("td", { class: "num" }, spend(s.cost_usd, s.unpriced_calls)),
    el("td", { class: "num" }, ms(s.latency_ms)),
    el("td", {}, [...s.keys, ...s.users, ...s.teams].join(" · ")),
    el("td", {}, s.score === null ? "" : s.score.toFixed(2), s.feedback_up ? " · " + s.feedback_up + " good" : "",
      s.feedback_down ? " · " + s.feedback_down + " bad" : ""),
    el("td", {}, when(s.started)), el("td", {}, when(s.updated))));
  const pager = el("p", { class: "pager" });
  if (params.get("cursor")) {
    const first = new URLSearchParams(params);
    first.delete("cursor");
    pager.append(el("a", { href: toHash("", first), id: "first-page" }, "First page"), " ");
  }
  if (data.next_cursor) {
    const next = new URLSearchParams(params);
    next.set("cursor", data.next_cursor);
    pager.append(el("a", { href: toHash("", next), id: "next-page" }, "Next page"));
  }
  show(el("h1", {}, "Sessions"), form,
    rows.length ? table("sessions", "", [header("Title"), "Models", "Status", { label: "Turns", num: true },
      header("Tokens in", true), header("Tokens out", true), header("Cost", true), { label: "Latency", num: true },
      "Key · user · team", "Score · feedback", header("Started"), header("Updated")], rows) : el("p", {}, "No sessions found."),
    pager.childNodes.length ? pager : null);
}

// --- a session's waterfall -------------------------------------------------------------------------

function waterfall(timeline, events, detail) {
  const byId = new Map(events.map((e) => [e.id, e]));
  const depth = new Map();
  const total = Math.max(timeline.duration_ms, 1);
  const list = el("ol", { class: "waterfall", id: "timeline", "aria-label": "Timeline of spans" });
  for (const span of timeline.spans) {
    const level = span.parent ? (depth.get(span.parent) || 0) + 1 : 0;
    depth.set(span.id, level);
    const bar = el("span", { class: "bar " + span.status });
    bar.style.left = (100 * span.offset_ms / total) + "%";
    bar.style.width = Math.max(0.4, 100 * span.duration_ms / total) + "%";
    const figures = [ms(span.duration_ms)];
    if (span.input_tokens !== null && span.input_tokens !== undefined) figures.push(span.input_tokens + "/" + span.output_tokens + " tok");
    if (span.unpriced_calls) figures.push(spend(span.cost_usd, span.unpriced_calls));
    else if (span.cost_usd !== null) figures.push(usd(span.cost_usd));
    else if (span.kind === "model call" && span.status === "ok") figures.push("cost unknown");
    if (span.retries) figures.push(span.retries + " retries");
    if (span.status !== "ok") figures.push(span.status);
    const button = el("button", { type: "button", class: "span " + span.status, "data-span-id": span.id,
      "data-kind": span.kind, "aria-describedby": "span-detail" },
    el("span", { class: "span-label" }, "\u00a0".repeat(level * 2), el("strong", {}, span.kind), " ", span.name),
    el("span", { class: "track" }, bar), el("span", { class: "span-figures" }, figures.join(" · ")));
    button.addEventListener("click", () => {
      list.querySelectorAll("button.selected").forEach((b) => b.classList.remove("selected"));
      button.classList.add("selected");
      detail.replaceChildren(el("h3", {}, span.kind + ": " + span.name),
        ...span.events.map((id) => byId.get(id)).filter(Boolean).map((e) => el("div", { class: "event" },
          el("p", {}, el("span", { class: "etype" }, e.type), " ", el("span", { class: "meta" }, when(e.timestamp))),
          e.withheld ? el("p", { class: "withheld" }, "payload withheld (private): it needs a key with scope admin")
            : el("pre", {}, JSON.stringify(e.payload, null, 2)))));
    });
    list.append(el("li", {}, button));
  }
  return list;
}

// --- usage over time -------------------------------------------------------------------------------

const METRICS = { cost: ["Cost (USD)", (r) => Number(r.cost_usd || 0), (v) => usd(v)],
  tokens: ["Tokens (in + out)", (r) => r.input_tokens + r.output_tokens, String], calls: ["Calls", (r) => r.calls, String] };

async function showUsage() {
  const params = hashParams();
  const query = new URLSearchParams();
  for (const name of ["since", "until", "bucket", "by"]) if (params.get(name)) query.set(name, params.get(name));
  const metric = METRICS[params.get("metric")] ? params.get("metric") : "cost";
  const form = rangeForm("usage-filters", [["since", "From"], ["until", "To"],
    ["bucket", "Per", select([["day", "day"], ["hour", "hour"]])],
    ["by", "By", select(["model", "provider", "key", "user", "team"].map((g) => [g, g]))],
    ["metric", "Show", select([["cost", "cost"], ["tokens", "tokens"], ["calls", "calls"]])]],
  (data) => { location.hash = toHash("costs", data); });
  const data = await api("/api/console/usage?" + query.toString());
  const [title, value, format] = METRICS[metric];
  const csv = el("button", { type: "button", id: "usage-csv" }, "Export CSV");
  csv.addEventListener("click", async () => {
    const headers = state.token ? { Authorization: "Bearer " + state.token } : {};
    query.set("format", "csv");
    const response = await fetch("/api/console/usage?" + query.toString(), { headers });
    query.delete("format");
    if (!response.ok) { say("Export failed: " + response.statusText, true); return; }
    const link = el("a", { href: URL.createObjectURL(await response.blob()), download: "metis-usage-" + data.by + ".csv" });
    link.click();
    URL.revokeObjectURL(link.href);
    say("Exported " + data.series.length + " rows.");
  });
  const numbers = (r) => [el("td", { class: "num" }, r.calls), el("td", { class: "num" }, r.input_tokens),
    el("td", { class: "num" }, r.output_tokens), el("td", { class: "num" }, spend(r.cost_usd, r.unpriced_calls))];
  const heads = ["Calls", "Input tokens", "Output tokens", "Cost"].map((label) => ({ label, num: true }));
  show(el("h1", {}, "Usage and costs"), form,
    el("p", { class: "meta" }, "In range: " + data.total.calls + " calls · " + data.total.input_tokens + " in / " +
      data.total.output_tokens + " out tokens · " + spend(data.total.cost_usd, data.total.unpriced_calls)),
    stackedChart("cost-chart", data.series, value, format, title + " per " + data.bucket + " by " + data.by),
    el("p", {}, csv),
    table("usage-groups", "By " + data.by, [data.by, ...heads],
      data.groups.map((r) => el("tr", {}, el("td", {}, r.key), numbers(r)))),
    table("usage-series", "Per " + data.bucket + " and " + data.by, [data.bucket, data.by, ...heads],
      data.series.map((r) => el("tr", {}, el("td", {}, r.bucket), el("td", {}, r.key), numbers(r)))));
}

// --- quality ---------------------------------------------------------------------------------------

async function showQuality() {
  const params = hashParams();
  const query = new URLSearchParams();
  for (const name of ["since", "until", "bucket"]) if (params.get(name)) query.set(name, params.get(name));
  const form = rangeForm("quality-filters", [["since", "From"], ["until", "To"],
    ["bucket", "Per", select([["day", "day"], ["hour", "hour"]])]], (data) => { location.hash = toHash("quality", data); });
  const data = await api("/api/console/quality?" + query.toString());
  const score = (v) => (v === null || v === undefined ? "" : Number(v).toFixed(2));
  show(el("h1", {}, "Quality"), form,
    table("quality-models", "Per model over time", ["When", "Model", { label: "Evals", num: true },
      { label: "Mean score", num: true }, { label: "Good", num: true }, { label: "Bad", num: true }],
    data.models.map((m) => el("tr", {}, el("td", {}, m.bucket), el("td", {}, m.model), el("td", { class: "num" }, m.evals),
      el("td", { class: "num" }, score(m.mean_score)), el("td", { class: "num" }, m.up), el("td", { class: "num" }, m.down)))),
    table("quality-sessions", "Per session", ["Session", "Model", { label: "Evals", num: true },
      { label: "Mean score", num: true }, "Feedback", "Implicit signals"],
    data.sessions.map((s) => el("tr", {}, el("td", {}, el("a", { href: "#/session/" + s.session_id }, s.session_id)),
      el("td", {}, s.model || ""), el("td", { class: "num" }, s.evals), el("td", { class: "num" }, score(s.mean_score)),
      el("td", {}, s.feedback_up + " good · " + s.feedback_down + " bad"), el("td", {}, s.implicit.join(", "))))),
    table("routing-decisions", "Routing decisions and why", ["When", "Session", "Event", "Chosen", "Policy",
      "Why", "Evidence"],
    data.decisions.slice().reverse().map((d) => el("tr", {}, el("td", {}, when(d.time)),
      el("td", {}, el("a", { href: "#/session/" + d.session_id }, d.session_id)), el("td", {}, d.type),
      el("td", {}, d.chosen_model || ""), el("td", {}, d.policy || ""), el("td", {}, d.reason || ""),
      el("td", {}, [d.confidence !== null && d.confidence !== undefined ? "confidence " + score(d.confidence) : "",
        ...(d.alternatives || []).map((a) => a.model + " " + score(a.score) + " (n=" + a.sample_size + ")"),
        ...(d.chain || []).filter((c) => c.verdict !== "chose").map((c) => c.policy + ": " + c.verdict)]
        .filter(Boolean).join(" · "))))));
}

// --- gateway operations ----------------------------------------------------------------------------

async function showGateway() {
  const params = hashParams();
  const query = new URLSearchParams();
  for (const name of ["since", "until", "bucket", "scope"]) if (params.get(name)) query.set(name, params.get(name));
  const form = rangeForm("gateway-filters", [["since", "From"], ["until", "To"],
    ["bucket", "Per", select([["hour", "hour"], ["day", "day"]])],
    ["scope", "Calls", select([["gateway", "gateway sessions"], ["all", "every session"]])]],
  (data) => { location.hash = toHash("gateway", data); });
  const data = await api("/api/console/gateway?" + query.toString());
  const perBucket = new Map();
  for (const row of data.series) {
    const seen = perBucket.get(row.bucket) || { requests: 0, errors: 0 };
    perBucket.set(row.bucket, { requests: seen.requests + row.requests, errors: seen.errors + row.errors });
  }
  const rate = (v) => (v === null ? "" : (100 * v).toFixed(1) + "%");
  const opsRow = (r, first) => el("tr", {}, first, el("td", {}, r.key), el("td", { class: "num" }, r.requests),
    el("td", { class: "num" }, r.requests_per_s.toFixed(4)), el("td", { class: "num" + (r.errors ? " error" : "") }, rate(r.error_rate)),
    el("td", { class: "num" }, ms(r.p50_ms)), el("td", { class: "num" }, ms(r.p95_ms)));
  const opsHeads = ["Provider · model", { label: "Requests", num: true }, { label: "Requests/s", num: true },
    { label: "Error rate", num: true }, { label: "p50", num: true }, { label: "p95", num: true }];
  let keys;
  try {
    const k = await api("/api/gateway/keys");
    keys = table("gateway-keys", "Keys: spend against budget", ["Key", "Owner", "Budget", "Spent", "Reserved",
      "Remaining", "Requests/min", "Tokens/min"], k.keys.map((key) => el("tr", {}, el("td", {}, key.name + " (" + key.prefix + ")"),
      el("td", {}, key.user_id || key.team_id || ""), el("td", {}, key.budget_usd ? usd(key.budget_usd) + " / " + key.budget_period : "none"),
      el("td", { class: "num" }, key.spent_usd === null ? "" : usd(key.spent_usd)),
      el("td", { class: "num" }, key.reserved_usd === null ? "" : usd(key.reserved_usd)),
      el("td", { class: "num" }, key.remaining_usd === null ? "" : usd(key.remaining_usd)),
      el("td", { class: "num" }, key.rpm === null ? "" : key.rpm), el("td", { class: "num" }, key.tpm === null ? "" : key.tpm))));
  } catch (error) {
    keys = el("p", { class: "withheld", id: "gateway-keys" }, error.message);
  }
  show(el("h1", {}, "Gateway operations"), form,
    barChart("requests-chart", [...perBucket].map(([label, v]) => ({ label, value: v.requests, cls: v.errors ? "has-errors" : "" })),
      String, "Requests per " + data.bucket + " (bars with errors in red)"),
    table("gateway-models", "Per provider and model", opsHeads, data.models.map((r) => opsRow(r, null))),
    table("gateway-series", "Per " + data.bucket, ["When", ...opsHeads],
      data.series.map((r) => opsRow(r, el("td", {}, r.bucket)))),
    table("gateway-health", "Upstream health", ["When", "Event", "Provider", "Details"],
      data.health.map((h) => el("tr", {}, el("td", {}, when(h.time)), el("td", {}, h.type), el("td", {}, h.provider || ""),
        el("td", {}, el("code", {}, JSON.stringify(h)))))),
    table("quota-refusals", "Quota refusals", ["When", "Key", "Cap", "Subject", "Model"],
      data.quota_refusals.map((q) => el("tr", {}, el("td", {}, when(q.time)), el("td", {}, q.gateway_key_id),
        el("td", {}, q.cap_type), el("td", {}, (q.scope || "") + (q.user_id ? " " + q.user_id : "") + (q.team_id ? " " + q.team_id : "")),
        el("td", {}, q.requested_model || "")))),
    keys);
}
