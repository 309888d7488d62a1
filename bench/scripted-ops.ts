// A process port (actors/process/operations.ts) with no process and no pipe, for bench/host-cost.ts: runners and
// shells that answer at once, so what a host call costs is the supervisor's own work. A runner says `ready` when
// its owner listens, and answers a `run` on the next turn of the event loop (setImmediate, where a pipe's answer
// would land) with `started` and `done`; a run whose code starts with `#nested N` first makes N nested calls of
// the tool `bench_noop`, one after another, each after the previous `tool.result`. A shell's command `true` exits
// at once (exit code 0, no output); `cat` echoes what is written to it until it is signalled.
//
// Pids are above Linux's PID_MAX_LIMIT (2^22), so no real process can have them: the registry's signals to them
// fail with ESRCH and their cgroup moves fail the same way (the registry then tracks them by session).
import { fail, ok, type Result } from "../lib/result.ts";
import type { Frame } from "../actors/process/framing.ts";
import type { ProcessOperations, RunnerExit, RunnerHandle } from "../actors/process/operations.ts";
import type { ChildExit, ChildHandle, ChildStream } from "../actors/process/children.ts";

const FAKE_PID_BASE = 1 << 23;
const NESTED = /^#nested (\d+)/;
export const NESTED_TOOL = "bench_noop";

/** What the scripted processes were asked to do, to check a bench did what it says. */
export interface ScriptedCounts {
  runners: number;
  runs: number;
  toolCalls: number;
  shells: number;
  writes: number;
}

export function scriptedOperations(): ProcessOperations & { counts: ScriptedCounts } {
  let nextPid = FAKE_PID_BASE;
  const counts: ScriptedCounts = { runners: 0, runs: 0, toolCalls: 0, shells: 0, writes: 0 };
  return {
    counts,
    backend: { kind: "local", label: "scripted (no process)" },
    async start(spec) {
      counts.runners++;
      return ok(scriptedRunner(++nextPid, spec.executable, counts));
    },
    async spawn(spec) {
      const command = spec.args[spec.args.length - 1] ?? "";
      if (command !== "true" && command !== "cat")
        return fail({ message: `scripted shell: only "true" and "cat" are scripted, not ${JSON.stringify(command)}` });
      counts.shells++;
      return ok(scriptedShell(++nextPid, command, counts));
    },
    health: async () => ok("scripted: no process starts"),
    close: async () => {},
  };
}

function scriptedRunner(pid: number, executable: string, counts: ScriptedCounts): RunnerHandle {
  let frameListeners: ((f: Frame) => void)[] = [];
  let exitListeners: ((e: RunnerExit) => void)[] = [];
  let ready = false;
  let exited = false;
  /** The run making nested calls: how many are left, and the call counter. */
  let nested: { run: string; left: number; seq: number } | undefined;
  const js = executable === process.execPath;
  const emit = (f: Frame) => {
    for (const fn of frameListeners) fn(f);
  };
  const later = (fn: () => void) => setImmediate(() => !exited && fn());
  const exit = (e: RunnerExit) => {
    if (exited) return;
    exited = true;
    for (const fn of exitListeners.splice(0)) fn(e);
  };
  const done = (id: string) => emit({ type: "done", id, exitCode: 0, displayedValue: false, error: null });
  const call = (n: { run: string; left: number; seq: number }) => {
    n.left--;
    n.seq++;
    counts.toolCalls++;
    emit({ type: "tool.call", id: `c${n.seq}`, run: n.run, name: NESTED_TOOL, args: {} });
  };
  return {
    pid,
    onStdout() {},
    onStderr() {},
    onFrame(fn) {
      frameListeners.push(fn);
      if (!ready) {
        ready = true;
        const version = js ? { node: process.versions.node } : { python: "3.11.7" };
        later(() => emit({ type: "ready", protocol: 1, pid, executable, mode: "session", ...version }));
      }
    },
    onProtocolError() {},
    onExit(fn) {
      exitListeners.push(fn);
    },
    send(frame): Result<void> {
      switch (frame.type) {
        case "run": {
          counts.runs++;
          const id = String(frame.id);
          const m = NESTED.exec(String(frame.code));
          later(() => {
            emit({ type: "started", id });
            if (m && Number(m[1]) > 0) call((nested = { run: id, left: Number(m[1]), seq: 0 }));
            else done(id);
          });
          break;
        }
        case "tool.result": {
          const n = nested;
          if (!n || frame.run !== n.run) break;
          later(() => {
            if (n.left > 0) call(n);
            else {
              nested = undefined;
              done(n.run);
            }
          });
          break;
        }
        case "shutdown":
          later(() => exit({ code: 0, signal: null }));
          break;
      }
      return ok(undefined);
    },
    signal: () => ok(undefined),
    signalGroup(signal) {
      if (signal === "SIGKILL" || signal === "SIGTERM") setImmediate(() => exit({ code: null, signal }));
      return ok(undefined);
    },
    detach() {
      frameListeners = [];
      exitListeners = [];
    },
  };
}

function scriptedShell(pid: number, command: "true" | "cat", counts: ScriptedCounts): ChildHandle {
  const data: ((c: Buffer, s: ChildStream) => void)[] = [];
  const early: Buffer[] = [];
  const exits: ((e: ChildExit) => void)[] = [];
  const closes: ((e: ChildExit) => void)[] = [];
  let ended: ChildExit | undefined;
  const end = (e: ChildExit) => {
    if (ended) return;
    ended = e;
    for (const fn of exits.splice(0)) fn(e);
    for (const fn of closes.splice(0)) fn(e);
  };
  const out = (c: Buffer) => {
    if (data.length === 0) early.push(c);
    for (const fn of data) fn(c, "stdout");
  };
  if (command === "true") setImmediate(() => end({ code: 0, signal: null }));
  return {
    pid,
    onData(fn) {
      data.push(fn);
      for (const c of early.splice(0)) fn(c, "stdout");
    },
    onProcessExit(fn) {
      if (ended) fn(ended);
      else exits.push(fn);
    },
    onClose(fn) {
      if (ended) fn(ended);
      else closes.push(fn);
    },
    pipesOpen: () => !ended,
    write(bytes) {
      counts.writes++;
      if (ended) return fail("stdin write failed: the process has exited");
      const copy = Buffer.from(bytes);
      setImmediate(() => !ended && out(copy));
      return ok(undefined);
    },
    signalGroup(signal) {
      setImmediate(() => end({ code: null, signal }));
      return ok(undefined);
    },
    destroy() {},
  };
}
