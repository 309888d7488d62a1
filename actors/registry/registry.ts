// Every live runner (and installer, and shell) with everything it started, kept outside XState: no error path in
// the actor tree can orphan Python (a root that errors does not stop its invoked children, xstate#5153). A "group"
// here is the leader's containment (containment.ts): its cgroup, or its session, not only its process group. Pi
// exiting kills whatever is left. A floor of its own (actors/registry/, with the containment it uses): the process
// port, every job that starts a child and the host's shutdown all need it, and it needs none of them.
// Pi loads the extension's modules afresh for every Pi session, so module state is per session: the registry is
// process-wide (one per process, under a global symbol), and its `exit` hook is there only while it holds a group.
import { fail, ok, type Result } from "../../lib/result.ts";
import { contain, releaseBase, scanSessions, sessionBox, type Containment, type SessionScan } from "./containment.ts";
import type { Shutdown } from "./shutdown.ts";

export interface GroupOwner {
  host: string;
  owner: string;
}

interface Stopping {
  started: number;
  killMs: number;
  /** Members already sent SIGTERM (a member forked during the grace gets its own). */
  termed: Set<number>;
  polls: number;
  /** Its empty cgroup is being removed. */
  releasing?: boolean;
  done: Promise<void>;
  resolve: () => void;
}

interface Entry {
  box: Containment;
  owner?: GroupOwner;
  stopping?: Stopping;
  /** Called once the group is empty (`whenEmpty`), and whether a series of looks is under way for them. */
  emptyWaiters?: (() => void)[];
  looking?: boolean;
}

interface Registry {
  entries: Map<number, Entry>;
  /** A poll of the stopping groups is scheduled. */
  ticking: boolean;
  killAll: () => void;
}

const KEY = Symbol.for("pi-code-supervisor.process-trees");
const registry: Registry = ((globalThis as Record<symbol, Registry | undefined>)[KEY] ??= {
  entries: new Map(),
  ticking: false,
  killAll: () => killAll(),
});
const entries = registry.entries;

function add(pid: number, entry: Entry): void {
  if (entries.size === 0) process.on("exit", registry.killAll);
  entries.set(pid, entry);
}

function remove(pid: number): void {
  if (entries.delete(pid) && entries.size === 0) process.removeListener("exit", registry.killAll);
}

/** How often a stop looks again (members forked meanwhile, the grace running out): a cgroup costs one small read,
 * so every 10 ms; a /proc scan costs milliseconds, so session tracking backs off, 10 ms doubling up to 80 ms, but
 * never sleeps past a grace's end. */
const POLL_MS = 10;
const SCAN_POLL_MAX_MS = 80;
/** How long an empty cgroup may refuse removal before the stop resolves without it. */
const RELEASE_MS = 1000;

/** Starts tracking a just-spawned process (before it runs user code) and everything it will start: by its session
 * at once, by its own cgroup once it has moved there (where cgroups apply). Resolves when the move is done.
 * `running`: the process may have started children already (they are moved too). */
export function track(pid: number, running = false): Promise<void> {
  if (entries.has(pid)) return Promise.resolve();
  const entry: Entry = { box: sessionBox(pid) };
  add(pid, entry);
  return contain(pid, running).then((box) => {
    if (!box) return;
    if (entries.get(pid) === entry) entry.box = box;
    else box.release(); // stopped and gone meanwhile
  });
}

/** Starts tracking a child the process port started inside its own prepared cgroup (containment.ts
 * `prepareCgroup`), or, where cgroups do not apply (`box` undefined), by its session. Nothing moves afterwards:
 * the child was inside from its first instruction. */
export function adopt(pid: number, box: Containment | undefined): void {
  const old = entries.get(pid);
  // A pid tracked still under a group that is gone (reused by the kernel) is replaced.
  if (old) void old.box.releaseLater();
  if (old) remove(pid);
  add(pid, { box: box ?? sessionBox(pid) });
}

/** Gives a tracked group its owner; a process not tracked yet (started elsewhere, possibly running) is tracked now. */
export function registerGroup(pid: number, owner: GroupOwner): void {
  if (!entries.has(pid)) void track(pid, true);
  entries.get(pid)!.owner = owner;
}

