// Lakefeed console: polls the changefeed server's HTTP API (docs/changefeed.md, "Console") and draws
// what it returns. No build step: plain DOM, uPlot (vendor/) for the charts. Every text that comes from
// the server goes in through textContent, never as HTML.
"use strict";

const params = new URLSearchParams(location.search);
// ?refresh=SECONDS sets the poll interval (default 2 s); the browser test polls faster.
const REFRESH_MS = Math.max(250, 1000 * (parseFloat(params.get("refresh")) || 2));
const HISTORY_POINTS = 600;      // points kept per chart (20 minutes at the default interval)
const METADATA_EVERY_MS = 5000;  // the sink cluster's metadata costs a broker round trip: not every poll

const lag = { t: [], series: new Map() };          // changefeed id -> lag seconds per poll (null: absent)
const freshness = { t: [], values: [] };          // the pipeline's largest freshness per poll
let feeds = [];                                     // last /api/v2/changefeeds answer
const stats = new Map();                            // changefeed id -> last /statistics answer
let pipeline = null;                                // last /api/v2/pipeline/metrics answer or {error}
const metadata = { id: null, at: 0, answer: null }; // sink metadata of the changefeed page
let view = null;                                    // the page on screen: {name, id, root, charts}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
  return node;
}

function table(headers, rows, numeric = []) {
  const head = el("tr", {}, ...headers.map((h, i) => el("th", numeric.includes(i) ? { class: "num" } : {}, h)));
  const body = rows.map(cells => el("tr", {}, ...cells.map((c, i) =>
    el("td", numeric.includes(i) ? { class: "num" } : {}, c))));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...body));
}

function stateBadge(state) {
  return el("span", { class: `state state-${state}`, "data-state": state }, state);
}

function fmt(value, digits = 1) {
  if (value === null || value === undefined) return "–";
  return Number(value).toLocaleString("en-US", { maximumFractionDigits: digits });
}

