// The fleet page: plain JavaScript over the JSON endpoints of fleetfit ui. Every text that
// comes from the hub is set with textContent, never as HTML.
"use strict";

const POLL_MS = 5000;
const state = {
  view: "fleet",
  readAt: null,
  fleetOffset: 0,
  placementsOffset: 0,
  fit: null, // the fleet filter's query, or null
  explained: "", // namespace/name of the why-not view
  timer: null,
};

// el builds an element: el("td", {class: "num"}, "text", child, ...).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k === "style") Object.assign(e.style, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const $ = (id) => document.getElementById(id);

// HubError is an answer of an endpoint that is not data: a refusal of the hub (401, 403) or
// another failure, with the message to show.
class HubError extends Error {
  constructor(code, reason, message) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
  get refusal() { return this.code === 401 || this.code === 403; }
}

async function getJSON(url, init) {
  const resp = await fetch(url, Object.assign({ cache: "no-store" }, init));
  let body = null;
  try { body = await resp.json(); } catch (e) { /* not JSON: said below */ }
  if (!resp.ok) {
    // A refusal or failure has a message; an explanation (the hub's debug JSON) carries its own
    // error, which the grid shows.
    if (body && body.message !== undefined) throw new HubError(resp.status, body.reason, body.message);
    if (!body || body.placement === undefined) throw new HubError(resp.status, resp.statusText, "the page's server answered " + resp.status + " " + resp.statusText);
  }
  return { body, resp };
}

// showRefusal replaces every view's data with the hub's refusal; null hides it.
function showRefusal(err) {
  const box = $("refusal");
  if (!err) { box.hidden = true; document.body.classList.remove("refused"); return; }
  document.body.classList.add("refused");
  $("refusal-title").textContent = err.refusal
    ? (err.code === 403 ? "The hub refused (403 Forbidden): your identity may not read this" : "The hub refused (401 Unauthorized): it does not accept your credentials")
    : err.code === 0 ? "The page's server cannot be reached: is fleetfit ui still running?"
    : "The hub could not be read (" + err.code + (err.reason ? " " + err.reason : "") + ")";
  $("refusal-message").textContent = err.message;
  box.hidden = false;
  for (const id of ["clusters", "placements"]) $(id).tBodies[0].replaceChildren();
  for (const id of ["totals", "whynot-result", "fleet-pager", "placements-pager"]) $(id).replaceChildren();
  $("fit-answer").hidden = true;
}

function setReadAt(t) {
  state.readAt = t ? new Date(t) : null;
  tick();
}

// tick shows the time of the data, and how old it is.
function tick() {
  const span = $("data-time");
  if (!state.readAt) { span.textContent = "not read yet"; span.classList.remove("old"); return; }
  const age = Math.max(0, Math.round((Date.now() - state.readAt.getTime()) / 1000));
  span.textContent = "data of " + state.readAt.toLocaleTimeString() + " (" + age + "s ago)";
  span.dataset.readAt = state.readAt.toISOString();
  span.classList.toggle("old", age > 3 * POLL_MS / 1000);
}

// ---- Fleet ----

function fleetQuery() {
  const q = new URLSearchParams({ offset: state.fleetOffset, limit: 100 });
  const name = $("fleet-name").value.trim();
  if (name) q.set("name", name);
  if (state.fit) {
    for (const [k, v] of Object.entries(state.fit)) if (v) q.set(k, v);
    if ($("fit-only").checked) q.set("only", "fits");
  }
  return q;
}

async function loadFleet() {
  const { body } = await getJSON("api/fleet?" + fleetQuery());
  showRefusal(null);
  setReadAt(body.readAt);
  $("hub").textContent = body.hub;
  renderTotals(body);
  renderModels(body.models);
  renderClusters(body);
  renderPager($("fleet-pager"), body.offset, body.limit, body.matching, body.clusters, "clusters", (o) => { state.fleetOffset = o; refresh(); });
}

function meter(free, alloc) {
  const m = el("div", { class: "meter" }, el("div"));
  m.firstChild.style.width = alloc > 0 ? (100 * free / alloc).toFixed(1) + "%" : "0";
  return m;
}