/** Stops tracking `pid` (its members are gone, or someone else stops them). */
export function unregisterGroup(pid: number): void {
  const entry = entries.get(pid);
  remove(pid);
  // Off the event loop: a shell's exit reaches its caller without waiting for the kernel to remove a cgroup.
  void entry?.box.releaseLater();
}

/** How often a group is looked at again while someone waits for it to be empty: 50 ms doubling to 5 s (a member
 * still exiting goes within the first looks; a background process that outlives its command costs one small read
 * every 5 s). */
const EMPTY_POLL_MS = [50, 5000] as const;

/** Calls `fn` once the group tracked under `pid` is empty: at once, or when a later look finds it so. One series of
 * looks per group serves every waiter (a killed shell's session and the registry's own let-go below); a waiter that
 * joins looks once at once, so it does not inherit a backoff already grown long. A group that leaves the registry
 * meanwhile (let go or stopped to its end) is empty; one never tracked has nothing of it left here either. The looks
 * hold nothing of the event loop. */
export function whenEmpty(pid: number, fn: () => void): void {
  const entry = entries.get(pid);
  if (!entry) return fn();
  (entry.emptyWaiters ??= []).push(fn);
  if (entry.looking) {
    look(pid, entry);
    return;
  }
  entry.looking = true;
  let wait: number = EMPTY_POLL_MS[0];
  const again = () => {
    if (!look(pid, entry)) return;
    setTimeout(again, wait).unref();
    wait = Math.min(wait * 2, EMPTY_POLL_MS[1]);
  };
  again();
}

/** One look for `whenEmpty`'s waiters: true while they still wait. */
function look(pid: number, entry: Entry): boolean {
  if (entries.get(pid) === entry && entry.box.members().length > 0) return true;
  entry.looking = false;
  for (const fn of (entry.emptyWaiters ?? []).splice(0)) fn();
  return false;
}

/** Stops tracking `pid` once its group is empty (a member still exiting when the leader's end was seen, or a
 * background process that outlived its command). Until then it stays registered, so shutdown still stops it; a stop
 * that took it over meanwhile, or a reused pid, is left to its own owner. */
export function unregisterWhenEmpty(pid: number): void {
  const entry = entries.get(pid);
  if (!entry) return;
  whenEmpty(pid, () => {
    if (entries.get(pid) === entry && !entry.stopping) unregisterGroup(pid);
  });
}

