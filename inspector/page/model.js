// The inspector page's model: the actor tree rebuilt from @statelyai/inspect frames (live from the WebSocket, or
// converted from a recorded JSONL log). Plain ES module, no DOM: the page and Node tests both use it.
import { isActor, runActorId, sessionActorId } from "./actor-ids.js";
import { LogDecoder } from "./log-codec.js";
import { sessionPhase } from "./phase.js";

const MAX_EVENTS = 40;
const MAX_ACTORS = 400;
/** Events kept for the live sequence view (a log's view reads the log's steps instead). */
const MAX_SEQUENCE = 2000;

export function createModel() {
  // `kids`: parent id → its children's ids, in creation order (so no step scans every actor).
  return { actors: new Map(), order: [], kids: new Map(), start: undefined, end: undefined, version: 0, sequence: [] };
}

function adopt(model, id, parentId) {
  if (!parentId) return;
  let set = model.kids.get(parentId);
  if (!set) model.kids.set(parentId, (set = new Set()));
  set.add(id);
}

/** A state value as people read it: `running`, or `parent.child` for nested states. */
export function stateLabel(value) {
  if (typeof value === "string") return value;
  if (value && typeof value === "object") {
    return Object.entries(value)
      .map(([k, v]) => (v && (typeof v === "string" || typeof v === "object") ? `${k}.${stateLabel(v)}` : k))
      .join(",");
  }
  return "";
}

/** Longest first line of a run's code shown in its label (the whole code is in the Details tab's context). */
const LABEL_CODE_CHARS = 60;

/** What tells a run apart from the others: its surface (`eval js` for a JavaScript cell) and the first line of its
 * code that is not blank, read from its context (the run's input), and how many cells a batch run has besides.
 * Undefined for other actors, and for a run whose context has not arrived yet. */
export function runTitle(a) {
  const c = a?.context;
  if (!a || !isActor(a.id, "run") || !c || typeof c !== "object" || typeof c.code !== "string") return undefined;
  const first =
    c.code
      .split("\n")
      .find((l) => l.trim())
      ?.trim() ?? "(no code)";
  const code = first.length > LABEL_CODE_CHARS ? `${first.slice(0, LABEL_CODE_CHARS - 1)}…` : first;
  const surface = typeof c.surface === "string" ? c.surface : "run";
  const more = Array.isArray(c.batch) && c.batch.length ? ` (+${c.batch.length} cells)` : "";
  return `${surface}${c.language === "js" ? " js" : ""}: ${code}${more}`;
}

/** The name the tree, the header and the timeline show: a run's title, else the actor's own name. */
export function displayName(a) {
  return runTitle(a) ?? (a.id === "supervisor" ? "supervisor" : a.name);
}

/** The actor's entry; created as a placeholder when a frame names an actor whose creation frame was not seen
 * (a page that connected late, after the server's history lost it). */
function entry(model, id, at, placeholder = false) {
  let a = model.actors.get(id);
  if (!a) {
    a = {
      id,
      placeholder,
      name: id.split("/").pop(),
      parentId: undefined,
      kind: "callback",
      status: "active",
      label: "",
      value: undefined,
      context: undefined,
      createdAt: at,
      endedAt: undefined,
      history: [],
      events: [],
      incarnation: 1,
    };
    model.actors.set(id, a);
    model.order.push(id);
    prune(model);
  }
  return a;
}

const labelOf = (model, a) =>
  a.kind === "machine" && a.value !== undefined ? sessionPhase(model, a, stateLabel(a.value)) : a.status;

function note(model, a, at) {
  const label = labelOf(model, a);
  // A machine between its creation and its first snapshot has no state yet.
  if (a.kind === "machine" && a.value === undefined && a.status === "active") return;
  const last = a.history[a.history.length - 1];
  if (!last || last.label !== label || last.status !== a.status) a.history.push({ at, label, status: a.status });
  a.label = label;
  if ((a.status === "done" || a.status === "stopped" || a.status === "error") && a.endedAt === undefined) {
    a.endedAt = at;
  }
}

function applySnapshot(model, a, snapshot, at, cause) {
  if (!snapshot) return;
  if (snapshot.value !== undefined) {
    a.kind = "machine";
    // The step the statechart view highlights: the value before, after, and the event that caused it (none for
    // the state as the server found it, inspector/frames.ts PRESENT_EVENT).
    if (cause && cause !== "inspector.present")
      a.step = { from: a.value, to: snapshot.value, event: cause, at, seen: Date.now() };
    a.value = snapshot.value;
  }
  if (snapshot.context !== undefined) a.context = snapshot.context;
  if (snapshot.status) a.status = snapshot.status;
  if (a.status === "active" && a.value !== undefined) a.activeValue = a.value;
  if (snapshot.error !== undefined) a.error = snapshot.error;
  note(model, a, at);
  // A session's phase follows its run's steps.
  const parent = a.parentId ? model.actors.get(a.parentId) : undefined;
  const session = parent && isActor(parent.id, "session") && parent.value !== undefined ? parent : undefined;
  if (session && isActor(a.id, "run") && a.status === "active") note(model, session, at);
  // A child that left the parent's children without finishing was stopped (a reset, or its owner ended). A child
  // released because it finished reports its own final snapshot right after its parent's.
  if (snapshot.children && a.kind === "machine") {
    const present = new Set(Object.values(snapshot.children).map((c) => c.id));
    const finished = typeof cause === "string" && cause.startsWith("xstate.done.actor.") ? cause.slice(18) : "";
    for (const id of model.kids.get(a.id) ?? []) {
      const other = model.actors.get(id);
      if (other && other.parentId === a.id && !present.has(id) && other.status === "active" && id !== finished) {
        other.status = "stopped";
        note(model, other, at);
      }
    }
  }
}

