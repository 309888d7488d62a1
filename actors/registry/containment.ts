// What a runner started, wherever it moved. A process group is not enough: `setpgid`, `process_group=0` and any
// shell with job control leave it. Two nets catch the rest:
// - a cgroup v2 per runner, where the hierarchy is writable: every descendant is born in it and cannot leave it
//   by itself (even `setsid()`); `cgroup.kill` kills all of them at once, forks in flight included;
// - else the runner's session (it is started with setsid, so its pid is the session id): every descendant that
//   did not call `setsid()` keeps that session id, found by scanning /proc.
// Everything here is synchronous and small; the registry (registry.ts) decides when to signal and polls.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";

export type ContainmentKind = "cgroup" | "session";

export interface Containment {
  readonly kind: ContainmentKind;
  /** The runner's pid: also its session id and process group id. */
  readonly leader: number;
  /** Live members (zombies excluded: they have exited). A session box takes them from a shared /proc scan. */
  members(scan?: SessionScan): number[];
  /** `signal` to every member; SIGKILL in a cgroup is one atomic `cgroup.kill`. False when no member was there. */
  signal(signal: NodeJS.Signals, scan?: SessionScan): boolean;
  /** Removes what tracking left behind (the cgroup directory); false while members remain. */
  release(): boolean;
  /** The same off the event loop (removing a cgroup takes the kernel about a millisecond). */
  releaseLater(): Promise<boolean>;
}

/** Live processes by session id, for the sessions asked about. */
export type SessionScan = Map<number, number[]>;

/** The environment variable that forces session tracking (tests of the fallback; systems where cgroups misbehave). */
export const CONTAINMENT_ENV = "PI_CODE_EXECUTION_CONTAINMENT";
const BASE_PREFIX = "pi-code-supervisor.";

type Probe = { ok: true; base: string } | { ok: false; reason: string };
/** Process-wide (Pi loads a copy of these modules per Pi session): one probe, one base directory, one counter. */
const state: { probed?: Probe; seq: number } = ((globalThis as Record<symbol, { probed?: Probe; seq: number }>)[
  Symbol.for("pi-code-supervisor.containment")
] ??= { seq: 0 });

/** Which net applies in this process, and why not cgroups when they do not. */
export function containmentMode(): { kind: ContainmentKind; reason?: string } {
  if (process.env[CONTAINMENT_ENV] === "session")
    return { kind: "session", reason: `${CONTAINMENT_ENV}=session forces session tracking` };
  const p = probe();
  return p.ok ? { kind: "cgroup" } : { kind: "session", reason: p.reason };
}

/** Moves `pid` (a process that has not run user code yet, unless `running`) into a cgroup of its own, if cgroups
 * apply here;
 * undefined means session tracking. Asynchronous: a cgroup migration can take milliseconds (the kernel waits for
 * an RCU grace period), which must not block Pi's event loop. */
export async function contain(pid: number, running = false): Promise<Containment | undefined> {
  if (containmentMode().kind !== "cgroup") return undefined;
  const dir = join((state.probed as { base: string }).base, `r${pid}-${++state.seq}`);
  try {
    await mkdir(dir);
    await writeFile(join(dir, "cgroup.procs"), String(pid));
    // A process that was already running may have started children before it moved: they follow it (twice, for
    // a child that forked while the first were moved).
    if (running) for (let pass = 0; pass < 2; pass++) await follow(pid, dir);
    return cgroupBox(pid, dir);
  } catch (e) {
    await rmdir(dir).catch(() => undefined);
    // A process that already exited cannot be moved; anything else means cgroups do not work here after all.
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "ESRCH") state.probed = { ok: false, reason: `moving a process into ${dir} failed (${code})` };
    return undefined;
  }
}

/** A cgroup made before its process exists: the process joins it itself (`argv` starts it through a tiny shell
 * that writes its own pid into `cgroup.procs` and then execs the program), so it and everything it will ever start
 * are inside before a single instruction of the program ran. Nothing has to move a running process afterwards. */
export interface PreparedCgroup {
  readonly dir: string;
  /** The argv that joins the cgroup and then execs `program` (fails with 126 and a message if it cannot join). */
  argv(program: string[]): string[];
  /** The containment of the process started with `argv` (its pid, which leads its own session). */
  box(pid: number): Containment;
  /** The start failed: the empty directory goes. */
  discard(): void;
}