/** `signal` to everything tracked under `pid` (its process group if it is not tracked). False if nothing was there. */
export function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  if (signalGroup(pid, signal)) return true;
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Whether anything tracked under `pid` (or its process group, if it is not tracked) is still alive. */
export function groupAlive(pid: number): boolean {
  const entry = entries.get(pid);
  if (entry) return entry.box.members().length > 0;
  try {
    process.kill(-pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** `signal` to everything under `pid` (tracked: its cgroup or session; else its process group), as a Result:
 * `ESRCH` when no process was there to receive it. */
export function signalTree(pid: number, signal: NodeJS.Signals): Result<void> {
  const entry = entries.get(pid);
  if (entry) return entry.box.signal(signal) ? ok(undefined) : fail("ESRCH");
  try {
    process.kill(-pid, signal);
    return ok(undefined);
  } catch (e) {
    return fail((e as NodeJS.ErrnoException).code ?? (e as Error).message);
  }
}

/** `signal` to the leader and everything it started. False if nothing is tracked under `pid`. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  const entry = entries.get(pid);
  if (!entry) return false;
  entry.box.signal(signal);
  return true;
}

/** Live groups, all of them or those of one host (optionally only those of owners matching `owner`). */
export function liveGroups(host?: string, owner?: RegExp): number[] {
  return [...entries]
    .filter(([, e]) => e.owner && (host === undefined || e.owner.host === host))
    .filter(([, e]) => owner === undefined || owner.test(e.owner!.owner))
    .map(([pid]) => pid);
}

/** A group stopped as its kind declares (shutdown.ts): SIGTERM to every member now, SIGKILL after the grace to any
 * that survives (again and again, so forks made meanwhile die too); resolves once no member is left, and the group
 * leaves the registry. A second stop of the same group joins the first. An untracked `pid` is stopped as the leader
 * of its own session. */
export function stopGroup(pid: number, shutdown: Shutdown): Promise<void> {
  const killMs = shutdown.graceMs;
  let entry = entries.get(pid);
  if (!entry) {
    // Not tracked (a helper process a backend started in its own session, such as ssh): stopped by its session.
    entry = { box: sessionBox(pid) };
    add(pid, entry);
  }
  if (entry.stopping) return entry.stopping.done;
  let resolve!: () => void;
  const done = new Promise<void>((r) => (resolve = r));
  entry.stopping = { started: Date.now(), killMs, termed: new Set(), polls: 0, done, resolve };
  // The process group at once (cheap, and it releases the output pipes its members hold); every other member on
  // the first poll, so the caller's result does not wait for a scan of /proc.
  try {
    process.kill(-pid, "SIGTERM");
  } catch {
    // no such group left
  }
  if (!registry.ticking) {
    registry.ticking = true;
    setImmediate(tick);
  }
  return done;
}

/** Stops a group still tracked; one no longer tracked was stopped and released already (nothing of it is left). */
export function stopTracked(pid: number, shutdown: Shutdown): Promise<void> {
  return entries.has(pid) ? stopGroup(pid, shutdown) : Promise.resolve();
}

/** One pass over every stopping group: one /proc scan shared by all session-tracked ones. */
function tick(): void {
  const stopping = [...entries].filter(([, e]) => e.stopping);
  const sids = stopping.filter(([, e]) => e.box.kind === "session").map(([pid]) => pid);
  const scan: SessionScan | undefined = sids.length ? scanSessions(sids) : undefined;
  const now = Date.now();
  for (const [pid, entry] of stopping) {
    const s = entry.stopping!;
    const members = entry.box.members(scan);
    if (members.length === 0) {
      // Empty: the directory goes too (a cgroup that refuses to go is left to the exit handler, and then to the
      // next supervisor's sweep).
      if (s.releasing) continue;
      s.releasing = true;
      void entry.box.releaseLater().then((released) => {
        s.releasing = false;
        if (entries.get(pid) !== entry || !entry.stopping) return;
        if (released || Date.now() - s.started >= s.killMs + RELEASE_MS) {
          remove(pid);
          s.resolve();
        }
      });
    } else if (now - s.started >= s.killMs) {
      entry.box.signal("SIGKILL", scan);
    } else {
      for (const m of members.filter((m) => !s.termed.has(m))) {
        s.termed.add(m);
        signal(m, "SIGTERM");
      }
    }
  }
  const next = [...entries.values()].filter((e) => e.stopping).map((e) => nextPoll(e.box, e.stopping!, now));
  if (next.length) setTimeout(tick, Math.min(...next));
  else registry.ticking = false;
}

function nextPoll(box: Containment, s: Stopping, now: number): number {
  s.polls += 1;
  if (box.kind === "cgroup") return POLL_MS;
  const backoff = Math.min(POLL_MS * 2 ** (s.polls - 1), SCAN_POLL_MAX_MS);
  const graceLeft = s.started + s.killMs - now;
  return graceLeft > 0 ? Math.min(backoff, graceLeft) : backoff;
}

/** Pi is exiting: nothing can wait any more, so every member of every group gets SIGKILL now, rescanned until
 * none is left (bounded), and the cgroup directories are removed where they already can be. */
function killAll(): void {
  const deadline = Date.now() + 1000;
  const pending = new Map(entries);
  entries.clear();
  process.removeListener("exit", registry.killAll);
  while (pending.size > 0 && Date.now() < deadline) {
    const scan = scanSessions([...pending.values()].filter((e) => e.box.kind === "session").map((e) => e.box.leader));
    for (const [pid, { box }] of pending) {
      if (box.members(scan).length === 0 && box.release()) pending.delete(pid);
      else box.signal("SIGKILL", scan);
    }
    if (pending.size > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
  }
  releaseBase();
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}
