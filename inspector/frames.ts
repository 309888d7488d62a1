// Inspection events as `@statelyai/inspect` wire frames (`@xstate.actor`, `@xstate.event`, `@xstate.snapshot`),
// built synchronously so each frame carries the snapshot of its own moment. Actors are named by their explicit
// ids (`supervisor`, `session:<name>`, `run:<id>`, `<parent>/runner`), which also serve as `sessionId`, so a tree
// rebuilt from `sessionId`/`parentId` is the same in every process and in a replayed log.
import type { AnyActorRef, InspectionEvent } from "xstate";
import { actorName, compact, ref } from "../record/trace.ts";

/** The @statelyai/inspect release whose wire format these frames follow (its receivers check `_version`). */
export const STATELY_WIRE_VERSION = "0.7.2";
export const ROOT_ID = "supervisor";
/** Strings in frames are cut here: enough to read code and messages, bounded for a busy page. */
const FRAME_STRING_LIMIT = 4000;

export interface SerializedSnapshot {
  status: string;
  value?: unknown;
  context?: unknown;
  children?: Record<string, { id: string; xstate$$type: 1 }>;
  tags?: string[];
  output?: unknown;
  error?: unknown;
}

interface FrameBase {
  rootId: string;
  /** Milliseconds since the epoch, as a string (the Stately format). */
  createdAt: string;
  id: null;
  _version: string;
}

export interface ActorFrame extends FrameBase {
  type: "@xstate.actor";
  name: string;
  sessionId: string;
  parentId?: string;
  definition?: string;
  snapshot: SerializedSnapshot;
}

export interface EventFrame extends FrameBase {
  type: "@xstate.event";
  event: unknown;
  sessionId: string;
  sourceId?: string;
}

export interface SnapshotFrame extends FrameBase {
  type: "@xstate.snapshot";
  event: unknown;
  snapshot: SerializedSnapshot;
  sessionId: string;
}

export type Frame = ActorFrame | EventFrame | SnapshotFrame;

const base = (at: number): FrameBase => ({
  rootId: ROOT_ID,
  createdAt: String(at),
  id: null,
  _version: STATELY_WIRE_VERSION,
});

export function serializeSnapshot(snapshot: any): SerializedSnapshot {
  if (!snapshot || typeof snapshot !== "object") return { status: "active" };
  const out: SerializedSnapshot = { status: String(snapshot.status ?? "active") };
  if ("value" in snapshot) out.value = compact(snapshot.value, FRAME_STRING_LIMIT);
  if (snapshot.context !== undefined) out.context = compact(snapshot.context, FRAME_STRING_LIMIT);
  if (snapshot.children && typeof snapshot.children === "object") {
    out.children = Object.fromEntries(
      Object.entries(snapshot.children as Record<string, AnyActorRef>).map(([key, child]) => [
        key,
        { id: actorName(child), xstate$$type: 1 as const },
      ]),
    );
  }
  if (snapshot.tags) out.tags = [...(snapshot.tags as Iterable<string>)];
  if (snapshot.output !== undefined) out.output = compact(snapshot.output, FRAME_STRING_LIMIT);
  if (snapshot.error !== undefined) out.error = compact(snapshot.error, FRAME_STRING_LIMIT);
  return out;
}

const definitions = new WeakMap<object, string>();

/** The machine config as JSON (functions as `{type: name}`), computed once per logic: what the Stately
 * Inspector draws. Callback actors have no config and get `{id}` as in @statelyai/inspect. */
function definitionOf(actor: AnyActorRef): string {
  const logic = (actor as { logic?: { config?: unknown } }).logic;
  const config = logic?.config;
  if (!logic || !config || typeof config !== "object") return JSON.stringify({ id: actor.id });
  const cached = definitions.get(logic);
  if (cached) return cached;
  const seen = new WeakSet<object>();
  const json = JSON.stringify(config, (_k, v) => {
    if (typeof v === "function") return { type: v.name || "anonymous" };
    if (v && typeof v === "object") {
      if (seen.has(v)) return undefined;
      seen.add(v);
    }
    return v;
  });
  definitions.set(logic, json);
  return json;
}

