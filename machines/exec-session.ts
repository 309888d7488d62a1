// One shell session (`exec:<id>`): a command started as `<shell> -c cmd` in its own process group, with pipes or a
// PTY. It is `starting` until the process exists, `running` while its output stream is open (`held` once the shell
// itself exited but a background process still holds the stream), and ends `exited` when the stream closed. A kill,
// an eviction or Pi's shutdown goes through `stopping`: the requested signal to the group, SIGKILL after a grace,
// then a wait for the group to be empty (a group that ended by itself as the stop came is found so by the first
// signal). Output still open once it is, or a member still there long after SIGKILL, means the stop failed: the
// session is `running` again and its owner is told so.
// The process is the `shell` boundary actor (actors/shell/shell-actor.ts); this machine only names what happens.
import { assign, enqueueActions, sendParent, setup } from "xstate";
import { placeholder } from "./placeholder.ts";
import { execActorId } from "./actor-ids.ts";

/** Escalation bounds, in ms. */
export interface ExecLimits {
  /** kill_session: the requested signal, then SIGKILL after this long. */
  killGraceMs: number;
  /** Eviction and Pi's shutdown: SIGTERM, then SIGKILL after this long. */
  stopGraceMs: number;
  /** After SIGKILL: how long a member of the group may still be there before the stop counts as failed. Not the
   * stream's close (the group's end is a fact, `shell.group_gone`), only a process that cannot die: one in
   * uninterruptible sleep (a hung mount, a stuck device) takes SIGKILL only when that wait ends, perhaps never. Long,
   * so a loaded machine that has not yet run its killed members is never taken for one. */
  unkillableMs: number;
}

export const DEFAULT_EXEC_LIMITS: ExecLimits = { killGraceMs: 2000, stopGraceMs: 1000, unkillableMs: 30_000 };

/** What the shell boundary actor starts. */
export interface ShellInput {
  id: number;
  /** The actor that owns the process (`exec:<id>`), for the process-group registry. */
  owner: string;
  /** The command as given, run as `<shell> -c <command>`. */
  command: string;
  /** The shell's absolute path. */
  shell: string;
  cwd: string;
  tty: boolean;
  cols: number;
  rows: number;
}

export interface ExecSessionInput extends Omit<ShellInput, "owner"> {
  startedAt: number;
  limits: ExecLimits;
}

export type ShellStopReason = "kill" | "evict" | "shutdown";

export interface ExitInfo {
  at: number;
  code: number | null;
  signal: string | null;
}

export interface ExecSessionContext extends ExecSessionInput {
  pid?: number;
  /** The shell process's own exit, when it came before the stream closed. */
  shellExit?: ExitInfo;
  /** The stop in progress, or one asked for while starting. */
  stop?: { reason: ShellStopReason; signal: string; at: number };
  /** SIGKILL followed the requested signal. */
  escalated?: boolean;
  failure?: string;
}

// ---- facts (shell actor -> session) ----
export type ShellFact =
  | { type: "shell.spawned"; at: number; pid: number }
  | { type: "shell.spawn_failed"; at: number; message: string }
  /** The shell process exited; its output stream may still be open. */
  | ({ type: "shell.process_exited" } & ExitInfo)
  /** The output stream closed after the process exited: the session is over. */
  | ({ type: "shell.closed" } & ExitInfo)
  /** After a SIGKILL, or a signal that found no process (ESRCH): no process of the session's group (its cgroup, or
   * its session without cgroups) is left.
   * `outputOpen`: its output stream was still open then, so a process outside the group holds it. */
  | { type: "shell.group_gone"; at: number; outputOpen: boolean }
  | { type: "shell.signal_failed"; at: number; signal: string; message: string };

// ---- commands (session -> shell actor) ----
export type ShellCommand = { type: "shell.signal"; signal: string };

// ---- commands (pool -> session) ----
export type ExecSessionCommand = { type: "shell.stop"; at: number; reason: ShellStopReason; signal: string };

export type ExecSessionEvent = ShellFact | ExecSessionCommand;

// ---- notices (session -> pool) ----
export type ExecSessionNotice =
  | { type: "shell.running"; id: number; at: number; pid: number }
  | ({ type: "shell.held"; id: number } & ExitInfo)
  | { type: "shell.stop_failed"; id: number; at: number; reason: ShellStopReason; escalated: boolean; message: string };

export type ExecSessionEnd = "exited" | "killed" | "evicted" | "failed";

export interface ExecSessionOutput extends ExitInfo {
  id: number;
  end: ExecSessionEnd;
  reason?: ShellStopReason;
  escalated?: boolean;
  failure?: string;
}

type GroupGone = { event: { at: number; outputOpen: boolean } };
/** After a signal, the group is gone: output still open is held by a process outside it (the stop failed, and the
 * session runs on); else the stream's close follows. Shared by `signalled` and `escalated.emptying`. */
