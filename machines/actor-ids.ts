// The names of the actors the machines spawn, built and read back here only (the recorder, the host's selectors, the
// process registry's owners and the inspector all see these):
//   run:<runId>             a run                       session:<name>          a named interpreter session
//   session:<name>/runner   a session's process (its system id: a session's runs send their commands to it directly)
//   spare:pool              the spare runners' pool     spare:<n>               a spare runner (the pool's child)
//   tool:<runId>:<seq>      a nested tool call of a run
//   exec:<id>               a shell session             wake:<id>               a shell session's exit wake-up

export type ActorKind = "run" | "session" | "spare" | "tool" | "exec" | "wake";

/** A run's id and system id. */
export const runActorId = (runId: string): string => `run:${runId}`;

/** A named session's id and system id. */
export const sessionActorId = (name: string): string => `session:${name}`;

/** The system id of a session's runner (its id within the session is `runner`). */
export const sessionRunnerId = (name: string): string => `${sessionActorId(name)}/runner`;

/** The spare runners' pool's id and system id (machines/spare-pool.ts), a child of the supervisor. */
export const SPARE_POOL_ID = "spare:pool";

/** A spare runner's id (its number counts the spares of one pool). */
export const spareActorId = (n: number): string => `spare:${n}`;

/** Whether `id` names a spare runner (`spare:<n>`), not the pool they live in. */
export const isSpareRunner = (id: string): boolean => isActor(id, "spare") && id !== SPARE_POOL_ID;

/** A nested tool call's id: the run's, and the call's sequence number in it. */
export const toolActorId = (runId: string, seq: number): string => `tool:${runId}:${seq}`;

/** A shell session's id. */
export const execActorId = (id: number): string => `exec:${id}`;

/** A shell session's exit wake-up's id. */
export const wakeActorId = (id: number): string => `wake:${id}`;

/** What kind of actor an id names (undefined: none of ours, such as a child's local id). */
export function actorKind(id: string): ActorKind | undefined {
  const colon = id.indexOf(":");
  const kind = colon > 0 ? id.slice(0, colon) : "";
  return (KINDS as readonly string[]).includes(kind) ? (kind as ActorKind) : undefined;
}

const KINDS: readonly ActorKind[] = ["run", "session", "spare", "tool", "exec", "wake"];

/** Whether `id` names an actor of `kind`. */
export const isActor = (id: string, kind: ActorKind): boolean => actorKind(id) === kind;
