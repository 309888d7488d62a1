// Mixed soak: every surface at once through real Pi sessions (the faux model scripting each turn, this extension
// loaded as Pi loads it), one Pi session per backend (local, sandbox), for a while (default 30 minutes):
//   bash bench/soak-all.sh [--minutes N] [--seed N] [--backends local,sandbox] [--drains SPEC]
// Each step is one assistant message of 1-4 tool calls that Pi runs together: code_execution counters in named
// sessions (with resets and interrupted runs that must keep the session), fresh runs, python cells and eval Python and
// JavaScript cells with display(), nested tool calls (a `read` of a file the soak just wrote, from Python and from
// JavaScript), shell sessions in a PTY driven with write_stdin, list_sessions and kill_session. The soak predicts every
// result; a mismatch is counted and the first ones are printed with the seed and step. Every minute (and at the start)
// the shells are closed and, with nothing in flight, the process's RSS and heap (after a full GC), open fds, live
// descendant processes and the cgroups this extension made are sampled; after a warm-up each must be flat (the rule is
// printed). After quit (each Pi session disposed as Pi does at exit) no descendant and no cgroup may remain.
// Exit status: 0 only when every result was right, everything stayed flat and nothing was left.
// Past 400 lines, one concept: one scenario whose steps, predictions and samples must agree, run as one script.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { getHeapStatistics } from "node:v8";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "../test/helpers/pi-session.ts";
import { prng, type Rng } from "../test/helpers/prng.ts";
import { dropTranscript } from "./pi-spans.ts";
import { slope } from "./run.ts";

// ---- options

function usage(why: string): never {
  console.error(
    `${why}\nusage: node --expose-gc bench/soak.ts [--minutes N] [--seed N] [--backends local,sandbox] [--drains SPEC]\n` +
      "  --drains local:12,40/sandbox:10,38  replays a run exactly: the steps after which each backend's shells were\n" +
      "  closed for a sample (printed at the end of every run); the run then ends at the last of them, whatever the time",
  );
  process.exit(2);
}

function bwrapWorks(): boolean {
  const r = spawnSync(
    "bwrap",
    ["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-user", "--unshare-pid", "/bin/true"],
    {
      stdio: "ignore",
      timeout: 10_000,
    },
  );
  return r.status === 0;
}

type Backend = "local" | "sandbox";
const opts = {
  minutes: 30,
  seed: Math.floor(Math.random() * 2 ** 31),
  backends: [] as Backend[],
  drains: undefined as Map<Backend, number[]> | undefined,
};
{
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    const [flag, value] = [args[i], args[i + 1]];
    if (value === undefined) usage(`${flag}: a value is needed`);
    i++;
    if (flag === "--minutes") {
      opts.minutes = Number(value);
      if (!Number.isFinite(opts.minutes) || opts.minutes <= 0) usage(`--minutes ${value}: a positive number is needed`);
    } else if (flag === "--seed") {
      opts.seed = Number(value);
      if (!Number.isInteger(opts.seed) || opts.seed < 0 || opts.seed >= 2 ** 32)
        usage(`--seed ${value}: an integer in 0..2^32-1 is needed`);
    } else if (flag === "--backends") {
      const names = value.split(",").map((s) => s.trim());
      for (const n of names) if (n !== "local" && n !== "sandbox") usage(`--backends: unknown backend "${n}"`);
      opts.backends = [...new Set(names)] as Backend[];
    } else if (flag === "--drains") {
      opts.drains = new Map();
      for (const part of value.split("/")) {
        const m = /^(local|sandbox):(\d+(?:,\d+)*)$/.exec(part);
        if (!m) usage(`--drains: "${part}" is not backend:step,step,...`);
        const steps = m[2].split(",").map(Number);
        if (steps.some((n, i) => i > 0 && n <= steps[i - 1])) usage(`--drains: ${part}: the steps must increase`);
        opts.drains.set(m[1] as Backend, steps);
      }
    } else usage(`unknown option ${flag}`);
  }
  if (opts.drains && opts.backends.length === 0) opts.backends = [...opts.drains.keys()];
  if (opts.drains && opts.backends.some((b) => !opts.drains!.has(b)))
    usage(`--drains: every backend needs its steps (${opts.backends.join(", ")})`);
  if (opts.backends.length === 0) {
    opts.backends = ["local"];
    if (bwrapWorks()) opts.backends.push("sandbox");
    else console.log("bwrap does not work here: the sandbox backend is left out");
  } else if (opts.backends.includes("sandbox") && !bwrapWorks()) usage("--backends sandbox: bwrap does not work here");
}

// ---- what is sampled

