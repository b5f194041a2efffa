// The reactive-spark console: sources, live batches and jobs, and the lineage as SVG.
// Plain JavaScript served from the package: no CDN, no build step, nothing inline (the page's
// Content-Security-Policy allows only these files). Paths are relative, so the console works
// wherever it is mounted (`/`, `/reactive/`, ...).
//
// Signing in: a login URL's `?token=` is moved to the tab's sessionStorage and removed from the
// address bar; every API request then sends `Authorization: Bearer <token>`. The live stream is
// read with fetch() (EventSource cannot send that header) and parsed as server-sent events.
"use strict";

const MAX_ROWS = 200;
const RECONNECT_MS = 2000;
const TOKEN_KEY = "reactive-spark-token";
const state = { batches: new Map(), sources: new Map(), selected: null, graph: null, failedJobs: 0, events: 0 };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
  return node;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

// -- signing in ------------------------------------------------------------------------------------
function takeTokenFromAddress() {
  const address = new URL(window.location.href);
  const token = address.searchParams.get("token");
  if (token === null) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  address.searchParams.delete("token");
  window.history.replaceState(null, "", address.pathname + address.search + address.hash);
}

function withToken(headers = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { ...headers, Authorization: `Bearer ${token}` } : headers;
}

function askToSignIn() {
  const form = document.getElementById("signin");
  form.hidden = false;
  document.getElementById("connection").textContent = "sign in to see it live";
}

function setUpSignIn() {
  const form = document.getElementById("signin");
  form.addEventListener("submit", (submitted) => {
    submitted.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("signin-token").value.trim());
    window.location.reload();
  });
}

async function api(path, options = {}) {
  const response = await fetch(path, { ...options, cache: "no-store", headers: withToken(options.headers) });
  if (response.status === 401) askToSignIn();
  return response;
}

async function getJSON(path) {
  const response = await api(path);
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

const utc = (iso) => (iso ? iso.replace("T", " ").replace("Z", "") : "—");
const seconds = (value) => (value == null ? "—" : `${value.toFixed(2)} s`);

// -- sources -------------------------------------------------------------------------------------
function sourceRow(source) {
  return el(
    "tr",
    { "data-source": source.name },
    el("td", {}, source.name),
    el("td", {}, source.kind),
    el("td", { class: "events" }, source.events),
    el("td", { class: "last-fired" }, utc(source.lastFiredUtc)),
    el("td", {}, utc(source.nextFireUtc)),
    el("td", {}, source.catchUp),
    el("td", { class: "queue", title: `bound ${source.maxQueued}, ${source.overflowPolicy} past it` }, `${source.queueDepth} / ${source.maxQueued}`),
    el("td", { class: "dropped" }, source.coalesced ? `${source.dropped} (+${source.coalesced} coalesced)` : source.dropped),
    el(
      "td",
      {},
      source.fireable
        ? el("button", { class: "fire", "data-source": source.name, onclick: () => fire(source.name) }, "fire")
        : ""
    )
  );
}

async function loadSources() {
  const sources = await getJSON("api/sources");
  state.sources = new Map(sources.map((source) => [source.name, source]));
  document.querySelector("#sources tbody").replaceChildren(...sources.map(sourceRow));
}

// An event the live stream reports: count it for its source at once (the poll only adds the
// next fire times).
function sourceFired(event) {
  const source = state.sources.get(event.source);
  if (!source) return;
  source.events += 1;
  if (source.lastFired == null || event.time >= source.lastFired) {
    source.lastFired = event.time;
    source.lastFiredUtc = event.timeUtc;
  }
  const row = document.querySelector(`#sources tr[data-source="${CSS.escape(source.name)}"]`);
  if (row) row.replaceWith(sourceRow(source));
}

async function fire(name) {
  const button = document.querySelector(`button.fire[data-source="${CSS.escape(name)}"]`);
  if (button) button.disabled = true;
  try {
    const response = await api(`api/sources/${encodeURIComponent(name)}/fire`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: "null",
    });
    const answer = await response.json();
    if (!response.ok) alert(`${name}: ${answer.error}`);
  } finally {
    if (button) button.disabled = false;
  }
}