function bytes(value) {
  if (value === null || value === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (value >= 1024 && i < units.length - 1) { value /= 1024; i++; }
  return `${fmt(value)} ${units[i]}`;
}

async function api(method, path) {
  // Resolves to {ok, status, body}; a server that does not answer is {ok: false, status: 0}.
  try {
    const response = await fetch(path, { method, headers: { Accept: "application/json" } });
    const body = await response.json().catch(() => null);
    return { ok: response.ok, status: response.status, body };
  } catch (err) {
    return { ok: false, status: 0, body: { message: `cannot reach the changefeed server: ${err.message}` } };
  }
}

function push(series, value) {
  series.push(value);
  if (series.length > HISTORY_POINTS) series.shift();
}

async function poll() {
  const listed = await api("GET", "/api/v2/changefeeds?all=true");
  const status = document.getElementById("status");
  if (!listed.ok) {
    status.textContent = (listed.body && listed.body.message) || `server answered ${listed.status}`;
    status.className = "bad";
    return;
  }
  feeds = listed.body;
  const answers = await Promise.all(feeds.map(f => api("GET", `/api/v2/changefeeds/${encodeURIComponent(f.id)}/statistics`)));
  stats.clear();
  answers.forEach((a, i) => { if (a.ok) stats.set(feeds[i].id, a.body); });

  const now = Date.now() / 1000;
  push(lag.t, now);
  for (const f of feeds) {
    if (!lag.series.has(f.id)) lag.series.set(f.id, new Array(lag.t.length - 1).fill(null));
  }
  for (const [id, values] of lag.series) {
    const s = stats.get(id);
    push(values, s ? s.checkpoint_lag_seconds : null);
  }

  const p = await api("GET", "/api/v2/pipeline/metrics");
  pipeline = p.ok ? p.body : { error: (p.body && p.body.message) || `answered ${p.status}` };
  if (p.ok && p.body.configured) {
    const fresh = p.body.samples.filter(s => s.name === "lakefeed_pipeline_freshness_seconds").map(s => s.value);
    push(freshness.t, now);
    push(freshness.values, fresh.length ? Math.max(...fresh) : null);
  }

  if (view && view.name === "changefeed" && (metadata.id !== view.id || Date.now() - metadata.at > METADATA_EVERY_MS)) {
    const m = await api("GET", `/api/v2/changefeeds/${encodeURIComponent(view.id)}/sink/metadata`);
    Object.assign(metadata, { id: view.id, at: Date.now(), answer: m });
  }
  status.textContent = `updated ${new Date().toLocaleTimeString()}`;
  status.className = "muted";
}

function lineChart(container, title, seriesLabels, unit) {
  const opts = {
    title, width: Math.max(300, container.clientWidth - 8), height: 220,
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [{}, { label: unit, size: 60 }],
    series: [{}, ...seriesLabels.map((label, i) => ({
      label, stroke: ["#2f6fde", "#d9534f", "#28a745", "#f0ad4e", "#6f42c1"][i % 5], width: 2, spanGaps: false,
    }))],
  };
  return new uPlot(opts, [[], ...seriesLabels.map(() => [])], container);
}

function setChart(view, key, container, title, labels, unit, data) {
  // The chart is rebuilt only when its series change; otherwise it just gets the new data.
  const signature = labels.join("\u0000");
  let entry = view.charts[key];
  if (!entry || entry.signature !== signature) {
    if (entry) entry.plot.destroy();
    container.replaceChildren();
    entry = view.charts[key] = { signature, plot: lineChart(container, title, labels, unit) };
  }
  entry.plot.setData(data);
  container.dataset.points = String(data[0].length);  // the browser test reads how far the chart got
}

// ---------------------------------------------------------------- pages

function renderOverview(v) {
  const rows = feeds.map(f => {
    const s = stats.get(f.id);
    const cp = f.checkpoint;
    return [
      el("a", { href: `#/changefeed/${encodeURIComponent(f.id)}`, class: "feed-link" }, f.id),
      stateBadge(f.state),
      cp ? `${cp.file}:${cp.pos}` : "–",
      (cp && cp.commit_time) || "–",
      s ? fmt(s.checkpoint_lag_seconds) : "–",
      f.owner || "–",
      f.error ? el("span", { class: "bad" }, f.error.message) : "",
    ];
  });
  v.parts.list.replaceChildren(feeds.length
    ? table(["changefeed", "state", "checkpoint", "commit time", "lag (s)", "owner", "error"], rows, [4])
    : el("p", { class: "muted" }, "No changefeeds. Create one with `changefeed create` (docs/changefeed.md)."));
  const ids = [...lag.series.keys()];
  setChart(v, "lag", v.parts.chart, "Checkpoint lag", ids, "seconds", [lag.t, ...ids.map(id => lag.series.get(id))]);
}

function overviewPage() {
  const list = el("div", { id: "feeds" });
  const chart = el("div", { id: "lag-chart", class: "chart" });
  return {
    nodes: [el("h1", {}, "Changefeeds"), el("section", {}, list),
      el("section", {}, el("h2", {}, "Checkpoint lag over time"), chart)],
    parts: { list, chart }, render: renderOverview,
  };
}

// Pause answers only once the owner has stopped and released the changefeed (up to seconds), so a Resume
// clicked meanwhile can be answered first: the message shows the last clicked action, not the last answered.
let lastAction = 0;

async function act(id, verb, message) {
  const mine = ++lastAction;
  const answer = await api("POST", `/api/v2/changefeeds/${encodeURIComponent(id)}/${verb}`);
  if (mine !== lastAction) {
    await refresh();
    return;
  }
  if (answer.ok) {
    message.textContent = `${verb}d: state ${answer.body.state}`;
    message.className = "message ok";
  } else {
    // The server's own refusal, as the CLI prints it (e.g. a finished changefeed cannot be resumed).
    message.textContent = (answer.body && answer.body.message) || `${verb} failed (${answer.status})`;
    message.className = "message error";
  }
  await refresh();
}

function renderChangefeed(v) {
  const f = feeds.find(x => x.id === v.id);
  const s = stats.get(v.id);
  v.parts.state.replaceChildren(f ? stateBadge(f.state) : el("span", { class: "bad" }, "not found"));
  if (!f) {
    v.parts.detail.replaceChildren(el("p", { class: "bad" }, `changefeed ${v.id} does not exist (any more)`));
    return;
  }
  const cp = f.checkpoint;
  v.parts.detail.replaceChildren(el("dl", {},
    el("dt", {}, "checkpoint"), el("dd", { id: "checkpoint" }, cp ? `${cp.file}:${cp.pos}${cp.gtid ? ` (gtid ${cp.gtid})` : ""}` : "–"),
    el("dt", {}, "commit time"), el("dd", {}, (cp && cp.commit_time) || "–"),
    el("dt", {}, "checkpoint lag"), el("dd", { id: "lag" }, s ? `${fmt(s.checkpoint_lag_seconds)} s` : "–"),
    el("dt", {}, "owner"), el("dd", {}, f.owner || "–"),
    el("dt", {}, "error"), el("dd", { class: f.error ? "bad" : "" }, f.error ? f.error.message : "none"),
    el("dt", {}, "next retry"), el("dd", {}, f.next_retry || "–")));
  const values = lag.series.get(v.id) || [];
  setChart(v, "lag", v.parts.chart, "Checkpoint lag", [v.id], "seconds", [lag.t, values]);

  const tables = Object.entries((s && s.tables) || {}).sort();
  v.parts.tables.replaceChildren(tables.length
    ? table(["table", "rows", "rows/s", "bytes", "bytes/s"],
      tables.map(([name, t]) => [name, fmt(t.rows, 0), fmt(t.rows_per_second), bytes(t.bytes), `${bytes(t.bytes_per_second)}/s`]),
      [1, 2, 3, 4])
    : el("p", { class: "muted" }, "No rows delivered yet."));

  const m = metadata.id === v.id ? metadata.answer : null;
  if (!m) {
    v.parts.cluster.replaceChildren(el("p", { class: "muted" }, "asking the sink's brokers…"));
  } else if (!m.ok || m.body.error) {
    const why = m.ok ? m.body.error : (m.body && m.body.message) || `answered ${m.status}`;
    v.parts.cluster.replaceChildren(el("p", { class: "bad", id: "cluster-error" }, why));
  } else {
    const c = m.body;
    const brokers = table(["broker", "host:port", "role"],
      c.brokers.map(b => [b.node_id, `${b.host}:${b.port}`, b.node_id === c.controller_id ? "controller" : ""]));
    const rows = [];
    for (const topic of c.topics) {
      for (const p of topic.partitions) {
        const offline = p.leader < 0;
        const under = p.isr.length < p.replicas.length;
        rows.push([topic.name === c.topic ? el("strong", {}, topic.name) : topic.name, p.partition,
          offline ? el("span", { class: "bad" }, "none") : p.leader, p.replicas.join(", "), p.isr.join(", "),
          p.error ? el("span", { class: "bad" }, p.error)
            : offline ? el("span", { class: "bad" }, "offline")
              : under ? el("span", { class: "bad" }, "under-replicated") : "ok"]);
      }
    }
    v.parts.cluster.replaceChildren(el("p", { class: "muted" }, `bootstrap ${c.bootstrap}`), brokers,
      el("h2", { style: "margin-top:12px" }, "Topics"),
      el("div", { id: "topics" }, table(["topic", "partition", "leader", "replicas", "ISR", "status"], rows, [1])));
  }
}

function changefeedPage(id) {
  const state = el("span", { id: "feed-state" });
  const message = el("span", { id: "action-message", class: "message" });
  const detail = el("div"), chart = el("div", { id: "lag-chart", class: "chart" });
  const tables = el("div", { id: "tables" }), cluster = el("div", { id: "cluster" });
  return {
    nodes: [
      el("h1", {}, el("span", {}, `Changefeed ${id}`), state,
        el("button", { id: "pause", onclick: () => act(id, "pause", message) }, "Pause"),
        el("button", { id: "resume", onclick: () => act(id, "resume", message) }, "Resume"), message),
      el("section", {}, detail),
      el("section", {}, el("h2", {}, "Checkpoint lag over time"), chart),
      el("section", {}, el("h2", {}, "Tables"), tables),
      el("section", {}, el("h2", {}, "Sink cluster"), cluster),
    ],
    parts: { state, detail, chart, tables, cluster }, render: renderChangefeed,
  };
}

function renderPipeline(v) {
  if (!pipeline) return;
  const configured = !pipeline.error && pipeline.configured;
  v.parts.chartSection.hidden = !configured;
  if (pipeline.error) {
    v.parts.body.replaceChildren(el("p", { class: "bad", id: "pipeline-error" }, pipeline.error));
    return;
  }
  if (!configured) {
    v.parts.body.replaceChildren(el("p", { id: "no-pipeline" }, "No pipeline configured. ",
      el("span", { class: "muted" }, "Start the server with --pipeline-metrics-url pointing at the pipeline's " +
        "--metrics-port to see its batches and freshness here.")));
    return;
  }
  const now = Date.now() / 1000;
  const labels = l => Object.entries(l).map(([k, val]) => `${k}=${val}`).join(", ") || "–";
  const rows = pipeline.samples.map(s => [s.name, labels(s.labels),
    s.name.endsWith("_timestamp_seconds")
      ? `${new Date(s.value * 1000).toISOString()} (${fmt(now - s.value)} s ago)` : fmt(s.value, 3)]);
  v.parts.body.replaceChildren(el("p", { class: "muted" }, `metrics from ${pipeline.url}`),
    rows.length ? el("div", { id: "pipeline-samples" }, table(["metric", "labels", "value"], rows))
      : el("p", { class: "muted" }, "The pipeline has not reported a batch yet."));
  setChart(v, "freshness", v.parts.chart, "Freshness (now minus newest commit applied)", ["freshness"], "seconds",
    [freshness.t, freshness.values]);
}

function pipelinePage() {
  const body = el("div", { id: "pipeline" });
  const chart = el("div", { id: "freshness-chart", class: "chart" });
  const chartSection = el("section", {}, el("h2", {}, "Freshness over time"), chart);
  chartSection.hidden = true;
  return {
    nodes: [el("h1", {}, "Spark pipeline"), el("section", {}, body), chartSection],
    parts: { body, chart, chartSection }, render: renderPipeline,
  };
}

// ---------------------------------------------------------------- routing and the poll loop

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [name, ...rest] = hash.split("/");
  if (name === "changefeed" && rest.length) return { name: "changefeed", id: decodeURIComponent(rest.join("/")) };
  if (name === "pipeline") return { name: "pipeline" };
  return { name: "overview" };
}

function show() {
  const r = route();
  const page = r.name === "changefeed" ? changefeedPage(r.id) : r.name === "pipeline" ? pipelinePage() : overviewPage();
  if (view) Object.values(view.charts).forEach(c => c.plot.destroy());
  view = { ...r, ...page, charts: {} };
  document.getElementById("page").replaceChildren(...page.nodes);
  document.querySelectorAll("nav a").forEach(a => a.classList.toggle("active", a.dataset.page ===
    (r.name === "changefeed" ? "overview" : r.name)));
  document.title = r.name === "changefeed" ? `${r.id} · Lakefeed` : "Lakefeed console";
  if (polled) view.render(view);  // before the first poll there is nothing to show yet
  refresh();
}

let timer = null;
let polled = false;
async function refresh() {
  clearTimeout(timer);
  try {
    await poll();
    polled = true;
    view.render(view);
  } finally {
    timer = setTimeout(refresh, REFRESH_MS);
  }
}

window.addEventListener("hashchange", show);
show();
