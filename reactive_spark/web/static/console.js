// The reactive-spark console: sources, live batches and jobs, and the lineage as SVG.
// Plain JavaScript served from the package: no CDN, no build step. Paths are relative, so the
// console works wherever it is mounted (`/`, `/reactive/`, ...).
"use strict";

const MAX_ROWS = 200;
const state = { batches: new Map(), selected: null, graph: null, failedJobs: 0, events: 0 };

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

async function getJSON(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

const utc = (iso) => (iso ? iso.replace("T", " ").replace("Z", "") : "—");
const seconds = (value) => (value == null ? "—" : `${value.toFixed(2)} s`);

// -- sources -------------------------------------------------------------------------------------
async function loadSources() {
  const sources = await getJSON("api/sources");
  const body = document.querySelector("#sources tbody");
  body.replaceChildren(
    ...sources.map((source) =>
      el(
        "tr",
        { id: `source-row-${source.name}` },
        el("td", {}, source.name),
        el("td", {}, source.kind),
        el("td", {}, source.events),
        el("td", {}, utc(source.lastFiredUtc)),
        el("td", {}, utc(source.nextFireUtc)),
        el("td", {}, source.catchUp),
        el(
          "td",
          {},
          source.fireable
            ? el("button", { class: "fire", "data-source": source.name, onclick: () => fire(source.name) }, "fire")
            : ""
        )
      )
    )
  );
}

async function fire(name) {
  const button = document.querySelector(`button.fire[data-source="${CSS.escape(name)}"]`);
  if (button) button.disabled = true;
  try {
    const response = await fetch(`api/sources/${encodeURIComponent(name)}/fire`, { method: "POST" });
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
        el("td", {}, seconds(job.duration))
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
function connect() {
  const status = document.getElementById("connection");
  const stream = new EventSource("api/events/stream");
  stream.onopen = () => {
    status.textContent = "live";
    status.className = "connection online";
  };
  stream.onerror = () => {
    status.textContent = "reconnecting…";
    status.className = "connection offline";
  };
  stream.addEventListener("event", () => {
    state.events += 1;
    document.getElementById("count-events").textContent = state.events;
  });
  stream.addEventListener("batch", (message) => upsertBatch(JSON.parse(message.data)));
  stream.addEventListener("source-error", (message) => {
    const failure = JSON.parse(message.data);
    problem(`source ${failure.source}: ${failure.description}`);
  });
  stream.addEventListener("job", (message) => {
    const job = JSON.parse(message.data);
    if (job.status === "failed") {
      state.failedJobs += 1;
      document.getElementById("count-failed").textContent = state.failedJobs;
      jobProblem(job, job.instanceId);
    }
    updateJob(job);
  });
}

async function main() {
  connect();
  const [graph, batches, events] = await Promise.all([
    getJSON("api/graph"),
    getJSON("api/batches?limit=100"),
    getJSON("api/events?limit=1000"),
  ]);
  drawLineage(graph);
  state.events = events.length;
  document.getElementById("count-events").textContent = state.events;
  for (const batch of batches.reverse()) {
    upsertBatch(batch);
    for (const job of batch.jobs) if (job.status === "failed") jobProblem(job, batch.instanceId);
  }
  state.failedJobs = batches.flatMap((batch) => batch.jobs).filter((job) => job.status === "failed").length;
  document.getElementById("count-failed").textContent = state.failedJobs;
  await loadSources();
  setInterval(loadSources, 2000);
}

main();
