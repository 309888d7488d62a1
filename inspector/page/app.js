// The inspector page: live mode (frames from the server's WebSocket) and log mode (a recorded JSONL log opened
// from disk or from the server, stepped through record by record).
import { applyFrame, createModel, stepsFromLog } from "./model.js";
import { LogCursor } from "./cursor.js";
import { renderDetails, renderHead, TimelineView, TreeView } from "./view.js";
import { Charts, ChartView } from "./chart-view.js";
import { liveSequence, logSequence, SequenceView, subtreeEvents } from "./sequence-view.js";

const $ = (id) => document.getElementById(id);
const base = location.pathname.endsWith("/") ? location.pathname : `${location.pathname}/`;
const state = {
  mode: "live",
  live: createModel(),
  model: undefined,
  info: { live: false, readOnly: true, log: null },
  selected: "supervisor",
  steps: [],
  position: 0,
  logName: "",
  connected: false,
  /** The view beside the tree: `chart`, `sequence` or `info` (the Details tab). */
  tab: "chart",
  /** The open log's events (sequence view), built once per log, and the selected subtree's, per actor. */
  seq: undefined,
  seqEvents: new Map(),
};
state.model = state.live;

const tree = new TreeView($("tree"), (id) => select(id));
const timeline = new TimelineView($("timeline"));
const charts = new Charts(base);
const chartView = new ChartView($("chart"), charts);
const sequenceView = new SequenceView($("sequence"));

function select(id) {
  state.selected = id;
  tree.select(state.model, id);
  rendered.id = undefined;
  renderNow();
}

function showTab(tab) {
  state.tab = tab;
  $("details").dataset.tab = tab;
  for (const b of document.querySelectorAll(".tab")) b.setAttribute("aria-selected", String(b.dataset.tab === tab));
  for (const id of ["chart", "sequence", "info"]) $(id).hidden = id !== tab;
  rendered.id = undefined;
  renderNow();
}
for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => showTab(b.dataset.tab));

let detailsTimer;
let timelineTimer;
let rendered = { id: undefined, rev: -1, model: undefined };
/** The tree is updated on every frame; details at most every 50 ms (and only when the selected actor changed),
 * the timeline at most every 200 ms: the page's main thread stays free for the next frame. */
function renderSoon() {
  detailsTimer ??= setTimeout(() => {
    detailsTimer = undefined;
    drawDetails();
  }, 50);
  timelineTimer ??= setTimeout(() => {
    timelineTimer = undefined;
    drawTimeline();
  }, 200);
}

/** Stepping through a log redraws at once: one step, one render. */
function renderNow() {
  drawDetails();
  drawTimeline();
}

/** The selected actor's header, and the open tab's view of it. The header and the Details tab are redrawn only
 * when the actor changed; the statechart and sequence views update themselves in place. */
function drawDetails() {
  const a = state.model.actors.get(state.selected);
  const changed = !(rendered.id === state.selected && rendered.model === state.model && rendered.rev === (a?.rev ?? 0));
  if (changed) {
    renderHead($("actor-head"), state.model, state.selected, {
      actions: !state.info.readOnly,
      replaying: state.mode !== "live",
      onStop: stopSession,
    });
  }
  if (state.tab === "chart") void chartView.show(a, { live: state.mode === "live" });
  else if (state.tab === "sequence") drawSequence();
  else if (changed || rendered.tab !== "info") renderDetails($("info"), state.model, state.selected);
  rendered = { id: state.selected, rev: a?.rev ?? 0, model: state.model, tab: state.tab };
}

function drawSequence() {
  const live = state.mode === "live";
  let seq;
  let events;
  if (live) {
    seq = liveSequence(state.model);
    events = subtreeEvents(seq, state.selected);
  } else {
    seq = state.seq ??= logSequence(state.steps);
    events = state.seqEvents.get(state.selected);
    if (!events) state.seqEvents.set(state.selected, (events = subtreeEvents(seq, state.selected)));
  }
  sequenceView.show({
    actor: state.selected,
    seq,
    events,
    position: live ? undefined : state.position,
    start: live ? state.model.start : state.steps.find((s) => s.at !== undefined)?.at,
  });
}