// -- batches -------------------------------------------------------------------------------------
function batchRow(batch) {
  const failed = batch.jobs.filter((job) => job.status === "failed");
  const firstError = failed.length && failed[0].error ? `${failed[0].error.type}: ${failed[0].error.message}` : "";
  const row = el(
    "tr",
    {
      id: `batch-${batch.instanceId}`,
      class: `batch ${batch.status === "failed" ? "failed" : ""} ${state.selected === batch.instanceId ? "selected" : ""}`,
      onclick: () => select(batch.instanceId),
    },
    el("td", {}, batch.instanceId),
    el("td", {}, `${batch.source}#${batch.index}`),
    el("td", {}, utc(batch.timeUtc)),
    el("td", { class: `status ${batch.status.replace(" ", "-")}` }, batch.status),
    el("td", {}, failed.length ? `${batch.jobs.length} (${failed.length} failed)` : batch.jobs.length),
    el("td", {}, seconds(batch.duration)),
    el("td", { class: "error-text" }, firstError)
  );
  return row;
}

function upsertBatch(batch) {
  const known = state.batches.get(batch.instanceId);
  const merged = known ? { ...known, ...batch, jobs: batch.jobs.length ? batch.jobs : known.jobs } : batch;
  state.batches.set(batch.instanceId, merged);
  const body = document.querySelector("#batches tbody");
  const row = batchRow(merged);
  const old = document.getElementById(`batch-${batch.instanceId}`);
  if (old) old.replaceWith(row);
  else body.prepend(row);
  while (body.children.length > MAX_ROWS) {
    const last = body.lastElementChild;
    state.batches.delete(Number(last.id.replace("batch-", "")));
    last.remove();
  }
  document.getElementById("count-batches").textContent = state.batches.size;
  if (state.selected === batch.instanceId) showDetail(merged);
}

function updateJob(job) {
  const batch = state.batches.get(job.instanceId);
  if (!batch) return;
  const jobs = batch.jobs.filter((known) => known.streamId !== job.streamId);
  jobs.push(job);
  upsertBatch({ ...batch, jobs });
}

async function select(instanceId) {
  state.selected = instanceId;
  document.querySelectorAll("#batches tr.selected").forEach((row) => row.classList.remove("selected"));
  document.getElementById(`batch-${instanceId}`)?.classList.add("selected");
  showDetail(await getJSON(`api/batches/${instanceId}`));
}

function showDetail(batch) {
  const panel = document.getElementById("detail");
  panel.hidden = false;
  document.getElementById("detail-title").textContent =
    `Batch ${batch.instanceId}: ${batch.source}#${batch.index} at ${utc(batch.timeUtc)} — ${batch.status}`;
  document.querySelector("#jobs tbody").replaceChildren(
    ...batch.jobs.map((job) =>
      el(
        "tr",
        { class: job.status === "failed" ? "failed" : "" },
        el("td", {}, job.stream),
        el("td", {}, job.kind),
        el("td", {}, job.function ?? ""),
        el("td", { class: `status ${job.status}` }, job.status),
        el("td", {}, seconds(job.duration)),
        el("td", { class: "spark-jobs" }, ...sparkJobLinks(job))
      )
    )
  );
  document.getElementById("errors").replaceChildren(
    ...batch.jobs
      .filter((job) => job.error)
      .map((job) =>
        el(
          "div",
          {},
          el("p", { class: "error-text" }, `${job.stream}: ${job.error.type}: ${job.error.message}` +
            (job.error.location ? ` (raised in ${job.error.location})` : "")),
          el("pre", { class: "traceback" }, job.error.traceback)
        )
      )
  );
  highlight(batch.jobs);
}