/** Applies one frame; returns the ids of the actors it changed. */
export function applyFrame(model, frame) {
  const at = Number(frame.createdAt) || Date.now();
  model.start ??= at;
  model.end = Math.max(model.end ?? at, at);
  model.version += 1;
  const id = frame.sessionId;
  if (!id) return [];
  const changed = applyTo(model, frame, id, at);
  for (const c of changed) {
    const a = model.actors.get(c);
    if (a) a.rev = (a.rev ?? 0) + 1;
  }
  return changed;
}

function applyTo(model, frame, id, at) {
  switch (frame.type) {
    case "@xstate.actor": {
      const known = model.actors.has(id) && !model.actors.get(id).placeholder;
      const a = entry(model, id, at);
      a.placeholder = false;
      if (known) {
        // The same explicit id created again: a new incarnation (a reset, or a session started after it was lost).
        a.incarnation += 1;
        a.endedAt = undefined;
        a.context = undefined;
        a.value = undefined;
        a.history.push({ at, label: "(new)", status: "active", restart: true });
      }
      a.name = frame.name ?? a.name;
      if (a.parentId && a.parentId !== frame.parentId) model.kids.get(a.parentId)?.delete(id);
      a.parentId = frame.parentId;
      adopt(model, id, a.parentId);
      a.createdAt = a.incarnation > 1 ? a.createdAt : at;
      if (typeof frame.definition === "string" && frame.definition.includes('"states"')) a.kind = "machine";
      a.status = "active";
      const snapshot = frame.snapshot ?? {};
      // A creation frame has no state yet (XState computes it right after); the init snapshot follows.
      if (snapshot.value !== undefined || snapshot.context !== undefined) applySnapshot(model, a, snapshot, at);
      else if (a.kind !== "machine") a.label = a.status = snapshot.status ?? "active";
      return [id];
    }
    case "@xstate.event": {
      const a = entry(model, id, at, true);
      const type = frame.event && typeof frame.event === "object" ? String(frame.event.type) : String(frame.event);
      a.events.push({ at, type, from: frame.sourceId, event: frame.event });
      if (a.events.length > MAX_EVENTS) a.events.splice(0, a.events.length - MAX_EVENTS);
      model.sequence.push({ at, from: frame.sourceId, to: id, type });
      if (model.sequence.length > MAX_SEQUENCE * 1.2) model.sequence.splice(0, model.sequence.length - MAX_SEQUENCE);
      return [id];
    }
    case "@xstate.snapshot": {
      const a = entry(model, id, at, true);
      applySnapshot(model, a, frame.snapshot, at, frame.event?.type);
      return [id];
    }
    default:
      return [];
  }
}

/** Keeps the model bounded: the oldest finished actors (and their descendants) go first. */
function prune(model) {
  if (model.actors.size <= MAX_ACTORS) return;
  for (const id of [...model.order]) {
    if (model.actors.size <= MAX_ACTORS * 0.9) break;
    const a = model.actors.get(id);
    if (!a || a.endedAt === undefined || !a.parentId) continue;
    remove(model, id);
  }
}

function remove(model, id) {
  for (const child of [...(model.kids.get(id) ?? [])]) remove(model, child);
  model.kids.delete(id);
  const a = model.actors.get(id);
  if (a?.parentId) model.kids.get(a.parentId)?.delete(id);
  model.actors.delete(id);
  const i = model.order.indexOf(id);
  if (i >= 0) model.order.splice(i, 1);
}

export function childrenOf(model, id) {
  return [...(model.kids.get(id) ?? [])].filter((c) => model.actors.get(c)?.parentId === id);
}

export function roots(model) {
  return model.order.filter((id) => {
    const p = model.actors.get(id)?.parentId;
    return !p || !model.actors.has(p);
  });
}

// ---- recorded logs ----

function inputText(r) {
  switch (r.k) {
    case "cmd": {
      const e = r.event ?? {};
      return `command ${e.type}${e.runId ? ` ${runActorId(e.runId)}` : ""}${e.session ? ` ${sessionActorId(e.session)}` : ""}${e.name ? ` ${e.name}` : ""}`;
    }
    case "fact":
      return `fact ${r.event?.type} → ${r.to}`;
    case "timer":
      return `timer #${r.n} fired`;
    case "stop":
      return "supervisor stopped";
    default:
      return r.k;
  }
}