function drawTimeline() {
  if (state.mode === "live") {
    // The axis runs a quarter ahead of now and is rescaled only when now reaches its end, so most updates redraw
    // only the lanes that changed.
    const start = state.model.start;
    const now = state.connected ? Date.now() : (state.model.end ?? 0);
    if (start !== undefined && (state.liveSpan?.start !== start || now > state.liveSpan.end)) {
      state.liveSpan = { start, end: start + Math.max(now - start, 1000) * 1.25 };
    }
    timeline.update(state.model, { span: state.liveSpan, marker: now, source: state.live });
    return;
  }
  // A log's axis is the whole log; the marker is the position.
  timeline.update(state.model, { span: state.span, marker: state.model.end, source: state.cursor });
}

function setStatus(text, kind) {
  const el = $("status");
  el.textContent = text;
  el.dataset.kind = kind;
}

// ---- live ----

let socket;
let retries = 0;
function connect() {
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${base}ws`;
  socket = new WebSocket(url);
  socket.onopen = () => {
    retries = 0;
    state.connected = true;
    if (state.mode === "live") setStatus("live", "live");
  };
  socket.onmessage = (message) => {
    let frame;
    try {
      frame = JSON.parse(message.data);
    } catch {
      return;
    }
    const changed = applyFrame(state.live, frame);
    if (state.mode === "live") {
      tree.update(state.live, changed.length ? [...changed, ...parentsOf(state.live, changed)] : undefined);
      renderSoon();
    }
  };
  socket.onclose = () => {
    state.connected = false;
    if (state.mode === "live") setStatus("disconnected: Pi or the inspector stopped", "off");
    if (retries++ < 5) setTimeout(connect, 500 * retries);
  };
}

function parentsOf(model, ids) {
  const out = [];
  for (const id of ids) {
    const p = model.actors.get(id)?.parentId;
    if (p && !ids.includes(p)) out.push(p);
  }
  return out;
}

async function stopSession(name) {
  const res = await fetch(`${base}api/sessions/${encodeURIComponent(name)}/stop`, { method: "POST" });
  const body = await res.json().catch(() => ({}));
  $("verdict").textContent = res.ok
    ? `stop ${name}: ${body.stopped ? "stopped" : "not running"}`
    : (body.error ?? `stop failed (${res.status})`);
}

function showLive() {
  state.mode = "live";
  state.model = state.live;
  document.body.dataset.mode = "live";
  setStatus(state.connected ? "live" : "disconnected", state.connected ? "live" : "off");
  tree.update(state.model);
  renderNow();
}

// ---- recorded logs ----

function openLog(text, name) {
  performance.mark("log-read");
  const { steps, header, error } = stepsFromLog(text);
  performance.mark("log-parsed");
  if (error) {
    setStatus(`cannot open ${name}: ${error}`, "off");
    return false;
  }
  state.mode = "log";
  state.steps = steps;
  state.cursor = new LogCursor(steps, 500);
  const times = steps.filter((s) => s.at !== undefined).map((s) => s.at);
  state.span = times.length
    ? { start: Math.min(...times.slice(0, 50)), end: Math.max(...times.slice(-50), times[0] + 1) }
    : undefined;
  state.logName = name;
  state.logText = text;
  state.seq = undefined;
  state.seqEvents = new Map();
  document.body.dataset.mode = "log";
  $("slider").max = String(steps.length);
  setStatus(`log ${name}${header?.piSession ? ` · Pi session ${header.piSession}` : ""}`, "log");
  $("verdict").textContent = "";
  goTo(steps.length);
  if (!state.model.actors.has(state.selected)) {
    state.selected = "supervisor";
    tree.select(state.model, state.selected);
    renderNow();
  }
  performance.mark("log-shown");
  return true;
}

function goTo(position) {
  state.position = Math.max(0, Math.min(position, state.steps.length));
  state.model = state.cursor.at(state.position);
  $("slider").value = String(state.position);
  const step = state.steps[state.position - 1];
  $("position").textContent = `${state.position} / ${state.steps.length}`;
  $("step").textContent = step ? `line ${step.line}: ${step.text}` : "start of log";
  tree.update(state.model);
  renderNow();
}

function nextInput(direction) {
  let p = state.position + direction;
  while (p > 0 && p <= state.steps.length && !state.steps[p - 1].input) p += direction;
  goTo(p);
}

async function verify() {
  $("verdict").textContent = "replaying…";
  const res = await fetch(`${base}api/replay`, { method: "POST", body: state.logText });
  const report = await res.json();
  if (!res.ok) {
    $("verdict").textContent = report.error ?? `replay failed (${res.status})`;
    $("verdict").dataset.kind = "bad";
    return;
  }
  $("verdict").textContent = report.error
    ? `cannot replay: ${report.error}`
    : report.identical
      ? `identical (${report.inputs} inputs, ${report.trace} trace records)`
      : report.divergence.message;
  $("verdict").dataset.kind = report.identical ? "ok" : "bad";
}

$("open").addEventListener("click", () => $("file").click());
$("file").addEventListener("change", async () => {
  const file = $("file").files?.[0];
  if (file) openLog(await file.text(), file.name);
  $("file").value = "";
});
$("session-log").addEventListener("click", async () => {
  const res = await fetch(`${base}api/log`);
  if (res.ok) openLog(await res.text(), state.info.log?.split("/").pop() ?? "session log");
});
$("live").addEventListener("click", showLive);
$("first").addEventListener("click", () => goTo(0));
$("prev").addEventListener("click", () => goTo(state.position - 1));
$("next").addEventListener("click", () => goTo(state.position + 1));
$("last").addEventListener("click", () => goTo(state.steps.length));
$("prev-input").addEventListener("click", () => nextInput(-1));
$("next-input").addEventListener("click", () => nextInput(1));
// Dragging the slider fires many inputs per frame: one step per frame, to the latest value.
let sliderFrame;
$("slider").addEventListener("input", () => {
  sliderFrame ??= requestAnimationFrame(() => {
    sliderFrame = undefined;
    goTo(Number($("slider").value));
  });
});
$("verify").addEventListener("click", verify);
document.addEventListener("keydown", (e) => {
  if (state.mode !== "log" || e.target instanceof HTMLInputElement) return;
  if (e.key === "ArrowRight") goTo(state.position + 1);
  if (e.key === "ArrowLeft") goTo(state.position - 1);
});
setInterval(() => state.mode === "live" && state.connected && renderSoon(), 1000);

const info = await fetch(`${base}api/info`).then((r) => r.json());
state.info = info;
document.body.dataset.actions = info.readOnly ? "read-only" : "enabled";
$("access").textContent = info.readOnly ? "read-only" : "actions enabled";
$("session-log").hidden = !info.log;
$("live").hidden = !info.live;
if (info.live) {
  showLive();
  connect();
} else if (info.log) {
  const res = await fetch(`${base}api/log`);
  openLog(await res.text(), info.log.split("/").pop());
} else {
  setStatus("no live session: open a recorded log", "off");
  document.body.dataset.mode = "log";
}
// A small handle for tests and the devtools console: the log's steps and a way to jump to one.
window.inspector = {
  steps: () => state.steps.map((s) => s.text),
  goTo,
  openLog,
  mode: () => state.mode,
  select,
  showTab,
  position: () => state.position,
};
// Tests and tools can tell when the page is wired up.
document.body.dataset.ready = "true";