// Links to the job's Spark jobs in Spark's own UI (in a single batch's answer, when the UI is on).
function sparkJobLinks(job) {
  return (job.sparkJobs ?? []).flatMap((spark, position) => [
    position ? " " : "",
    el("a", { href: spark.url, target: "_blank", rel: "noopener" }, `job ${spark.id}`),
  ]);
}

// -- problems ----------------------------------------------------------------------------------------
function problem(text, instanceId) {
  const list = document.getElementById("problems");
  list.querySelector(".none")?.remove();
  const item = el("li", instanceId == null ? {} : { class: "clickable", onclick: () => select(instanceId) }, text);
  list.prepend(item);
  while (list.children.length > 50) list.lastElementChild.remove();
}

function jobProblem(job, instanceId) {
  const error = job.error ? `${job.error.type}: ${job.error.message}` : "failed";
  const where = job.error?.location ? ` (raised in ${job.error.location})` : "";
  problem(`batch ${instanceId}: ${job.stream}: ${error}${where}`, instanceId);
}

// -- lineage ---------------------------------------------------------------------------------------
function drawLineage(graph) {
  state.graph = graph;
  const root = document.getElementById("lineage");
  const depth = new Map();
  for (const stream of graph.streams) {
    const parents = stream.parents.map((parent) => depth.get(parent.id) ?? 0);
    depth.set(stream.id, stream.parents.length ? Math.max(...parents) + 1 : 0);
  }
  const columns = new Map();
  const place = new Map();
  const put = (key, column) => {
    const row = columns.get(column) ?? 0;
    columns.set(column, row + 1);
    place.set(key, { x: 20 + (column + 1) * 200, y: 20 + row * 58 });
  };
  for (const source of graph.sources) put(`source-${source.name}`, -1);
  for (const stream of graph.streams) put(`stream-${stream.id}`, depth.get(stream.id));
  const width = 20 + (Math.max(0, ...columns.keys()) + 2) * 200;
  const height = 40 + Math.max(1, ...columns.values()) * 58;
  root.setAttribute("width", width);
  root.setAttribute("height", height);
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#94a3b8" }));
  defs.append(marker);
  const edges = svg("g");
  const nodes = svg("g");
  const link = (from, to, kind) => {
    const a = place.get(from);
    const b = place.get(to);
    if (!a || !b) return;
    edges.append(svg("path", { class: `edge ${kind}`, d: `M ${a.x + 170} ${a.y + 17} C ${a.x + 185} ${a.y + 17}, ${b.x - 15} ${b.y + 17}, ${b.x} ${b.y + 17}` }));
  };
  for (const stream of graph.streams) {
    for (const parent of stream.parents) {
      link(`stream-${parent.id}`, `stream-${stream.id}`, parent.dependency.startsWith("EventDependency") ? "" : "window");
    }
    for (const name of stream.boundTo) link(`source-${name}`, `stream-${stream.id}`, "binding");
  }
  for (const source of graph.sources) {
    for (const parent of source.parents) link(`source-${parent}`, `source-${source.name}`, "binding");
    const { x, y } = place.get(`source-${source.name}`);
    const group = svg("g", { class: "node source", id: `source-${source.name}` });
    group.append(svg("ellipse", { cx: x + 85, cy: y + 17, rx: 85, ry: 17 }));
    group.append(svg("text", { x: x + 85, y: y + 21, "text-anchor": "middle" }, clip(`${source.name} (${source.kind})`)));
    group.append(svg("title", {}, `${source.name}: ${source.kind}`));
    nodes.append(group);
  }
  for (const stream of graph.streams) {
    const { x, y } = place.get(`stream-${stream.id}`);
    const kind = stream.output ? "output" : stream.input ? "input" : "";
    const group = svg("g", { class: `node stream ${kind}`, id: `stream-${stream.id}` });
    group.append(svg("rect", { x, y, width: 170, height: 34, rx: 6 }));
    group.append(svg("text", { x: x + 8, y: y + 21 }, clip(stream.name)));
    group.append(svg("title", {}, `${stream.name}\n${stream.parents.map((p) => p.dependency).join("\n")}`));
    nodes.append(group);
  }
  root.replaceChildren(defs, edges, nodes);
}