/** Parent of every live (non-zombie) process. */
function processTable(): Map<number, number> {
  const parent = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "latin1");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ", 2);
      if (f[0] !== "Z" && f[0] !== "X") parent.set(Number(entry), Number(f[1]));
    } catch {
      // exited meanwhile
    }
  }
  return parent;
}

/** Live descendants of this process. */
function descendants(): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of processTable()) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const found: number[] = [];
  const queue = [process.pid];
  while (queue.length) for (const c of children.get(queue.shift()!) ?? []) (found.push(c), queue.push(c));
  return found;
}

/** The directory under which the extension makes its cgroups (actors/registry/containment.ts: the cgroup v2
 * directory of this process, then `pi-code-supervisor.<pid>`), or undefined without a cgroup v2 hierarchy. */
function cgroupBase(): string | undefined {
  try {
    const line = readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .find((l) => l.split(" - ")[1]?.startsWith("cgroup2 "));
    const own = /^0::(.*)$/m.exec(readFileSync("/proc/self/cgroup", "utf8"))?.[1];
    if (!line || own === undefined) return undefined;
    const f = line.split(" - ")[0].split(" ");
    const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    return join(unescape(f[4]), relative(unescape(f[3]), own), `pi-code-supervisor.${process.pid}`);
  } catch {
    return undefined;
  }
}
const CGROUP_BASE = cgroupBase();

/** Cgroup directories the extension holds now (every directory below its base). */
function cgroups(): number {
  if (!CGROUP_BASE) return 0;
  let count = 0;
  const walk = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) (count++, walk(join(dir, e.name)));
  };
  walk(CGROUP_BASE);
  return count;
}

function fdsByKind(): { fds: number; sockets: number } {
  let fds = 0;
  let sockets = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith("socket:")) sockets++;
      else fds++;
    } catch {
      // closed meanwhile (the directory's own fd among them)
    }
  }
  return { fds, sockets };
}

interface Sample {
  minute: number;
  rssMiB: number;
  heapMiB: number;
  /** Open fds other than sockets. */
  fds: number;
  /** Open sockets: the spawn server's and fork server's pre-made slots (32 of 3 socket pairs each) come and go. */
  sockets: number;
  processes: number;
  cgroups: number;
}

const gc = (globalThis as { gc?: () => void }).gc;

async function sample(minute: number): Promise<Sample> {
  // Exiting runners, closing pipes and cgroups removed off the event loop: a moment to settle, then a full GC.
  await new Promise((r) => setTimeout(r, 500));
  gc?.();
  await new Promise((r) => setTimeout(r, 50));
  gc?.();
  return {
    minute,
    rssMiB: process.memoryUsage().rss / 2 ** 20,
    heapMiB: getHeapStatistics().used_heap_size / 2 ** 20,
    ...fdsByKind(),
    processes: descendants().length,
    cgroups: cgroups(),
  };
}

// ---- mismatches

interface Mismatch {
  backend: Backend;
  step: number;
  op: string;
  what: string;
}
const mismatches: Mismatch[] = [];
const SHOWN = 8;
function wrong(backend: Backend, step: number, op: string, what: string): void {
  mismatches.push({ backend, step, op, what });
  if (mismatches.length <= SHOWN)
    console.log(`WRONG seed=${opts.seed} ${backend} step ${step} ${op}: ${what.slice(0, 600)}`);
}

// ---- one Pi session and what the soak predicts about it

type Call = [tool: string, args: Record<string, unknown>];
interface Op {
  kind: string;
  call: Call;
  /** Compares the result with the prediction: a description of the difference, or undefined when it is right. */
  check(r: ToolResultMessage): string | undefined;
}

interface Counter {
  n: number;
  ordinal: number;
  incarnation: number;
}
type Shell =
  | { phase: "none" }
  | { phase: "open"; id: number }
  | { phase: "awaiting"; id: number; token: string; seen: string; polls: number; exiting: boolean };

const COUNTERS = ["c0", "c1", "c2"];
const SHELL_LANES = 2;
const MAX_POLLS = 15;
const STEP_LIMIT_MS = 180_000;

const str = (v: unknown) => JSON.stringify(v)?.slice(0, 300);

class Driver {
  readonly ops: Record<string, number> = {};
  steps = 0;
  escalated = 0;
  private counters = new Map<string, Counter>(COUNTERS.map((c) => [c, { n: 0, ordinal: 0, incarnation: 0 }]));
  private nest: Counter = { n: 0, ordinal: 0, incarnation: 0 };
  /** The notebook session's `nb`, shared by python cells and eval's Python cells. */
  private nb = 0;
  /** The JavaScript runtime's `jc`. */
  private jc = 0;
  private shells: Shell[] = Array.from({ length: SHELL_LANES }, () => ({ phase: "none" }));
  private files = 0;