function renderTotals(f) {
  const t = f.totals;
  const cards = [
    el("div", { class: "card" }, el("div", { class: "label" }, "Clusters"),
      el("div", { class: "value", dataset: { total: "clusters" } }, f.clusters),
      el("div", { class: "muted" }, t.withInventory + " reporting" + (t.stale ? ", " + t.stale + " stale" : ""))),
    el("div", { class: "card" }, el("div", { class: "label" }, "CPU free / allocatable"),
      el("div", { class: "value", dataset: { total: "cpu" } }, t.cpu.text), meter(t.cpu.freeMilli, t.cpu.allocatableMilli)),
    el("div", { class: "card" }, el("div", { class: "label" }, "Memory free / allocatable"),
      el("div", { class: "value", dataset: { total: "memory" } }, t.memory.text), meter(t.memory.freeMilli, t.memory.allocatableMilli)),
  ];
  for (const g of t.gpus || []) {
    cards.push(el("div", { class: "card" }, el("div", { class: "label" }, (g.model || g.resource) + " free / allocatable"),
      el("div", { class: "value", dataset: { total: "gpu", model: g.model } }, g.free + "/" + g.allocatable),
      meter(g.free, g.allocatable)));
  }
  $("totals").replaceChildren(...cards);
}

function renderModels(models) {
  const sel = $("fit-model");
  const chosen = sel.value;
  const opts = [el("option", { value: "" }, "any GPU")];
  for (const m of models || []) {
    opts.push(el("option", { value: m.model, dataset: { resource: m.resource } }, m.model || m.resource));
  }
  sel.replaceChildren(...opts);
  sel.value = chosen;
}

function nodeBox(tile) {
  const box = el("div", { class: "node" + (tile.tainted ? " tainted" : ""), title: tileTitle(tile) });
  if (tile.gpusAllocatable > 0 || tile.gpus > 0) {
    const g = el("div", { class: "gpus" });
    const all = Math.max(tile.gpusAllocatable, tile.gpus);
    for (let i = 0; i < Math.min(all, 16); i++) g.append(el("span", { class: "gpu " + (i < tile.gpus ? "free" : "used") }));
    box.append(g);
  }
  const bar = el("div", { class: "cpu" }, el("div"));
  const a = tile.cpu.allocatable;
  bar.firstChild.style.width = a > 0 ? (100 * tile.cpu.free / a).toFixed(0) + "%" : "0";
  box.append(bar);
  const perRow = Math.min(Math.max(tile.gpusAllocatable, tile.gpus), 4);
  box.style.width = Math.max(26, perRow * 12 + 6) + "px";
  return box;
}

// cores and bytes print milli-amounts as the tables do: one decimal at most, rounded down.
function oneDecimal(v) { return String(Math.floor(v * 10) / 10); }
function cores(milli) { return oneDecimal(milli / 1000); }
function bytes(milli) {
  const units = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
  let v = milli / 1000, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return oneDecimal(v) + units[i];
}

function tileTitle(t) {
  let s = t.count + " node" + (t.count > 1 ? "s" : "") + ", each with ";
  if (t.gpusAllocatable > 0) s += t.gpus + "/" + t.gpusAllocatable + " " + (t.gpuModel || "GPUs") + " free, ";
  s += "cpu " + cores(t.cpu.free) + "/" + cores(t.cpu.allocatable) + ", memory " + bytes(t.memory.free) + "/" + bytes(t.memory.allocatable) + " free";
  if (t.tainted) s += " (tainted)";
  return s;
}

// room draws each node as a box; a tile of many nodes draws up to 6 boxes and says how many.
function room(c) {
  const div = el("div", { class: "room" });
  let drawn = 0;
  for (const t of c.tiles || []) {
    const n = Math.min(t.count, 6);
    for (let i = 0; i < n && drawn < 64; i++, drawn++) div.append(nodeBox(t));
    if (t.count > n) div.append(el("span", { class: "times" }, "×" + t.count));
  }
  if (c.omittedNodes) div.append(el("span", { class: "times" }, "+" + c.omittedNodes + " nodes"));
  return div;
}