/** The joining shell: `$1` is the cgroup directory, the rest the program. `echo` is a builtin, so the pid written
 * ("0": the writer) is the shell's own, which `exec` then hands to the program. */
const JOIN = 'echo 0 > "$1/cgroup.procs" || { echo "cannot join the cgroup $1" >&2; exit 126; }; shift; exec "$@"';

/** A fresh cgroup for a child about to start, where cgroups apply; undefined means session tracking. */
export async function prepareCgroup(): Promise<PreparedCgroup | undefined> {
  if (containmentMode().kind !== "cgroup") return undefined;
  const dir = join((state.probed as { base: string }).base, `c${++state.seq}`);
  try {
    await mkdir(dir);
  } catch (e) {
    state.probed = { ok: false, reason: `creating ${dir} failed (${(e as NodeJS.ErrnoException).code})` };
    return undefined;
  }
  return {
    dir,
    argv: (program) => ["/bin/sh", "-c", JOIN, "pi-cgroup-join", dir, ...program],
    box: (pid) => joiningBox(pid, dir),
    discard: () => void removeCgroup(dir),
  };
}

/** A prepared cgroup whose leader may not have joined yet (it is between its spawn and its `echo`): until it has,
 * the leader itself counts as a member and gets the signals, so a stop in that window is never missed. */
function joiningBox(leader: number, dir: string): Containment {
  const inner = cgroupBox(leader, dir);
  const name = `/${dir.slice(dir.lastIndexOf("/") + 1)}`;
  let joined = false;
  /** The leader, alive and outside the cgroup still (it leads its session: a reused pid would not). */
  const outside = (): boolean => {
    if (joined) return false;
    try {
      const stat = readFileSync(`/proc/${leader}/stat`, "latin1");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ", 4);
      if (f[0] === "Z" || f[0] === "X" || Number(f[3]) !== leader) return false;
      const cg = /^0::(.*)$/m.exec(readFileSync(`/proc/${leader}/cgroup`, "utf8"))?.[1] ?? "";
      if (cg.endsWith(name)) joined = true;
      return !joined;
    } catch {
      return false; // gone: it never joined, and never ran the program
    }
  };
  return {
    ...inner,
    members() {
      const m = inner.members();
      return m.length === 0 && outside() ? [leader] : m;
    },
    signal(signal) {
      const early = outside() && kill(leader, signal);
      return inner.signal(signal) || early;
    },
  };
}

/** Moves the members of `leader`'s session that are not in `dir` yet into it. */
async function follow(leader: number, dir: string): Promise<void> {
  const inside = new Set(pids(await readFile(join(dir, "cgroup.procs"), "utf8")));
  for (const pid of scanSessions([leader]).get(leader) ?? [])
    if (!inside.has(pid)) await writeFile(join(dir, "cgroup.procs"), String(pid)).catch(() => undefined);
}

/** Removes this process's cgroup directory (at exit, after every box was released). */
export function releaseBase(): void {
  if (state.probed?.ok) removeCgroup(state.probed.base);
}

function cgroupBox(leader: number, dir: string): Containment {
  const procs = join(dir, "cgroup.procs");
  return {
    kind: "cgroup",
    leader,
    members() {
      try {
        return pids(readFileSync(procs, "utf8"));
      } catch {
        return [];
      }
    },
    signal(signal) {
      const members = this.members();
      if (signal === "SIGKILL") {
        try {
          // Forks in flight included; `members` only says whether there was anything to kill.
          writeFileSync(join(dir, "cgroup.kill"), "1");
          return members.length > 0;
        } catch {
          // removed already: nothing left to kill
        }
      }
      let any = false;
      for (const pid of members) any = kill(pid, signal) || any;
      return any;
    },
    release: () => removeCgroup(dir),
    releaseLater: () => removeWhenEmpty(dir),
  };
}

/** How long a cgroup that is still busy (a member exiting, or being stopped by someone else) is retried. */
const REMOVE_RETRY_MS = 60_000;

/** Removes a cgroup once the kernel lets it go: rmdir fails with EBUSY while a member is still exiting, and a single
 * try left one empty directory behind about once a minute under the mixed soak (bench/soak.ts), until Pi quit.
 * Retried with backoff (10 ms doubling to 1 s) for up to a minute, off Pi's event loop (the timers hold nothing). */