  readonly backend: Backend;
  readonly pi: PiHarness;
  private rnd: Rng;
  constructor(backend: Backend, pi: PiHarness, rnd: Rng) {
    this.backend = backend;
    this.pi = pi;
    this.rnd = rnd;
  }

  /** The step after which each drain began: with the seed, what replays the run exactly (`--drains`). */
  readonly drainedAt: number[] = [];

  /** Runs steps until `until` (ms since the epoch), or, replaying, until step `untilStep`; then drains. */
  async phase(until: number, untilStep?: number): Promise<void> {
    if (untilStep === undefined) while (Date.now() < until) await this.step(this.plan());
    else while (this.steps < untilStep) await this.step(this.plan());
    this.drainedAt.push(this.steps);
    await this.drain();
  }

  /** Ends every shell (polls what is awaited, kills what is open): a quiet point for sampling and for quitting. */
  async drain(): Promise<void> {
    for (let round = 0; round < MAX_POLLS + 2 && this.shells.some((s) => s.phase !== "none"); round++) {
      const ops: Op[] = [];
      this.shells.forEach((s, lane) => {
        if (s.phase === "awaiting") ops.push(this.poll(lane, s));
        else if (s.phase === "open") ops.push(this.kill(lane, s.id));
      });
      await this.step(ops);
    }
    if (this.shells.some((s) => s.phase !== "none")) wrong(this.backend, this.steps, "drain", "shells still open");
  }

  /** One assistant message of 1-4 tool calls, chosen by the PRNG, with their predicted results. */
  private plan(): Op[] {
    const ops: Op[] = [];
    const usedCounters = new Set<string>();
    const usedLanes = new Set<number>();
    let listed = false;
    let nestUsed = false;
    const want = 1 + this.rnd.int(4);
    for (let tries = 0; ops.length < want && tries < 20; tries++) {
      const pick = this.rnd.next();
      if (pick < 0.25) {
        const free = COUNTERS.filter((c) => !usedCounters.has(c));
        if (!free.length) continue;
        const name = free[this.rnd.int(free.length)];
        usedCounters.add(name);
        ops.push(this.counter(name));
      } else if (pick < 0.35) ops.push(this.fresh());
      else if (pick < 0.47) {
        const op = this.nested(nestUsed);
        if (op.kind === "nested:session") nestUsed = true;
        ops.push(op);
      } else if (pick < 0.59) ops.push(this.python());
      else if (pick < 0.71) ops.push(this.evalCells());
      else if (pick < 0.95) {
        if (listed) continue;
        const lane = this.rnd.int(SHELL_LANES);
        if (usedLanes.has(lane)) continue;
        usedLanes.add(lane);
        ops.push(this.shell(lane));
      } else {
        // list_sessions beside a shell call of the same message would race it: only alone among shells.
        if (listed || usedLanes.size) continue;
        listed = true;
        ops.push(this.list());
      }
    }
    return ops;
  }

  private counter(name: string): Op {
    const c = this.counters.get(name)!;
    const r = this.rnd.next();
    if (r < 0.1) {
      // reset: a fresh process, the counter starts again
      c.n = 1;
      c.ordinal = 1;
      c.incarnation++;
      return this.counterRun("counter:reset", name, c, { reset: true });
    }
    if (r < 0.2 && c.ordinal > 0) {
      // interrupt: the deadline's KeyboardInterrupt ends the run, the session keeps its state (and its counter)
      const expected = { ...c, ordinal: c.ordinal + 1 };
      c.ordinal++;
      return {
        kind: "counter:interrupt",
        call: ["code_execution", { code: "import time\ntime.sleep(30)", session: name, timeout: 1 }],
        check: (res) => {
          const d = res.details;
          if (d?.status === "timeout" && d.session?.isLost === true && d.killed) {
            // Not answered within interrupt window + grace (a very loaded machine): killed and truthfully lost.
            this.escalated++;
            c.n = 0;
            c.ordinal = 0;
            return undefined;
          }
          if (d?.status !== "timeout" || d.session?.isLost !== false || d.session?.state !== "kept" || d.killed)
            return `expected timeout with the session kept, saw ${str({ status: d?.status, killed: d?.killed, session: d?.session })}`;
          if (d.session.ordinal !== expected.ordinal || d.session.incarnation !== expected.incarnation)
            return `expected ordinal ${expected.ordinal} incarnation ${expected.incarnation}, saw ${str(d.session)}`;
          return undefined;
        },
      };
    }
    if (c.ordinal === 0) {
      // the session starts (first use, or after a loss)
      c.incarnation++;
      c.n = 0;
    }
    c.n++;
    c.ordinal++;
    return this.counterRun("counter", name, c, {});
  }

