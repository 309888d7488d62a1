// How each kind of child is stopped, declared as data in one place (OTP's child spec `shutdown`): its whole group
// (registry.ts: its cgroup or its session, whatever process group a member moved to) gets SIGTERM, and whatever is
// left of it SIGKILL once `graceMs` has passed; a grace of 0 is SIGKILL at once (OTP's `brutal_kill`). One
// implementation carries every spec out: registry.ts `stopGroup`. What comes before a group is stopped (a run's
// interrupt and grace, a shell session's requested signal, a session asked to exit) is a machine's state
// (machines/run.ts, machines/exec-session.ts, machines/session.ts), with its bounds from Limits, not this.

export interface Shutdown {
  /** From SIGTERM to SIGKILL for what is left; 0: SIGKILL at once. */
  readonly graceMs: number;
}

/** Nothing may outlive it: SIGKILL to the group at once. */
export const BRUTAL_KILL: Shutdown = { graceMs: 0 };

/** A remote transport's local process (ssh, kubectl exec, ...) after it exited: what it left (a ControlMaster
 * client, a helper) while its last output drains. */
export const REMOTE_TRANSPORT_DRAIN_MS = 500;

/** The run's kill bound (Limits.killMs, set by the user's limits) as a grace: shared by a runner's process and what
 * works for it. */
const runsBound = (killMs: number): Shutdown => ({ graceMs: killMs });

/** Every kind of child, and how its group is stopped. */
export const SHUTDOWN = {
  /** A runner's group once its process exited (the leftovers of user code) or its actor stopped (a session closed
   * or reset, a fresh run ended): the run's kill bound. */
  runner: runsBound,
  /** A fork server retired or gone, with what it forked but did not hand over: the runners' bound. */
  forkServer: runsBound,
  /** An installer's leftovers once it exited (a build helper, a daemon), or the whole install when its run was
   * stopped: the runners' bound. */
  installer: runsBound,
  /** A remote transport's local process once it exited. */
  remoteTransport: { graceMs: REMOTE_TRANSPORT_DRAIN_MS } as Shutdown,
  /** A short child (an interpreter probe, a version check) once it closed: it leaves nothing behind. */
  shortChild: BRUTAL_KILL,
  /** A shell whose session was stopped: SIGKILL went to it first (machines/exec-session.ts escalated already, or the
   * session went away while it started), and what is left goes at once. */
  shell: BRUTAL_KILL,
  /** Pi is shutting down or reloading: every runner group of the host, with the runs' bound. */
  hostShutdown: runsBound,
  /** Pi is shutting down: what shell sessions left (background processes that let go of the output), once each
   * session's own stop (SIGTERM, its grace, SIGKILL) is done. */
  shellLeftovers: { graceMs: 1000 } as Shutdown,
} as const;