const clip = (text) => (text.length > 26 ? `${text.slice(0, 25)}…` : text);

function highlight(jobs) {
  document.querySelectorAll("#lineage .node").forEach((node) => node.classList.remove("highlight", "failed"));
  for (const job of jobs) {
    const node = document.getElementById(`stream-${job.streamId}`);
    if (node) node.classList.add(job.status === "failed" ? "failed" : "highlight");
  }
}

// -- live updates ------------------------------------------------------------------------------------
const liveHandlers = {
  event(event) {
    state.events += 1;
    document.getElementById("count-events").textContent = state.events;
    sourceFired(event);
  },
  batch: upsertBatch,
  dropped(drop) {
    const source = state.sources.get(drop.source);
    if (source) {
      if (drop.reason === "coalesce") source.coalesced += drop.count;
      else source.dropped += drop.count;
      const row = document.querySelector(`#sources tr[data-source="${CSS.escape(source.name)}"]`);
      if (row) row.replaceWith(sourceRow(source));
    }
    if (drop.reason !== "coalesce") problem(`source ${drop.source}: ${drop.count} events dropped (${drop.reason})`);
  },
  deadline(missed) {
    problem(missed.description);
  },
  "source-error"(failure) {
    problem(`source ${failure.source}: ${failure.description}`);
  },
  job(job) {
    if (job.status === "failed") {
      state.failedJobs += 1;
      document.getElementById("count-failed").textContent = state.failedJobs;
      jobProblem(job, job.instanceId);
    }
    updateJob(job);
  },
};

// One server-sent event (the lines between blank lines): its `event:` type and `data:` JSON.
function dispatch(block) {
  let kind = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") kind = value;
    else if (field === "data") data.push(value);
  }
  const handler = liveHandlers[kind];
  if (handler && data.length) handler(JSON.parse(data.join("\n")));
}

function showConnection(online, text) {
  const status = document.getElementById("connection");
  status.textContent = text;
  status.className = `connection ${online ? "online" : "offline"}`;
}

async function follow() {
  const response = await api("api/events/stream", { headers: { Accept: "text/event-stream" } });
  if (response.status === 401) return false;
  if (!response.ok) throw new Error(`api/events/stream: ${response.status}`);
  showConnection(true, "live");
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return true;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      dispatch(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
    }
  }
}

async function connect() {
  for (;;) {
    try {
      if (!(await follow())) return; // not signed in: the sign-in form is shown
    } catch (lost) {
      // the console stopped or the network dropped: try again
    }
    showConnection(false, "reconnecting…");
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
  }
}

async function main() {
  takeTokenFromAddress();
  setUpSignIn();
  await loadSources();
  connect();
  const [graph, batches, events, deadlines] = await Promise.all([
    getJSON("api/graph"),
    getJSON("api/batches?limit=100"),
    getJSON("api/events?limit=1000"),
    getJSON("api/deadlines?limit=50"),
  ]);
  for (const missed of deadlines.reverse()) problem(missed.description);
  drawLineage(graph);
  state.events = events.length;
  document.getElementById("count-events").textContent = state.events;
  for (const batch of batches.reverse()) {
    upsertBatch(batch);
    for (const job of batch.jobs) if (job.status === "failed") jobProblem(job, batch.instanceId);
  }
  state.failedJobs = batches.flatMap((batch) => batch.jobs).filter((job) => job.status === "failed").length;
  document.getElementById("count-failed").textContent = state.failedJobs;
  setInterval(() => loadSources().catch(() => {}), 2000);
}

main().catch((failed) => {
  if (!sessionStorage.getItem(TOKEN_KEY)) askToSignIn();
  else showConnection(false, String(failed.message ?? failed));
});