  private counterRun(kind: string, name: string, c: Counter, extra: Record<string, unknown>): Op {
    const expected = { ...c };
    return {
      kind,
      call: ["code_execution", { code: "n = globals().get('n', 0) + 1\nn", session: name, ...extra }],
      check: (res) => {
        const d = res.details;
        const first = textOf(res).split("\n")[0];
        if (d?.status !== "success" || first !== String(expected.n))
          return `expected ${expected.n}, saw ${str(textOf(res))} (${d?.status})`;
        if (d.session?.ordinal !== expected.ordinal || d.session?.incarnation !== expected.incarnation)
          return `expected ordinal ${expected.ordinal} incarnation ${expected.incarnation}, saw ${str(d.session)}`;
        return undefined;
      },
    };
  }

  private fresh(): Op {
    const [a, b] = [1 + this.rnd.int(100_000), 1 + this.rnd.int(100_000)];
    return {
      kind: "fresh",
      call: ["code_execution", { code: `${a} * ${b}` }],
      check: (res) =>
        res.details?.status === "success" && textOf(res) === `${a * b}\n` && res.details.session === undefined
          ? undefined
          : `expected ${a * b}, saw ${str(textOf(res))} (${res.details?.status})`,
    };
  }

  /** A file in the working directory holding a fresh token, removed after the step. */
  private tokenFile(): { path: string; token: string } {
    const path = `soak-${this.backend}-${++this.files}.txt`;
    const token = `tok-${this.rnd.int(1e9)}`;
    writeFileSync(join(this.pi.cwd, path), `${token}\n`);
    this.written.push(path);
    return { path, token };
  }
  private written: string[] = [];

  private nested(nestUsed: boolean): Op {
    const { path, token } = this.tokenFile();
    const r = this.rnd.int(4);
    const calledOnce = (d: any) =>
      d?.nestedCalls?.length === 1 &&
      d.nestedCalls[0].status === "succeeded" &&
      d.nestedCalls[0].registeredName === "read";
    if (r === 0 || (r === 1 && nestUsed)) {
      return {
        kind: "nested:fresh",
        call: ["code_execution", { code: `(await read(path=${JSON.stringify(path)})).strip()` }],
        check: (res) =>
          res.details?.status === "success" && textOf(res) === `${token}\n` && calledOnce(res.details)
            ? undefined
            : `expected ${token} from one read, saw ${str(textOf(res))} calls ${str(res.details?.nestedCalls?.map((c: any) => c.status))}`,
      };
    }
    if (r === 1) {
      const c = this.nest;
      if (c.ordinal === 0) c.incarnation++;
      c.ordinal++;
      const expected = { ...c };
      return {
        kind: "nested:session",
        call: ["code_execution", { code: `(await read(path=${JSON.stringify(path)})).strip()`, session: "nest" }],
        check: (res) => {
          const d = res.details;
          if (d?.status !== "success" || textOf(res).split("\n")[0] !== token || !calledOnce(d))
            return `expected ${token} from one read, saw ${str(textOf(res))}`;
          if (d.session?.ordinal !== expected.ordinal || d.session?.incarnation !== expected.incarnation)
            return `expected ordinal ${expected.ordinal} incarnation ${expected.incarnation}, saw ${str(d.session)}`;
          return undefined;
        },
      };
    }
    if (r === 2) {
      return {
        kind: "nested:eval-py",
        call: ["eval", { cells: [{ language: "py", code: `(await read(path=${JSON.stringify(path)})).strip()` }] }],
        check: (res) => {
          const cell = res.details?.cells?.[0];
          return cell?.status === "complete" && cell.output === `'${token}'`
            ? undefined
            : `expected '${token}', saw ${str(cell?.output)} (${cell?.status})`;
        },
      };
    }
    return {
      kind: "nested:eval-js",
      call: [
        "eval",
        { cells: [{ language: "js", code: `(await tool.read({path: ${JSON.stringify(path)}})).trim()` }] },
      ],
      check: (res) => {
        const cell = res.details?.cells?.[0];
        return cell?.status === "complete" && cell.output === token
          ? undefined
          : `expected ${token}, saw ${str(cell?.output)} (${cell?.status})`;
      },
    };
  }