async function removeWhenEmpty(dir: string): Promise<boolean> {
  const until = Date.now() + REMOVE_RETRY_MS;
  for (let wait = 10; ; wait = Math.min(wait * 2, 1000)) {
    try {
      await rmdir(dir);
      return true;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return true;
      if (code !== "EBUSY" || Date.now() + wait > until) return false;
    }
    await new Promise((resolve) => setTimeout(resolve, wait).unref());
  }
}

/** Tracking by session id: the runner leads its own session (it is started with setsid). */
export function sessionBox(leader: number): Containment {
  return {
    kind: "session",
    leader,
    members: (scan) => (scan ?? scanSessions([leader])).get(leader) ?? [],
    signal(signal, scan) {
      // The group first: one call reaches most members before the scan has even started.
      let any = kill(-leader, signal);
      for (const pid of this.members(scan)) any = kill(pid, signal) || any;
      return any;
    },
    release: () => true,
    releaseLater: async () => true,
  };
}

/** One pass over /proc: the live members of each of `sids` (field 6 of /proc/<pid>/stat is the session id). */
export function scanSessions(sids: Iterable<number>): SessionScan {
  const wanted = new Set(sids);
  const found: SessionScan = new Map();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const entry of entries) {
    const c = entry.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "latin1");
    } catch {
      continue; // exited meanwhile
    }
    // After the command name (which may hold spaces and parentheses): state ppid pgrp session ...
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ", 4);
    const sid = Number(fields[3]);
    if (!wanted.has(sid) || fields[0] === "Z" || fields[0] === "X") continue;
    const list = found.get(sid);
    if (list) list.push(Number(entry));
    else found.set(sid, [Number(entry)]);
  }
  return found;
}

function kill(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false; // gone already
  }
}

function pids(text: string): number[] {
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map(Number);
}

function removeCgroup(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/** Finds the cgroup v2 directory of this process and creates this process's own directory under it. */
function probe(): Probe {
  return (state.probed ??= findBase());
}

function findBase(): Probe {
  if (process.platform !== "linux")
    return { ok: false, reason: `cgroups are Linux-only (this is ${process.platform})` };
  let mount: { root: string; point: string } | undefined;
  let own: string | undefined;
  try {
    for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
      const [left, right] = line.split(" - ");
      if (!right?.startsWith("cgroup2 ")) continue;
      const f = left.split(" ");
      mount = { root: unescapeMount(f[3]), point: unescapeMount(f[4]) };
      break;
    }
    own = /^0::(.*)$/m.exec(readFileSync("/proc/self/cgroup", "utf8"))?.[1];
  } catch (e) {
    return { ok: false, reason: `cannot read /proc (${(e as NodeJS.ErrnoException).code})` };
  }
  if (!mount || own === undefined) return { ok: false, reason: "no cgroup v2 hierarchy is mounted" };
  const rel = relative(mount.root, own);
  if (rel.startsWith("..")) return { ok: false, reason: `this process's cgroup ${own} is outside the mounted one` };
  const parent = join(mount.point, rel);
  const base = join(parent, `${BASE_PREFIX}${process.pid}`);
  try {
    mkdirSync(base);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "EEXIST") return { ok: false, reason: `cannot create a cgroup under ${parent} (${code})` };
  }
  if (!existsSync(join(base, "cgroup.kill"))) {
    removeCgroup(base);
    return { ok: false, reason: "the kernel has no cgroup.kill (Linux 5.14 or later is needed)" };
  }
  sweep(parent);
  // Removed at exit once empty (the registry's exit handler kills the members first and tries again).
  process.once("exit", () => removeCgroup(base));
  return { ok: true, base };
}

/** Cgroups left by a supervisor process that died without cleaning up (SIGKILL): their processes are leftovers of
 * runners whose host is gone, so they are killed, and the directories removed. */
function sweep(parent: string): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(BASE_PREFIX)) continue;
    const owner = Number(name.slice(BASE_PREFIX.length));
    if (!Number.isInteger(owner) || owner === process.pid || existsSync(`/proc/${owner}`)) continue;
    const base = join(parent, name);
    let boxes: string[] = [];
    try {
      boxes = readdirSync(base, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    } catch {
      continue;
    }
    for (const box of boxes) {
      try {
        writeFileSync(join(base, box, "cgroup.kill"), "1");
      } catch {
        // gone meanwhile
      }
      removeCgroup(join(base, box));
    }
    removeCgroup(base);
  }
}

/** Mount points escape space, tab, newline and backslash as octal. */
function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}
