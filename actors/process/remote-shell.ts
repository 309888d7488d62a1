// Shells (and other children) of the remote backend: the program runs on the far side under a small Python wrapper
// (WRAP) that puts it in a process group of its own, announces that group's id on the first line of its output,
// and kills the group when the connection goes (its stdin ends, or, with a PTY, the terminal hangs up). Signals
// travel as a separate `kill -s SIG -- -<pgid>` through the transport (cheap over the ssh master connection); a
// SIGKILL also kills the local transport process, whose end the wrapper sees. The session ends once nothing of the
// group is left on the far side, so nothing of it outlives the session there.
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { fail, ok, type Result } from "../../lib/result.ts";
import { ChildEvents, type ChildExit, type ChildHandle } from "./children.ts";

/** Runs with `python -c WRAP <cwd> <pipe|pty> <program> <args...>` on the far side. Standard library only. */
export const WRAP = String.raw`
import os, signal, sys, threading, time
cwd, mode = sys.argv[1:3]
argv = sys.argv[3:]
if cwd:
    try:
        os.chdir(cwd)
    except OSError as e:
        sys.stderr.write("cannot enter %s: %s\n" % (cwd, e.strerror)); sys.exit(126)
go_r, go_w = os.pipe()
if mode == "pipe":
    in_r, in_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    for s in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTOU, signal.SIGTTIN, signal.SIGHUP, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)
    os.close(go_w)
    os.read(go_r, 1)
    os.close(go_r)
    if mode == "pipe":
        os.dup2(in_r, 0); os.close(in_r); os.close(in_w)
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        os.write(2, ("%s: %s\n" % (argv[0], e.strerror)).encode()); os._exit(127)
try:
    os.setpgid(pid, pid)
except OSError:
    pass
def kill_group(*_):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    os._exit(129)
for s in (signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, kill_group)
# First line: the group to signal. Written before the program may run, so nothing of its output comes first.
os.write(1, b"pcs-pgid %d\n" % pid)
if mode == "pty":
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(0, pid)  # ^C typed as a byte reaches the program's group
    except OSError:
        pass
    def watch():
        # A hangup reaches the controlling process; when that is not us (kubectl, docker), notice the dead terminal.
        while True:
            time.sleep(0.5)
            try:
                os.tcgetpgrp(0)
            except OSError:
                kill_group()
    threading.Thread(target=watch, daemon=True).start()
else:
    os.close(in_r)
    import queue
    q = queue.Queue()
    def read():
        while True:
            try:
                b = os.read(0, 65536)
            except OSError:
                b = b""
            if not b:
                kill_group()  # the connection (or the session) let go: nothing of the group may outlive it
            q.put(b)
    def write():
        while True:
            b = q.get()
            try:
                os.write(in_w, b)
            except OSError:
                pass  # the program closed its stdin; keep reading ours, to notice the end of the connection
    threading.Thread(target=read, daemon=True).start()
    threading.Thread(target=write, daemon=True).start()
os.write(go_w, b"x"); os.close(go_w); os.close(go_r)
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
# What the program left in its group (a background job holding the output, or not) keeps the session: it is killed
# with it, or when the connection goes.
while True:
    try:
        os.killpg(pid, 0)
    except OSError:
        break
    time.sleep(0.2)
sys.stdout.flush()
os._exit(128 - code if code < 0 else code)
`;

const PGID_LINE = /^pcs-pgid (\d+)\r?\n/;
const SIGNALS = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name]));

/** The wrapper reports a program killed by signal N as 128+N (as shells do): read back as that signal. */
export function remoteExit(exit: ChildExit): ChildExit {
  if (exit.signal || exit.code === null || exit.code <= 128 || exit.code === 255) return exit;
  const signal = SIGNALS.get(exit.code - 128);
  return signal ? { code: null, signal } : exit;
}

/** The transport's handle, seen as the remote program's: the pgid line is taken off its output, and signals go to
 * the remote group. `sendKill(signal, pgid)` runs `kill` on the far side. */
export function remoteChild(
  inner: ChildHandle,
  sendKill: (signal: string, pgid: number) => Promise<Result<void>>,
): ChildHandle {
  const events = new ChildEvents();
  let pgid: number | undefined;
  let head: Buffer | undefined = Buffer.alloc(0);
  const pending: string[] = [];
  inner.onData((chunk, stream) => {
    if (head === undefined || stream !== "stdout") return events.emitData(chunk, stream);
    head = Buffer.concat([head, chunk]);
    const text = head.toString("latin1");
    const m = PGID_LINE.exec(text);
    if (m) {
      pgid = Number(m[1]);
      const rest = head.subarray(m[0].length);
      head = undefined;
      if (rest.length) events.emitData(rest, "stdout");
      for (const s of pending.splice(0)) void sendKill(s, pgid);
    } else if (text.includes("\n") || head.length > 64) {
      // Not the wrapper speaking (the transport failed before it ran): everything is output.
      const all = head;
      head = undefined;
      events.emitData(all, "stdout");
    }
  });
  inner.onProcessExit((e) => events.emitExit(e));
  inner.onClose((e) => {
    if (head?.length) events.emitData(head, "stdout");
    head = undefined;
    events.emitClose(e);
  });
  return {
    pid: inner.pid,
    onData: (fn) => events.onData(fn),
    onProcessExit: (fn) => events.onProcessExit(fn),
    onClose: (fn) => events.onClose(fn),
    pipesOpen: () => inner.pipesOpen(),
    write: (bytes) => inner.write(bytes),
    signalGroup(signal) {
      if (events.closed) return fail("ESRCH");
      if (pgid !== undefined) void sendKill(signal, pgid);
      else if (signal !== "SIGKILL") pending.push(signal);
      // SIGKILL: the transport goes too; its end makes the wrapper kill the group, even when the connection hangs.
      if (signal === "SIGKILL") return inner.signalGroup("SIGKILL");
      return ok(undefined);
    },
    destroy: () => inner.destroy(),
  };
}

/** Runs `argv` (a transport command running `kill` on the far side) to its end. */
export function runKill(argv: string[]): Promise<Result<void>> {
  return new Promise((done) => {
    const [program, ...args] = argv;
    const child = spawn(program!, args, { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (c: Buffer) => (err += c.toString("utf8")));
    child.once("error", (e: NodeJS.ErrnoException) => done(fail(e.code ?? e.message)));
    child.once("close", (code) => done(code === 0 ? ok(undefined) : fail(err.trim() || `kill exited with ${code}`)));
  });
}

/** The far side's `kill` of a whole group, shell-independent (POSIX `kill -s NAME -- -PGID`). */
export function killCommand(signal: string, pgid: number): string[] {
  return ["sh", "-c", 'kill -s "$1" -- "-$2"', "sh", signal.replace(/^SIG/, ""), String(pgid)];
}