  private python(): Op {
    if (this.rnd.chance(0.1) && this.nb > 0) {
      // interrupt: the cell gets KeyboardInterrupt at the deadline, the namespace (and `nb`) survives
      return {
        kind: "python:interrupt",
        call: ["python", { cells: [{ code: "import time\ntime.sleep(30)" }], timeout: 1 }],
        check: (res) =>
          res.details?.timedOut === true && res.details.killed === false && res.details.session?.isLost === false
            ? undefined
            : `expected timed out and kept, saw ${str({ timedOut: res.details?.timedOut, killed: res.details?.killed, session: res.details?.session })}`,
      };
    }
    const reset = this.rnd.chance(0.08);
    this.nb = reset ? 1 : this.nb + 1;
    const nb = this.nb;
    const k = this.rnd.int(1000);
    return {
      kind: reset ? "python:reset" : "python",
      call: [
        "python",
        {
          cells: [{ code: `nb = globals().get('nb', 0) + 1\ndisplay({'nb': nb, 'k': ${k}})\nnb` }],
          ...(reset ? { reset: true } : {}),
        },
      ],
      check: (res) => {
        const cell = res.details?.cells?.[0];
        if (cell?.status !== "ok" || cell.value !== String(nb) || str(cell.json) !== str([{ nb, k }]))
          return `expected nb=${nb} displayed with k=${k}, saw ${str({ status: cell?.status, value: cell?.value, json: cell?.json })}`;
        return undefined;
      },
    };
  }

  private evalCells(): Op {
    const cells: Record<string, unknown>[] = [];
    const expect: { lang: "py" | "js"; value: number; key: string }[] = [];
    const shape = this.rnd.int(3); // 0: py, 1: js, 2: py then js
    if (shape !== 1) {
      this.nb++;
      cells.push({ language: "py", code: "nb = globals().get('nb', 0) + 1\ndisplay({'nb': nb})\nnb" });
      expect.push({ lang: "py", value: this.nb, key: "nb" });
    }
    if (shape !== 0) {
      const reset = this.rnd.chance(0.08);
      this.jc = reset ? 1 : this.jc + 1;
      cells.push({
        language: "js",
        code: "globalThis.jc = (globalThis.jc ?? 0) + 1; display({jc}); jc",
        ...(reset ? { reset: true } : {}),
      });
      expect.push({ lang: "js", value: this.jc, key: "jc" });
    }
    return {
      kind: `eval:${expect.map((e) => e.lang).join("+")}`,
      call: ["eval", { cells }],
      check: (res) => {
        const d = res.details;
        for (const [i, e] of expect.entries()) {
          const cell = d?.cells?.[i];
          if (cell?.status !== "complete" || !String(cell.output).endsWith(`\n${e.value}`))
            return `cell ${i + 1} (${e.lang}): expected ${e.key}=${e.value}, saw ${str(cell?.output)} (${cell?.status})`;
        }
        const shown = expect.map((e) => ({ [e.key]: e.value }));
        return str(d.jsonOutputs) === str(shown)
          ? undefined
          : `expected displayed ${str(shown)}, saw ${str(d.jsonOutputs)}`;
      },
    };
  }

  private shell(lane: number): Op {
    const s = this.shells[lane];
    if (s.phase === "none") {
      return {
        kind: "shell:start",
        // --norc: the user's rc is not the product's (here it runs `pyenv init`, whose rehash takes a lock file; a
        // shell killed inside it leaves the lock, and every later interactive bash then waits 60 s for it).
        call: ["exec_command", { cmd: "bash --norc", tty: true, yield_time_ms: 500 }],
        check: (res) => {
          const d = res.details;
          if (d?.running !== true || d.tty !== true || typeof d.session_id !== "number")
            return `expected a running tty session, saw ${str(textOf(res))}`;
          this.shells[lane] = { phase: "open", id: d.session_id };
          return undefined;
        },
      };
    }
    if (s.phase === "awaiting") return this.poll(lane, s);
    const r = this.rnd.next();
    if (r < 0.7) {
      const [a, b] = [this.rnd.int(1e6), this.rnd.int(1e6)];
      const token = `tok${a + b}`;
      // The arithmetic is the shell's: the echoed input never holds the token itself.
      return this.write(lane, s.id, "shell:echo", `echo tok$((${a}+${b}))\\n`, token, false);
    }
    if (r < 0.85) {
      const code = this.rnd.int(100);
      return this.write(lane, s.id, "shell:exit", `exit ${code}\\n`, String(code), true);
    }
    return this.kill(lane, s.id);
  }