function frame(type, at, fields) {
  return { type, rootId: "supervisor", createdAt: String(at ?? 0), id: null, _version: "0.7.2", ...fields };
}

/** Frames for a persisted snapshot (a rotated segment's checkpoint): the tree as it was. */
function checkpointFrames(persisted, at, id = "supervisor", parentId = undefined, out = []) {
  if (!persisted || typeof persisted !== "object") return out;
  out.push(
    frame("@xstate.actor", at, {
      name: id.split("/").pop(),
      sessionId: id,
      ...(parentId ? { parentId } : {}),
      ...(persisted.value !== undefined ? { definition: '{"states":{}}' } : {}),
      snapshot: { status: persisted.status ?? "active", value: persisted.value, context: persisted.context },
    }),
  );
  for (const [key, child] of Object.entries(persisted.children ?? {})) {
    const childId = key.includes(":") ? key : `${id}/${key}`;
    checkpointFrames(child?.snapshot, at, childId, id, out);
  }
  return out;
}

/** Converts a recorded log (JSONL text) into replay steps: each trace record becomes a frame, each input a
 * marker. `{header, steps, error}`; a step is `{line, at, text, frame?, input?}`. */
export function stepsFromLog(text) {
  const steps = [];
  // Contexts are written whole once per actor, then as deltas of top-level keys (record/trace.ts, TraceEncoder).
  const contexts = new Map();
  // Records that point at a value the log already holds get it back (format v3, record/log-codec.ts).
  const decoder = new LogDecoder();
  let header;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    // JSON.parse allows the whitespace around a record: lines are not trimmed (a copy of the whole log).
    const s = lines[i];
    if (!s) continue;
    let r;
    try {
      r = JSON.parse(s);
    } catch {
      if (!s.trim()) continue;
      if (lines.slice(i + 1).some((l) => l.trim())) return { header, steps, error: `line ${i + 1} is not JSON` };
      continue;
    }
    const line = i + 1;
    if (r && typeof r === "object" && !Array.isArray(r)) {
      const whole = decoder.decode(r);
      if (typeof whole === "string") return { header, steps, error: `line ${line}: ${whole}` };
      r = whole;
    }
    const at = r.at;
    switch (r.k) {
      case "header":
        header ??= r;
        break;
      case "checkpoint":
        for (const f of checkpointFrames(r.snapshot, at))
          steps.push({ line, at, text: `checkpoint ${f.sessionId}`, frame: f });
        break;
      case "actor":
        contexts.delete(r.id);
        steps.push({
          line,
          at,
          text: `actor ${r.id} created`,
          frame: frame("@xstate.actor", at, {
            name: r.id.split("/").pop(),
            sessionId: r.id,
            ...(r.parent ? { parentId: r.parent } : {}),
            snapshot: { status: "active" },
          }),
        });
        break;
      case "event":
        steps.push({
          line,
          at,
          text: `event ${r.event?.type} → ${r.to}${r.from ? ` from ${r.from}` : ""}`,
          frame: frame("@xstate.event", at, {
            sessionId: r.to,
            ...(r.from ? { sourceId: r.from } : {}),
            event: r.event,
          }),
        });
        break;
      case "snap": {
        const children = r.children ? Object.fromEntries(r.children.map((c) => [c, { id: c, xstate$$type: 1 }])) : {};
        const snapshot = { status: r.status, children };
        if (r.value !== undefined) snapshot.value = r.value;
        if (r.context !== undefined) contexts.set(r.id, r.context);
        else if (r.delta || r.removed) {
          const next = { ...(contexts.get(r.id) ?? {}), ...(r.delta ?? {}) };
          for (const k of r.removed ?? []) delete next[k];
          contexts.set(r.id, next);
        }
        if (contexts.has(r.id)) snapshot.context = contexts.get(r.id);
        if (r.error !== undefined) snapshot.error = r.error;
        steps.push({
          line,
          at,
          text: `${r.id} → ${stateLabel(r.value) || r.status} (${r.cause})`,
          frame: frame("@xstate.snapshot", at, { sessionId: r.id, event: { type: r.cause }, snapshot }),
        });
        break;
      }
      case "cmd":
      case "fact":
      case "timer":
      case "stop":
        steps.push({ line, at, text: `input: ${inputText(r)}`, input: r });
        break;
      default:
        break;
    }
  }
  if (!header || header.format !== "pi-code-supervisor.log") {
    return { header, steps: [], error: "not a pi-code-supervisor event log" };
  }
  return { header, steps };
}

/** Applies one replay step (a frame, or an input that only moves the clock). */
export function applyStep(model, step) {
  if (step.frame) applyFrame(model, step.frame);
  else if (step.at !== undefined) {
    model.start ??= step.at;
    model.end = Math.max(model.end ?? step.at, step.at);
  }
}

/** The model after the first `count` steps. */
export function modelAt(steps, count) {
  const model = createModel();
  for (let i = 0; i < count && i < steps.length; i++) applyStep(model, steps[i]);
  return model;
}