function renderClusters(f) {
  const table = $("clusters");
  table.classList.toggle("fitting", !!f.fit);
  const answer = $("fit-answer");
  if (f.fit) {
    answer.hidden = false;
    answer.textContent = f.fit.request + ": fits now on " + f.fit.fits + " of " + f.clusters + " cluster" + (f.clusters === 1 ? "" : "s") + ".";
  } else {
    answer.hidden = true;
  }
  const rows = f.items.map((c) => {
    const r = c.row;
    const tr = el("tr", { dataset: { cluster: c.name }, class: c.fit ? (c.fit.fits ? "fits" : "nofit") : "" },
      el("td", { class: "name" }, c.name),
      el("td", { dataset: { col: "available" } }, r.available),
      el("td", { class: "num", dataset: { col: "nodes" } }, r.nodes),
      el("td", { class: "num", dataset: { col: "cpu", free: c.cpu ? c.cpu.free : "", allocatable: c.cpu ? c.cpu.allocatable : "" } }, r.cpu),
      el("td", { class: "num", dataset: { col: "memory", free: c.memory ? c.memory.free : "", allocatable: c.memory ? c.memory.allocatable : "" } }, r.memory),
      el("td", { dataset: { col: "gpus" } }, r.gpus),
      el("td", { dataset: { col: "largest" } }, c.largest ? c.largest.text : "-"),
      el("td", { dataset: { col: "room" } }, room(c)),
      el("td", { dataset: { col: "machines" } }, r.machines),
      el("td", { dataset: { col: "canAdd" } }, r.canAdd),
      el("td", { class: c.stale ? "no" : "", dataset: { col: "inventory" } }, r.inventory),
      el("td", { dataset: { col: "agent" } }, r.agent),
      el("td", { class: "fit-col", dataset: { col: "fit" } }, c.fit ? fitCell(c.fit) : ""),
    );
    return tr;
  });
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 13, class: "muted" }, f.clusters ? "No cluster matches." : "The hub has no managed clusters.")));
  table.tBodies[0].replaceChildren(...rows);
}

function fitCell(fit) {
  if (fit.fits) return [el("span", { class: "yes" }, "fits"), el("div", { class: "muted" }, fit.replicas + " replica" + (fit.replicas === 1 ? "" : "s") + " at once"), fit.reason ? el("div", { class: "no" }, fit.reason) : null];
  return [el("span", { class: "no" }, "no"), el("div", {}, fit.reason)];
}

function renderPager(div, offset, limit, matching, total, what, go) {
  const parts = [];
  const to = Math.min(offset + limit, matching);
  parts.push(el("span", {}, matching === 0 ? "none" : (offset + 1) + "–" + to + " of " + matching + (matching !== total ? " matching (" + total + " " + what + ")" : " " + what)));
  if (offset > 0) parts.push(el("button", { type: "button", onclick: () => go(Math.max(0, offset - limit)) }, "previous"));
  if (to < matching) parts.push(el("button", { type: "button", onclick: () => go(offset + limit) }, "next"));
  div.replaceChildren(...parts);
}

// ---- Placements ----

async function loadPlacements() {
  const q = new URLSearchParams({ offset: state.placementsOffset, limit: 100 });
  const name = $("placements-name").value.trim();
  if (name) q.set("name", name);
  const { body } = await getJSON("api/placements?" + q);
  showRefusal(null);
  setReadAt(body.readAt);
  $("hub").textContent = body.hub;
  const rows = body.items.map((p) => {
    const key = p.namespace + "/" + p.name;
    const sat = p.satisfied === "True" ? "good" : p.satisfied === "False" ? "bad" : "warn";
    return el("tr", { dataset: { placement: key } },
      el("td", { class: "name" }, key),
      el("td", { class: "num" }, p.selected),
      el("td", {}, p.decisions.length ? p.decisions.map((d) => el("span", { class: "chip good", title: d.reason || "" }, d.cluster + " (" + d.score + ")")) : el("span", { class: "muted" }, "none")),
      el("td", { title: p.message || "" }, el("span", { class: "chip " + sat }, p.satisfied), " ", el("span", { class: "muted" }, p.reason)),
      el("td", {}, p.intents.length ? p.intents.map((i) => el("div", { title: i.message || "" }, el("strong", {}, i.name), " ",
        (i.states.length ? i.states : ["pending"]).map((s) => el("span", { class: "chip " + (s.startsWith("Not") ? "bad" : s === "Scheduled" || s === "Delivered" ? "good" : "warn") }, s)))) : el("span", { class: "muted" }, "-")),
      el("td", {}, p.intents.flatMap((i) => (i.delivery || []).map((d) => el("div", {},
        el("span", { class: "chip " + (d.state === "Available" ? "good" : d.state === "Failed" || d.state === "Degraded" ? "bad" : "warn") }, d.clusterName + ": " + d.state),
        d.message ? el("span", { class: "muted" }, " " + d.message) : null)))),
      el("td", {}, el("a", { href: "#whynot/" + key }, "why not?")),
    );
  });
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 7, class: "muted" }, body.total ? "No placement matches." : "No Placements on the hub.")));
  $("placements").tBodies[0].replaceChildren(...rows);
  renderPager($("placements-pager"), body.offset, body.limit, body.matching, body.total, "placements", (o) => { state.placementsOffset = o; refresh(); });
  return body;
}

// ---- Why not ----