export function actorFrame(actor: AnyActorRef, at: number, snapshot?: unknown): ActorFrame {
  const parent = actor._parent;
  return {
    type: "@xstate.actor",
    name: actor.id,
    sessionId: actorName(actor),
    ...(parent ? { parentId: actorName(parent) } : {}),
    definition: definitionOf(actor),
    snapshot: serializeSnapshot(snapshot),
    ...base(at),
  };
}

/** The frame of one inspection event, or undefined for kinds the wire format does not carry. At
 * `@xstate.actor` time XState has not computed the initial snapshot yet; the init snapshot frame follows. */
export function frameOf(ev: InspectionEvent, at = Date.now()): Frame | undefined {
  switch (ev.type) {
    case "@xstate.actor":
      return actorFrame(ref(ev.actorRef), at);
    case "@xstate.event":
      return {
        type: "@xstate.event",
        event: compact(ev.event, FRAME_STRING_LIMIT),
        sessionId: actorName(ref(ev.actorRef)),
        ...(ev.sourceRef ? { sourceId: actorName(ref(ev.sourceRef)) } : {}),
        ...base(at),
      };
    case "@xstate.snapshot":
      return {
        type: "@xstate.snapshot",
        event: compact(ev.event, FRAME_STRING_LIMIT),
        snapshot: serializeSnapshot(ev.snapshot),
        sessionId: actorName(ref(ev.actorRef)),
        ...base(at),
      };
    default:
      return undefined;
  }
}

/** The cause a present-state snapshot carries (no event of the system: the state as the inspector found it). */
export const PRESENT_EVENT = "inspector.present";

/** An actor the page meets after its creation (created before the inspector started, or its creation frame gone
 * from the history): its creation at its true time, without state, then its present snapshot at `now`, so the page
 * neither shows the connect time as "created" nor claims a state for the time before it knew one. */
export function lateFrames(actor: AnyActorRef, created: number | undefined, now = Date.now()): Frame[] {
  const snapshot = actor.getSnapshot() as { status?: string; value?: unknown } | undefined;
  const frames: Frame[] = [actorFrame(actor, created ?? now)];
  if (snapshot && (snapshot.value !== undefined || snapshot.status !== "active")) {
    frames.push({
      type: "@xstate.snapshot",
      event: { type: PRESENT_EVENT },
      snapshot: serializeSnapshot(snapshot),
      sessionId: actorName(actor),
      ...base(now),
    });
  }
  return frames;
}

/** When an actor was created, if known (record/observe.ts keeps it); frames of an actor without one carry `now`. */
export type CreatedAt = (actor: AnyActorRef) => number | undefined;

/** `@xstate.actor` frames for the live tree, parents first, each with its current snapshot and its creation time:
 * what a client that connects late needs to show the present (the Stately Inspector's form; our page gets
 * `lateFrames` per actor instead). */
export function treeFrames(
  root: AnyActorRef | undefined,
  createdAt: CreatedAt = () => undefined,
  now = Date.now(),
): ActorFrame[] {
  return liveActors(root).map((actor) => actorFrame(actor, createdAt(actor) ?? now, actor.getSnapshot()));
}

/** The live tree's actors, parents first (stopped ones left out). */
export function liveActors(root: AnyActorRef | undefined): AnyActorRef[] {
  const out: AnyActorRef[] = [];
  const visit = (actor: AnyActorRef) => {
    const snapshot = actor.getSnapshot() as { status?: string; children?: Record<string, AnyActorRef> } | undefined;
    if (snapshot?.status === "stopped") return;
    out.push(actor);
    for (const child of Object.values(snapshot?.children ?? {})) visit(child);
  };
  if (root) visit(root);
  return out;
}
