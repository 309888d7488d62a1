// Process-table checks for the no-orphans tests: real /proc, no mocks.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

/** Whether `pid` is a live process (not a zombie). Anything but a positive integer throws: a pid not known yet
 * (`details.pid` of a session whose spawn outlasted its window) would read as "dead" and pass a wait vacuously. */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`pidAlive: not a pid: ${String(pid)}`);
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // A zombie has exited; only its exit status is left for the parent to collect.
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Live processes whose command line contains `needle`. */
export function processesMatching(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " ");
      if (cmd.includes(needle) && pidAlive(Number(entry))) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The tests' one wait for a condition: polls `check` (which may ask something asynchronously: a page, a port, a
 * run) until it holds or `timeoutMs` passed; whether it held (a test asserts it, with what it waited for as the
 * message). */
export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs = 3000): Promise<boolean> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

/** The host pid of a process seen as `inner` inside a pid namespace (a sandboxed runner's os.getpid()), found only
 * among the descendants of `roots` (the sandbox's own process groups) by the NSpid line of /proc/<pid>/status:
 * undefined when no process there matches, so a test never acts on a pid it has not tied to the sandbox. */
export function hostPidIn(inner: number, roots: number[]): number | undefined {
  const parent = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone meanwhile
    }
  }
  const under = (pid: number): boolean => {
    for (let p: number | undefined = pid; p && p > 1; p = parent.get(p)) if (roots.includes(p)) return true;
    return false;
  };
  for (const pid of parent.keys()) {
    if (!under(pid)) continue;
    try {
      const line = /^NSpid:\s*(.+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
      const ids = line?.trim().split(/\s+/).map(Number) ?? [];
      if (ids.length > 1 && ids[0] === pid && ids[ids.length - 1] === inner) return pid;
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** Live processes whose session id (field 6 of /proc/<pid>/stat) is `sid`. */
export function sessionMembers(sid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, , , session] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(session) === sid && state !== "Z") found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Live processes in the same cgroup v2 as `pid` (none if it is in the root cgroup or has no v2 cgroup). */
export function cgroupPeers(pid: number): number[] {
  const dir = cgroupDir(pid);
  if (!dir) return [];
  try {
    return readFileSync(`${dir}/cgroup.procs`, "utf8").split("\n").filter(Boolean).map(Number).filter(pidAlive);
  } catch {
    return [];
  }
}

/** The cgroup v2 directory `pid` is in (where the unified hierarchy is mounted here), unless it is the root. */
export function cgroupDir(pid: number): string | undefined {
  try {
    const path = /^0::(.+)$/m.exec(readFileSync(`/proc/${pid}/cgroup`, "utf8"))?.[1];
    if (!path || path === "/") return undefined;
    const mount = readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .find((l) => l.split(" - ")[1]?.startsWith("cgroup2 "))
      ?.split(" ")[4];
    return mount ? `${mount}${path}` : undefined;
  } catch {
    return undefined;
  }
}

/** The parent pid of `pid` (0 when it is gone). */
export function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return 0;
  }
}

/** Spawn to exit of a bare interpreter start (`<exe> -c pass`), in ms: the cost a spare runner saves a run. */
export async function bareStart(exe: string): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((res, rej) => {
    const p = spawn(exe, ["-c", "pass"], { stdio: "ignore" });
    p.once("exit", () => res());
    p.once("error", rej);
  });
  return performance.now() - t0;
}