const groupGoneHeldOutside = {
  guard: { type: "outputHeldOutside", params: ({ event }: GroupGone) => event },
  target: "#exec-session.running",
  actions: [{ type: "notifyHeldOutside", params: ({ event }: GroupGone) => ({ at: event.at }) }, "clearStop"],
} as const;

export const execSessionMachine = setup({
  types: {
    context: {} as ExecSessionContext,
    input: {} as ExecSessionInput,
    events: {} as ExecSessionEvent,
    output: {} as ExecSessionOutput,
  },
  actors: { shell: placeholder<ShellCommand, ShellInput>("exec-session", "shell") },
  actions: {
    recordSpawn: assign({ pid: (_, e: { pid: number }) => e.pid }),
    recordFailure: assign({ failure: (_, message: string) => message }),
    recordShellExit: assign({ shellExit: (_, e: ExitInfo) => ({ at: e.at, code: e.code, signal: e.signal }) }),
    requestStop: assign({
      stop: (_, e: { at: number; reason: ShellStopReason; signal: string }) => ({
        reason: e.reason,
        signal: e.signal,
        at: e.at,
      }),
    }),
    clearStop: assign({ stop: undefined, escalated: undefined }),
    markEscalated: assign({ escalated: true }),
    signal: enqueueActions(({ enqueue }, signal: string) => {
      enqueue.sendTo("shell", { type: "shell.signal", signal } satisfies ShellCommand);
    }),
    notifyRunning: sendParent(({ context }, e: { at: number }) => ({
      type: "shell.running" as const,
      id: context.id,
      at: e.at,
      pid: context.pid ?? 0,
    })),
    notifyHeld: sendParent(({ context }, e: ExitInfo) => ({
      type: "shell.held" as const,
      id: context.id,
      at: e.at,
      code: e.code,
      signal: e.signal,
    })),
    /** The group is gone but its output stays open: a process outside the group holds it, so the stop failed. */
    notifyHeldOutside: sendParent(({ context }, p: { at: number }) => ({
      type: "shell.stop_failed" as const,
      id: context.id,
      at: p.at,
      reason: context.stop?.reason ?? "kill",
      escalated: context.escalated === true,
      message: context.escalated
        ? "every process of the group exited after SIGKILL, but the output stream is still open: a process outside the group holds it"
        : `${context.stop?.signal ?? "the signal"} found no process of the group, but the output stream is still open: a process outside the group holds it`,
    })),
    notifyStopFailed: sendParent(({ context }, p: { at: number; message: string }) => ({
      type: "shell.stop_failed" as const,
      id: context.id,
      at: p.at,
      reason: context.stop?.reason ?? "kill",
      escalated: context.escalated === true,
      message: p.message,
    })),
  },
  guards: {
    stopPending: ({ context }) => context.stop !== undefined,
    shellExited: ({ context }) => context.shellExit !== undefined,
    signalIsKill: ({ context }) => context.stop?.signal === "SIGKILL",
    stopIsEviction: ({ context }) => context.stop?.reason === "evict",
    outputHeldOutside: (_, e: { outputOpen: boolean }) => e.outputOpen,
  },
  delays: {
    grace: ({ context }) => (context.stop?.reason === "kill" ? context.limits.killGraceMs : context.limits.stopGraceMs),
    unkillable: ({ context }) => context.limits.unkillableMs,
  },
}).createMachine({
  id: "exec-session",
  context: ({ input }) => ({ ...input }),
  invoke: {
    src: "shell",
    id: "shell",
    input: ({ context }) => ({
      id: context.id,
      owner: execActorId(context.id),
      command: context.command,
      shell: context.shell,
      cwd: context.cwd,
      tty: context.tty,
      cols: context.cols,
      rows: context.rows,
    }),
  },
  initial: "starting",
  states: {
    starting: {
      description: "The process is being started; a stop asked for now happens as soon as it exists.",
      on: {
        "shell.spawned": [
          {
            guard: "stopPending",
            target: "stopping",
            actions: [
              { type: "recordSpawn", params: ({ event }) => event },
              { type: "notifyRunning", params: ({ event }) => event },
            ],
          },
          {
            target: "running",
            actions: [
              { type: "recordSpawn", params: ({ event }) => event },
              { type: "notifyRunning", params: ({ event }) => event },
            ],
          },
        ],
        "shell.spawn_failed": {
          target: "failed",
          actions: { type: "recordFailure", params: ({ event }) => event.message },
        },
        "shell.stop": { actions: { type: "requestStop", params: ({ event }) => event } },
      },
    },
    running: {
      description: "The output stream is open; write_stdin drives the process and polls its output.",
      initial: "attached",
      states: {
        attached: {
          description: "The shell process is alive.",
          always: { guard: "shellExited", target: "held" },
          on: {
            "shell.process_exited": {
              target: "held",
              actions: [
                { type: "recordShellExit", params: ({ event }) => event },
                { type: "notifyHeld", params: ({ event }) => event },
              ],
            },
          },
        },
        held: {
          description: "The shell exited, but a background process it started still holds the output stream open.",
        },
      },
      on: {
        "shell.closed": "exited",
        "shell.stop": { target: "stopping", actions: { type: "requestStop", params: ({ event }) => event } },
      },
    },
    stopping: {
      description: "A kill, eviction or shutdown: the signal went to the process group; SIGKILL follows a grace.",
      initial: "choosing",
      states: {
        choosing: {
          description: "Transient: a requested SIGKILL skips the grace.",
          always: [{ guard: "signalIsKill", target: "escalated" }, { target: "signalled" }],
        },
        signalled: {
          description: "The requested signal was sent; SIGKILL follows if the stream is still open after the grace.",
          entry: { type: "signal", params: ({ context }) => context.stop!.signal },
          after: { grace: "escalated" },
          on: {
            // The signal found no process: the group had ended by itself, perhaps just before, while Node had not yet
            // read the end of its output or the shell's exit report. Not a failed stop unless the output stays open.
            "shell.group_gone": [groupGoneHeldOutside, { target: "ended" }],
          },
        },
        ended: {
          description:
            "The requested signal found the group gone, ended by itself, and the output at its end: the stream's close follows with the shell's exit report.",
        },
        escalated: {
          description: "SIGKILL was sent to the process group; the session ends when its output stream closes.",
          entry: [{ type: "signal", params: "SIGKILL" }, "markEscalated"],
          initial: "emptying",
          states: {
            emptying: {
              description: "Members of the group remain: killed, but not yet run to their end by the kernel.",
              on: {
                "shell.group_gone": [groupGoneHeldOutside, { target: "emptied" }],
              },
              after: {
                unkillable: {
                  target: "#exec-session.running",
                  actions: [
                    {
                      type: "notifyStopFailed",
                      params: ({ context }) => ({
                        at: stopDeadline(context),
                        message: `a process of the group was still there ${context.limits.unkillableMs / 1000} s after SIGKILL (one in uninterruptible sleep, such as on a hung mount, dies only when that wait ends)`,
                      }),
                    },
                    "clearStop",
                  ],
                },
              },
            },
            emptied: {
              description:
                "Every member exited and the output reached its end: the stream's close follows with the shell's exit report.",
            },
          },
        },
      },
      on: {
        "shell.closed": [{ guard: "stopIsEviction", target: "evicted" }, { target: "killed" }],
        "shell.process_exited": { actions: { type: "recordShellExit", params: ({ event }) => event } },
        "shell.signal_failed": {
          target: "running",
          actions: [
            {
              type: "notifyStopFailed",
              params: ({ event }) => ({ at: event.at, message: `${event.signal}: ${event.message}` }),
            },
            "clearStop",
          ],
        },
      },
    },
    exited: {
      type: "final",
      description: "The command ended and its output stream closed.",
      output: ({ context, event }) => ({ id: context.id, end: "exited" as const, ...exitOf(event, context) }),
    },
    killed: {
      type: "final",
      description: "Ended by kill_session, /exec-sessions or Pi's shutdown.",
      output: ({ context, event }) => stoppedOutput("killed", context, event),
    },
    evicted: {
      type: "final",
      description: "Ended to make room: the least recently used session at the 64-session cap.",
      output: ({ context, event }) => stoppedOutput("evicted", context, event),
    },
    failed: {
      type: "final",
      description: "The process could not be started.",
      output: ({ context, event }) => ({
        id: context.id,
        end: "failed" as const,
        at: "at" in event && typeof event.at === "number" ? event.at : context.startedAt,
        code: null,
        signal: null,
        ...(context.failure ? { failure: context.failure } : {}),
      }),
    },
  },
  output: ({ event }) => event.output as ExecSessionOutput,
});

/** When an unanswered SIGKILL counts as failed: the stop's time plus its grace and the bound for an unkillable member. */
function stopDeadline(c: ExecSessionContext): number {
  const s = c.stop;
  if (!s) return c.startedAt;
  const grace = s.signal === "SIGKILL" ? 0 : s.reason === "kill" ? c.limits.killGraceMs : c.limits.stopGraceMs;
  return s.at + grace + c.limits.unkillableMs;
}

/** A session we stopped: why (an eviction always says `evict`), whether SIGKILL followed, and its exit. */
function stoppedOutput(
  end: "killed" | "evicted",
  context: ExecSessionContext,
  event: ExecSessionEvent,
): ExecSessionOutput {
  const reason = end === "evicted" ? "evict" : context.stop?.reason;
  return {
    id: context.id,
    end,
    ...(reason ? { reason } : {}),
    ...(context.escalated ? { escalated: true } : {}),
    ...exitOf(event, context),
  };
}

function exitOf(event: ExecSessionEvent, context: ExecSessionContext): ExitInfo {
  if (event.type === "shell.closed") return { at: event.at, code: event.code ?? null, signal: event.signal ?? null };
  return context.shellExit ?? { at: context.startedAt, code: null, signal: null };
}