  /** A write whose answer must show `token` (or, `exiting`, the exit with that code), polled for in later steps if
   * not yet. */
  private write(lane: number, id: number, kind: string, chars: string, token: string, exiting: boolean): Op {
    const awaiting = { phase: "awaiting" as const, id, token, seen: "", polls: 0, exiting };
    this.shells[lane] = awaiting;
    return {
      kind,
      call: ["write_stdin", { session_id: id, chars, yield_time_ms: 1000 }],
      check: (res) => this.settle(lane, awaiting, res),
    };
  }

  private poll(lane: number, s: Extract<Shell, { phase: "awaiting" }>): Op {
    s.polls++;
    return {
      kind: "shell:poll",
      call: ["write_stdin", { session_id: s.id, yield_time_ms: 1000 }],
      check: (res) => this.settle(lane, s, res),
    };
  }

  private settle(lane: number, s: Extract<Shell, { phase: "awaiting" }>, res: ToolResultMessage): string | undefined {
    const d = res.details;
    s.seen += String(d?.output ?? "");
    if (d?.failure_message) {
      this.shells[lane] = { phase: "open", id: s.id };
      return `the write was refused: ${d.failure_message} (${str({ status: d.status, running: d.running })})`;
    }
    if (s.exiting) {
      if (d?.running === false) {
        this.shells[lane] = { phase: "none" };
        return String(d.exit_code) === s.token
          ? undefined
          : `expected exit code ${s.token}, saw ${str({ exit: d.exit_code, signal: d.signal, output: s.seen.slice(-200) })}`;
      }
    } else if (new RegExp(`(^|\\n)${s.token}\\r?\\n`).test(s.seen.replace(/\r\n/g, "\n"))) {
      this.shells[lane] = { phase: "open", id: s.id };
      return undefined;
    } else if (d?.running === false) {
      this.shells[lane] = { phase: "none" };
      return `the shell ended before answering ${s.token}: ${str(s.seen)}`;
    }
    if (s.polls >= MAX_POLLS) {
      this.shells[lane] = { phase: "open", id: s.id };
      return `no ${s.exiting ? "exit" : s.token} after ${MAX_POLLS} polls: ${str(s.seen.slice(-300))}`;
    }
    return undefined; // polled again in a later step
  }

  private kill(lane: number, id: number): Op {
    this.shells[lane] = { phase: "none" };
    return {
      kind: "shell:kill",
      call: ["kill_session", { session_id: id }],
      check: (res) => {
        const d = res.details;
        return d?.found === true && d.killed === true && d.running === false
          ? undefined
          : `expected killed, saw ${str({ found: d?.found, killed: d?.killed, running: d?.running, status: d?.status })}`;
      },
    };
  }

  private list(): Op {
    const open = this.shells.flatMap((s) => (s.phase === "none" ? [] : [s.id]));
    return {
      kind: "shell:list",
      call: ["list_sessions", {}],
      check: (res) => {
        const running = ((res.details?.sessions ?? []) as any[]).filter((s) => s.running).map((s) => s.session_id);
        return str([...running].sort()) === str([...open].sort())
          ? undefined
          : `expected running sessions ${str(open)}, saw ${str(running)}`;
      },
    };
  }

  /** One prompt: the ops as one assistant message, then "done"; each result checked, Pi's transcript trimmed. */
  private async step(ops: Op[]): Promise<void> {
    if (!ops.length) return;
    const step = ++this.steps;
    const { pi } = this;
    const before = pi.toolResults().length;
    pi.faux.setResponses([
      fauxAssistantMessage(
        ops.map((o, i) => fauxToolCall(o.call[0], o.call[1] as never, { id: `soak-${step}-${i}` })),
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ]);
    let timer: NodeJS.Timeout | undefined;
    const hung = await Promise.race([
      pi.session.prompt("soak").then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), STEP_LIMIT_MS))),
    ]);
    clearTimeout(timer);
    if (hung) {
      wrong(this.backend, step, ops.map((o) => o.kind).join(","), `the step did not end within ${STEP_LIMIT_MS} ms`);
      await pi.session.abort();
    }
    const results = pi.toolResults().slice(before);
    for (const [i, op] of ops.entries()) {
      this.ops[op.kind] = (this.ops[op.kind] ?? 0) + 1;
      // Pi appends results as calls end, not in call order.
      const res = results.find((r) => r.toolCallId === `soak-${step}-${i}`);
      const what = res ? op.check(res) : `no result (${results.length} results for ${ops.length} calls)`;
      if (what) wrong(this.backend, step, `${op.kind} ${str(op.call[1])}`, what);
    }
    for (const f of this.written.splice(0)) unlinkSync(join(pi.cwd, f));
    // Pi keeps the whole conversation (append-only, no compaction here): dropped after each step.
    dropTranscript(pi);
  }
}

