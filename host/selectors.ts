// What the host's door shows of the actor system, read from the root's snapshot: the live sessions (their phase
// read from the active run, their process and history) and the spare runners (read from the spare pool's snapshot).
// Pure functions of a snapshot.
import type { AnyActorRef, SnapshotFrom } from "xstate";
import { otherLanguage, replacementOf, type SessionEntry } from "../machines/supervisor.ts";
import type { RunStartEvent } from "../machines/events.ts";
import { sessionPhase } from "../machines/session.ts";
import { spareIsReady } from "../machines/spare.ts";
import type { SparePoolSnapshot } from "../machines/spare-pool.ts";
import type { SupervisorLogic } from "../machines/system.ts";
import type { SessionBook, SessionHistory } from "./session-book.ts";
import { isSpareRunner, runActorId, sessionActorId, SPARE_POOL_ID } from "../machines/actor-ids.ts";

export type RootSnapshot = SnapshotFrom<SupervisorLogic>;

export interface SessionInfo extends SessionEntry, Partial<Omit<SessionHistory, "incarnation">> {
  name: string;
  /** The run it is executing, if any: the session's own fact (a run sent straight to it is known there alone). */
  busyRunId?: string;
  /** The session's phase: `starting`, `idle`, `running`, `interrupted`, `grace`, `killed`, `closing`, ... */
  state: string;
  pid?: number;
  /** The interpreter's version, from its runner (Node's for a JavaScript session). */
  pythonVersion?: string;
  /** Where its process runs (the backend's label). */
  backend?: string;
}

type Snap = { value?: unknown; context?: Record<string, unknown> } | undefined;
const snapshotOf = (ref: AnyActorRef | undefined): Snap => ref?.getSnapshot() as Snap;

export function sessionInfos(root: RootSnapshot, book: SessionBook): SessionInfo[] {
  return Object.entries(root.context.sessions)
    .filter(([, entry]) => entry.status === "alive")
    .map(([name, entry]) => {
      const session = root.children[sessionActorId(name)] as AnyActorRef | undefined;
      const s = snapshotOf(session);
      const context = s?.context as
        { activeRunId?: string; runner?: { pid: number; python: string }; backend?: string } | undefined;
      const run = context?.activeRunId
        ? snapshotOf(
            (session?.getSnapshot() as { children: Record<string, AnyActorRef> }).children[
              runActorId(context.activeRunId)
            ],
          )
        : undefined;
      const history = book.get(name, entry.incarnation);
      return {
        name,
        ...entry,
        // A run the host sent straight to the session is known to the session alone.
        ...(context?.activeRunId ? { busyRunId: context.activeRunId } : {}),
        state: s?.value === undefined ? "unknown" : sessionPhase(s.value, run?.value),
        ...(context?.runner ? { pid: context.runner.pid, pythonVersion: context.runner.python } : {}),
        ...(context?.backend ? { backend: context.backend } : {}),
        ...(history ? { startedAt: history.startedAt, ...(history.lastRun ? { lastRun: history.lastRun } : {}) } : {}),
      };
    });
}

/** The spare pool's snapshot (undefined until the first fresh run with a spare key spawned it). */
const sparePool = (root: RootSnapshot): SparePoolSnapshot | undefined =>
  (root.children as Record<string, AnyActorRef | undefined>)[SPARE_POOL_ID]?.getSnapshot() as
    SparePoolSnapshot | undefined;

/** The live spare runners (`spare:<n>`, the pool's children), the key each serves, and whether each is ready to serve
 * a fresh run (its own state). */
export function spareList(root: RootSnapshot): { id: string; key?: string; ready: boolean }[] {
  const pool = sparePool(root);
  if (!pool) return [];
  const children = pool.children as Record<string, AnyActorRef | undefined>;
  return Object.keys(children)
    .filter(isSpareRunner)
    .map((id) => ({
      id,
      ...(pool.context.spares[id] ? { key: pool.context.spares[id] } : {}),
      ready: spareIsReady(snapshotOf(children[id])),
    }));
}

/** How many spares each key in use keeps (the pool grows while fresh runs find its spares still warming). */
export const spareTargets = (root: RootSnapshot): Record<string, number> => ({ ...sparePool(root)?.context.target });

/** The session a prepared request can be sent to straight (the warm path, docs/design.md), or undefined: it must go
 * through the supervisor. Straight only when nothing could differ from what the supervisor would do: the supervisor
 * is idle, no request waiting before this one (call order), and the session is alive and idle, with this
 * language, interpreter and working directory, and is not to be reset. */
export function directSession(root: RootSnapshot, request: RunStartEvent): AnyActorRef | undefined {
  if (request.session === undefined || request.reset || !request.prepared || request.prepared.failed) return undefined;
  if (!root.matches({ serving: "idle" })) return undefined;
  const entry = root.context.sessions[request.session];
  if (!entry || entry.status !== "alive") return undefined;
  if (otherLanguage(root.context, request) || replacementOf(entry, request)) return undefined;
  const session = root.children[sessionActorId(request.session)] as AnyActorRef | undefined;
  return snapshotOf(session)?.value === "idle" ? session : undefined;
}