async function fillPlacementChoice() {
  const sel = $("whynot-placement");
  const { body } = await getJSON("api/placements?limit=500");
  const opts = body.items.map((p) => el("option", { value: p.namespace + "/" + p.name }, p.namespace + "/" + p.name));
  if (state.explained && !body.items.some((p) => p.namespace + "/" + p.name === state.explained)) {
    opts.unshift(el("option", { value: state.explained }, state.explained));
  }
  sel.replaceChildren(...opts);
  if (state.explained) sel.value = state.explained;
}

async function loadWhyNot() {
  await fillPlacementChoice();
  showRefusal(null);
  const key = state.explained || $("whynot-placement").value;
  if (!key) { $("whynot-result").replaceChildren(el("p", { class: "muted" }, "No Placement to explain.")); return; }
  state.explained = key;
  const [ns, name] = key.split("/");
  const { body, resp } = await getJSON("api/explain/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name));
  setReadAt(resp.headers.get("X-Fleetfit-Read-At"));
  $("whynot-result").replaceChildren(...explanation(body));
}

// explanation draws the clusters × filters grid of a debug JSON (scheduler.Explanation), then
// the prioritizers' scores of the feasible clusters.
function explanation(e) {
  const out = [el("h2", {}, "Placement " + e.placement)];
  if (e.error) out.push(el("p", { class: "error" }, e.error));
  if (e.warning) out.push(el("p", { class: "muted" }, "warning: " + e.warning));
  const clusters = e.clusters || [];
  if (!clusters.length) {
    if (!e.error) out.push(el("p", { class: "muted" }, "No cluster is available to it: check its cluster sets and their bindings in its namespace."));
    return out;
  }
  // OCM names each step of the pipeline by the filters run so far; a column is one filter.
  const filters = (e.filteredPiplieResults || []).map((f) => f.plugin || f.name);
  for (const c of clusters) if (c.rejectedBy && !filters.includes(c.rejectedBy)) filters.push(c.rejectedBy);
  const prios = e.prioritizeResults || [];
  const head = el("tr", {}, el("th", {}, "Cluster"), el("th", {}, "Result"),
    filters.map((f) => el("th", {}, f)),
    prios.map((p) => el("th", { title: "weight " + p.weight }, p.name + " (×" + p.weight + ")")), el("th", {}, "Total"));
  const rows = clusters.map((c) => {
    const verdict = c.selected ? "selected" : c.rejectedBy ? "rejected" : "feasible";
    let passed = true;
    const cells = filters.map((f) => {
      if (!passed) return el("td", { class: "skipped", dataset: { filter: f } }, "–");
      if (c.rejectedBy === f) { passed = false; return el("td", { class: "rejected", dataset: { filter: f } }, c.reason || "rejected"); }
      return el("td", { class: "passed", dataset: { filter: f } }, "✓");
    });
    return el("tr", { dataset: { cluster: c.name, verdict } },
      el("td", { class: "name" }, c.name),
      el("td", { class: "verdict-" + verdict }, verdict + (c.note ? " (" + c.note + ")" : "")),
      cells,
      prios.map((p) => el("td", { class: "num" }, c.total !== undefined && c.scores ? String(c.scores[p.name] ?? 0) : "")),
      el("td", { class: "num" }, c.total !== undefined ? String(c.total) : ""));
  });
  out.push(el("div", { class: "scroll" }, el("table", { class: "grid explain" }, el("thead", {}, head), el("tbody", {}, rows))));
  return out;
}

// ---- What if ----

const EXAMPLE = `# A Placement and the HPAIntent that shapes it: 4 A100 GPUs and 64Gi on one node.
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: what-if
  namespace: demo
spec:
  numberOfClusters: 1
---
apiVersion: fleetfit.io/v1alpha1
kind: HPAIntent
metadata:
  name: what-if
  namespace: demo
spec:
  placementRef:
    name: what-if
  consumers:
  - name: trainer
    target: {apiVersion: apps/v1, kind: Deployment, name: trainer, container: trainer}
    requirements:
    - name: gpu
      resource: {name: nvidia.com/gpu, limits: "4"}
    - name: memory
      resource: {name: memory, requests: 64Gi, limits: 64Gi}
    - name: a100
      feature: {key: nvidia.com/gpu.product, operator: In, values: [A100]}
`;

async function askWhatIf(ev) {
  ev.preventDefault();
  const out = $("whatif-result");
  out.replaceChildren(el("p", { class: "muted" }, "Asking…"));
  try {
    const { body } = await getJSON("api/whatif", { method: "POST", headers: { "Content-Type": "application/yaml" }, body: $("whatif-text").value });
    showRefusal(null);
    setReadAt(body.readAt);
    const parts = [el("h2", {}, "The hub would decide")];
    parts.push(el("div", { class: "scroll" }, el("table", { class: "grid", id: "whatif-placements" },
      el("thead", {}, el("tr", {}, ["Placement", "Selected", "Clusters", "Satisfied", "Reason"].map((h) => el("th", {}, h)))),
      el("tbody", {}, body.placements.map((p) => el("tr", { dataset: { placement: p.placement, clusters: p.clusters.join(",") } },
        el("td", { class: "name" }, p.placement), el("td", { class: "num" }, p.selected),
        el("td", { dataset: { col: "clusters" } }, p.clusters.length ? p.clusters.join(", ") : "-"),
        el("td", {}, p.satisfied), el("td", { title: p.message || "" }, p.skipped ? "NotScheduled: " + p.skipped : p.reason + (p.reason === "Misconfigured" ? ": " + p.message : ""))))))));
    if (body.intents.length) {
      parts.push(el("div", { class: "scroll" }, el("table", { class: "grid", id: "whatif-intents" },
        el("thead", {}, el("tr", {}, ["HPAIntent", "Valid", "Scheduled", "Message"].map((h) => el("th", {}, h)))),
        el("tbody", {}, body.intents.map((i) => el("tr", { dataset: { intent: i.intent } },
          el("td", { class: "name" }, i.intent), el("td", {}, i.valid), el("td", {}, i.scheduled), el("td", {}, i.message || "")))))));
    }
    for (const p of body.placements) if (p.explanation) parts.push(...explanation(p.explanation));
    out.replaceChildren(...parts);
  } catch (err) {
    if (err.refusal) { showRefusal(err); out.replaceChildren(); return; }
    out.replaceChildren(el("p", { class: "error", id: "whatif-error" }, err.message));
  }
}

// ---- Views, polling ----

function showView(name) {
  state.view = name;
  for (const v of ["fleet", "placements", "whynot", "whatif"]) $("view-" + v).hidden = v !== name;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.view === name);
}