// ---- the run

const started = Date.now();
const end = started + opts.minutes * 60_000;
console.log(
  `mixed soak: seed ${opts.seed}, ${opts.drains ? "replaying the given drains" : `${opts.minutes} min`}, backends ${opts.backends.join(",")}, ` +
    `cgroups under ${CGROUP_BASE ?? "(none: no cgroup v2)"}, pid ${process.pid}${gc ? "" : " (no --expose-gc: heap not collected before sampling)"}`,
);

const saved = { ...process.env };
process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,python,eval,exec";
delete process.env.PI_CODE_EXECUTION_BACKEND;
const master = prng(opts.seed);
const drivers: Driver[] = [];
for (const backend of opts.backends) {
  const pi = await startPi(backend === "sandbox" ? { flags: { sandbox: true } } : {});
  drivers.push(new Driver(backend, pi, prng(Math.floor(master.next() * 2 ** 32))));
}

const samples: Sample[] = [];
/** Per sample, the live descendants by kind (their command line's first words), to say what grew. */
const kindsAt: Map<string, number>[] = [];
const processKinds = (): Map<string, number> => {
  const kinds = new Map<string, number>();
  for (const pid of descendants()) {
    const words = cmdline(pid, 400).split(" ").filter(Boolean);
    const kind = words
      .slice(0, 3)
      .map((w) => w.split("/").at(-1))
      .join(" ");
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  return kinds;
};
const header = "minute   RSS MiB  heap MiB    fds  sockets  processes  cgroups  steps  wrong";
console.log(header);
const record = async (minute: number) => {
  const s = await sample(minute);
  samples.push(s);
  kindsAt.push(processKinds());
  const steps = drivers.reduce((a, d) => a + d.steps, 0);
  console.log(
    `${s.minute.toFixed(1).padStart(6)} ${s.rssMiB.toFixed(1).padStart(9)} ${s.heapMiB.toFixed(1).padStart(9)} ` +
      `${String(s.fds).padStart(6)} ${String(s.sockets).padStart(8)} ${String(s.processes).padStart(10)} ` +
      `${String(s.cgroups).padStart(8)} ` +
      `${String(steps).padStart(6)} ${String(mismatches.length).padStart(6)}`,
  );
};
await record(0);
// Phases of a minute (or, replaying, up to the given steps), each ending with the shells closed and a sample.
const phases = opts.drains ? Math.max(...[...opts.drains.values()].map((d) => d.length)) : Infinity;
for (let minute = 1; minute <= phases && (opts.drains || Date.now() < end); minute++) {
  const until = Math.min(started + minute * 60_000, end);
  await Promise.all(
    drivers.map((d) => {
      const steps = opts.drains?.get(d.backend);
      return d.phase(until, steps ? (steps[minute - 1] ?? d.steps) : undefined);
    }),
  );
  await record((Date.now() - started) / 60_000);
}

// ---- flatness: after the warm-up (the first third of the samples, at least 2), the largest value of the last third
// may exceed the smallest after the warm-up by at most the tolerance.
const TOLERANCE: Record<Exclude<keyof Sample, "minute">, number> = {
  rssMiB: 24,
  heapMiB: 6,
  fds: 8,
  sockets: 200,
  processes: 3,
  cgroups: 3,
};
const warm = Math.max(2, Math.ceil(samples.length / 3));
/** Least-squares slope of `key` against the minute: a trend the max/min rule may not yet call growth. */
const trend = (points: Sample[], key: keyof typeof TOLERANCE) =>
  slope(
    points.map((p) => p.minute),
    points.map((p) => p[key]),
  );
const after = samples.slice(warm);
const flat: string[] = [];
const grew: string[] = [];
if (after.length < 2) {
  grew.push(`too few samples after the warm-up (${after.length}) to judge: run at least 3 minutes`);
} else {
  const last = after.slice(-Math.max(1, Math.ceil(after.length / 3)));
  for (const [key, tol] of Object.entries(TOLERANCE) as [keyof typeof TOLERANCE, number][]) {
    const min = Math.min(...after.map((s) => s[key]));
    const max = Math.max(...last.map((s) => s[key]));
    const line =
      `${key}: post-warm-up min ${min.toFixed(1)}, last-third max ${max.toFixed(1)} (+${(max - min).toFixed(1)}, ` +
      `tolerance ${tol}); least-squares slope ${trend(after, key).toFixed(2)}/min`;
    (max - min <= tol ? flat : grew).push(line);
  }
}
console.log(
  `\nflat rule: samples ${warm}..${samples.length - 1} after a warm-up of ${warm}; the last third's max minus the post-warm-up min within the tolerance`,
);
for (const l of flat) console.log(`  flat  ${l}`);
for (const l of grew) console.log(`  GREW  ${l}`);
if (grew.some((l) => l.startsWith("processes")) && after.length >= 2) {
  // What the growth is made of: the kinds with more processes in the last sample than at the post-warm-up minimum.
  const low = after.reduce((a, b) => (b.processes < a.processes ? b : a));
  const [from, to] = [kindsAt[samples.indexOf(low)], kindsAt.at(-1)!];
  for (const [kind, n] of to)
    if (n > (from.get(kind) ?? 0))
      console.log(`        ${kind}: ${from.get(kind) ?? 0} at minute ${low.minute.toFixed(1)}, ${n} at the end`);
}

// ---- results

const minutes = (Date.now() - started) / 60_000;
for (const d of drivers) {
  const total = Object.values(d.ops).reduce((a, b) => a + b, 0);
  console.log(
    `\n${d.backend}: ${d.steps} steps, ${total} tool calls checked, interrupts escalated to a kill: ${d.escalated}`,
  );
  console.log(
    "  " +
      Object.entries(d.ops)
        .sort()
        .map(([k, v]) => `${k} ${v}`)
        .join(", "),
  );
}
console.log(`\n${minutes.toFixed(1)} min, seed ${opts.seed}: wrong results ${mismatches.length}`);
console.log(
  `replay exactly: node --expose-gc bench/soak.ts --seed ${opts.seed} --drains ${drivers.map((d) => `${d.backend}:${d.drainedAt.join(",")}`).join("/")}`,
);
for (const m of mismatches.slice(0, SHOWN))
  console.log(`  ${m.backend} step ${m.step} ${m.op}: ${m.what.slice(0, 300)}`);
const tally: Record<string, number> = {};
for (const m of mismatches) {
  const key = `${m.backend} ${m.op.split(" ")[0]}`;
  tally[key] = (tally[key] ?? 0) + 1;
}
if (mismatches.length)
  console.log(
    `  by operation: ${Object.entries(tally)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
  );

// ---- quit: every Pi session shut down as at Pi's exit, then nothing of ours may remain

const livePids = descendants();
for (const d of drivers) {
  await d.pi.dispose();
  rmSync(d.pi.cwd, { recursive: true, force: true });
  rmSync(dirname(d.pi.agentDir), { recursive: true, force: true });
}
const quitAt = Date.now();
// The spawn server (actors/process/spawner.ts, runtime-py/pcs_spawner.py) is one per process, not per Pi session: it
// outlives a session by design and exits when idle for 5 minutes or when this process exits (the end of its control
// channel). It is reported apart; bench/soak-all.sh checks that it is gone once this process has exited.
const isSpawner = (pid: number) => cmdline(pid, Infinity).includes("pcs_spawner.py");
const ours = () => {
  const all = descendants();
  return { processes: all.filter((p) => !isSpawner(p)), spawners: all.filter(isSpawner), cgroups: cgroups() };
};
let left = ours();
while ((left.processes.length || left.cgroups) && Date.now() - quitAt < 10_000) {
  await new Promise((r) => setTimeout(r, 100));
  left = ours();
}
const leftovers = left.processes.length > 0 || left.cgroups > 0;
console.log(
  `after quit (${livePids.length} processes before): ${left.processes.length} processes and ${left.cgroups} cgroups left ` +
    `after ${Date.now() - quitAt} ms${left.processes.length ? `: ${left.processes.map((p) => `${p} ${cmdline(p)}`).join("; ")}` : ""}`,
);
if (left.spawners.length) {
  console.log(`the process-wide spawn server lingers until this process exits: pid ${left.spawners.join(" ")}`);
  console.log(`LINGERING ${left.spawners.join(" ")}`);
}
function cmdline(pid: number, length = 80): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").slice(0, length);
  } catch {
    return "(gone)";
  }
}
for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
Object.assign(process.env, saved);

const ok = mismatches.length === 0 && grew.length === 0 && !leftovers;
// The extension removes its cgroup base at exit (its own exit handler, registered before this one).
process.once("exit", () => {
  const baseLeft = CGROUP_BASE !== undefined && existsSync(CGROUP_BASE);
  if (CGROUP_BASE) console.log(`cgroup base ${baseLeft ? "STILL THERE" : "removed"} at exit`);
  console.log(ok && !baseLeft ? "SOAK OK" : "SOAK FAILED");
  if (baseLeft) process.exitCode = 1;
});
process.exit(ok ? 0 : 1);