function route() {
  const hash = decodeURIComponent(location.hash.replace(/^#/, ""));
  const [view, ...rest] = hash.split("/");
  if (view === "whynot" && rest.length === 2) state.explained = rest.join("/");
  showView(["fleet", "placements", "whynot", "whatif"].includes(view) ? view : "fleet");
  refresh();
}

let inFlight = false;
async function refresh() {
  if (inFlight) return;
  inFlight = true;
  try {
    if (state.view === "fleet") await loadFleet();
    else if (state.view === "placements") await loadPlacements();
    else if (state.view === "whynot") await loadWhyNot();
  } catch (err) {
    if (err instanceof HubError) showRefusal(err);
    else showRefusal(new HubError(0, "", err.message));
  } finally {
    inFlight = false;
  }
}

function schedule() {
  clearInterval(state.timer);
  if ($("live").checked) state.timer = setInterval(() => { if (state.view !== "whatif") refresh(); }, POLL_MS);
}

function init() {
  $("fit-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const sel = $("fit-model");
    const opt = sel.selectedOptions[0];
    state.fit = { gpus: $("fit-gpus").value, model: sel.value, gpu: opt && opt.dataset.resource, cpu: $("fit-cpu").value.trim(), memory: $("fit-memory").value.trim() };
    if (!Object.values(state.fit).some((v) => v)) state.fit = null;
    state.fleetOffset = 0;
    refresh();
  });
  $("fit-clear").addEventListener("click", () => {
    for (const id of ["fit-gpus", "fit-cpu", "fit-memory"]) $(id).value = "";
    $("fit-model").value = "";
    state.fit = null;
    refresh();
  });
  $("fit-only").addEventListener("change", () => { state.fleetOffset = 0; refresh(); });
  $("fleet-name").addEventListener("input", () => { state.fleetOffset = 0; refresh(); });
  $("placements-name").addEventListener("input", () => { state.placementsOffset = 0; refresh(); });
  $("placements-form").addEventListener("submit", (ev) => ev.preventDefault());
  $("whynot-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = "#whynot/" + $("whynot-placement").value;
  });
  $("whynot-placement").addEventListener("change", () => { location.hash = "#whynot/" + $("whynot-placement").value; });
  $("whatif-text").value = EXAMPLE;
  $("whatif-form").addEventListener("submit", askWhatIf);
  $("whatif-file").addEventListener("change", async (ev) => {
    const f = ev.target.files[0];
    if (f) $("whatif-text").value = await f.text();
  });
  $("live").addEventListener("change", schedule);
  window.addEventListener("hashchange", route);
  setInterval(tick, 1000);
  schedule();
  route();
}

init();
