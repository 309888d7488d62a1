// The fork server (actors/process/fork-server.ts, `runner.py --mode zygote`): fresh runners forked from it behave as
// spawned ones (frames, output, exit statuses, their own session), its end never loses a child's end, and it does
// not outlive its last child. Real processes throughout.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  localOperations,
  type RunnerExit,
  type RunnerHandle,
  type RunnerSpec,
} from "../../../actors/process/operations.ts";
import { RUNNER_PATH } from "../../../actors/runner/kinds.ts";
import { SLOTS } from "../../../actors/process/fork-server.ts";
import { SupervisorHost } from "../../../host/host.ts";
import { encodeFrame, FrameDecoder, type Frame } from "../../../actors/process/framing.ts";
import { PYTHON } from "../../helpers/runner-driver.ts";
import { pidAlive, processesMatching, waitUntil } from "../../helpers/procs.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

const cwd = tempDir("pcs-fork-");
let hosts = 0;
const specFor = (fork: RunnerSpec["fork"], host: string): RunnerSpec => ({
  executable: PYTHON,
  args: [RUNNER_PATH, "--mode", "fresh"],
  cwd,
  env: { ...process.env, PCS_FORK_TEST: host },
  killMs: 300,
  host,
  ...(fork ? { fork } : {}),
});

/** The parent of a process, or -1 for one that exited since it was listed. */
function ppid(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return -1;
  }
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}
const sid = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[3]);
/** This host's fork servers (their forked runners share the command line, but not the parent). */
const zygotesOf = (host: string) =>
  processesMatching("--mode zygote").filter(
    (pid) =>
      ppid(pid) === process.pid && readFileSync(`/proc/${pid}/environ`, "utf8").includes(`PCS_FORK_TEST=${host}`),
  );

/** What a started runner says, listened to from its start: the handle keeps no frame for a listener that comes late,
 * and a ready frame read while a test awaits something else would be lost. */
interface Heard {
  out: string;
  frames: Frame[];
  ready: Promise<void>;
  exit: Promise<RunnerExit>;
}
const heard = new WeakMap<RunnerHandle, Heard>();

function listen(h: RunnerHandle): void {
  let readyNow!: () => void;
  const rec: Heard = {
    out: "",
    frames: [],
    ready: new Promise((r) => (readyNow = r)),
    exit: new Promise((r) => h.onExit(r)),
  };
  h.onStdout((c) => (rec.out += c));
  h.onStderr((c) => (rec.out += c));
  h.onFrame((f) => {
    rec.frames.push(f);
    if (f.type === "ready") readyNow();
  });
  heard.set(h, rec);
}

/** Runs `code` in a just-started runner once `beforeRun` (after its `ready`) is done; its output, frames and exit. */
async function runIn(
  h: RunnerHandle,
  code: string,
  beforeRun: () => Promise<unknown> = async () => {},
): Promise<{ out: string; frames: Frame[]; exit: RunnerExit }> {
  const rec = heard.get(h)!;
  await rec.ready;
  await beforeRun();
  h.send({ type: "run", id: "r1", code, filename: join(cwd, "s.py") });
  const exit = await rec.exit;
  return { out: rec.out, frames: rec.frames, exit };
}

async function start(spec: RunnerSpec): Promise<RunnerHandle> {
  const r = await localOperations.start(spec);
  assert.ok(r.ok, r.ok ? "" : r.error.message);
  listen(r.value);
  return r.value;
}

describe("fork server", { timeout: 30_000 }, () => {
  test("a spare's runner is forked: a fresh runner in its own session, output, done and exit status as spawned", async () => {
    const host = `fork-${++hosts}`;
    const a = await start(specFor("start", host));
    // A failed assertion must not leave a runner waiting for its run: it would hold the file open until its timeout.
    const started = [a];
    try {
      const [zygote] = zygotesOf(host);
      assert.ok(zygote, "a fork server was started for this command line");
      assert.equal(ppid(a.pid), zygote, "the runner is the fork server's child");
      // The child makes its own session right after the fork; the server's `forked` frame can come first.
      await waitUntil(() => sid(a.pid) === a.pid, 5000);
      assert.equal(sid(a.pid), a.pid, "and leads its own session, as a spawned runner does");
      const one = await runIn(
        a,
        "import sys\nprint('out', sys.argv)\nprint('err', file=sys.stderr)\nraise SystemExit(3)",
      );
      assert.equal(one.out, "out ['" + join(cwd, "s.py") + "']\nerr\n");
      assert.deepEqual(
        one.frames.map((f) => f.type),
        ["ready", "started", "done"],
      );
      assert.equal((one.frames[0] as Frame).mode, "fresh");
      assert.deepEqual(one.exit, { code: 3, signal: null }, "the exit status comes through the fork server");

      const b = await start(specFor("use", host));
      started.push(b);
      assert.equal(ppid(b.pid), zygote, "a run finding the server ready forks too");
      const two = await runIn(b, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)");
      assert.deepEqual(two.exit, { code: null, signal: "SIGKILL" });
      assert.ok(await waitUntil(() => !pidAlive(zygote), 4000), "with no child left, the fork server exits");
    } finally {
      for (const h of started) if (pidAlive(h.pid)) h.signalGroup("SIGKILL");
    }
  });

  test("without a ready fork server a run's runner is spawned, and nothing forks for other command lines", async () => {
    const host = `fork-${++hosts}`;
    const h = await start(specFor("use", host));
    assert.equal(ppid(h.pid), process.pid, "spawned by this process");
    assert.deepEqual(zygotesOf(host), [], "a run does not start a fork server");
    assert.equal((await runIn(h, "pass")).exit.code, 0);
    const plain = await start(specFor(undefined, host));
    assert.equal(ppid(plain.pid), process.pid);
    plain.signalGroup("SIGKILL");
  });

  test("a fork server that dies: its child's end is still reported, and the next spare gets a new server", async () => {
    const host = `fork-${++hosts}`;
    const a = await start(specFor("start", host));
    const [zygote] = zygotesOf(host);
    const { out, exit } = await runIn(a, "print('still here')", async () => {
      process.kill(zygote!, "SIGKILL");
      assert.ok(await waitUntil(() => !pidAlive(zygote!)));
    });
    assert.equal(out, "still here\n", "the orphaned runner still runs");
    assert.equal(exit.code, null);
    assert.match(exit.lost?.message ?? "", /fork server .* exited/, "its status is unknown, and says why");
    const b = await start(specFor("start", host));
    const [second] = zygotesOf(host);
    assert.ok(second && second !== zygote, "a new fork server");
    assert.equal(ppid(b.pid), second);
    b.signalGroup("SIGKILL");
  });

  test("runner.py --mode zygote: malformed arguments and frames are refused", async () => {
    const usage = spawn(PYTHON, [RUNNER_PATH, "--mode", "zygote", "--limits", "bogus"], {
      stdio: ["ignore", "ignore", "pipe", "pipe"],
    });
    let err = "";
    usage.stderr!.on("data", (c) => (err += c));
    const code = await new Promise((r) => usage.once("exit", r));
    assert.equal(code, 2);
    assert.match(err, /usage: runner.py --mode zygote/);

    const z = spawn(PYTHON, [RUNNER_PATH, "--mode", "zygote", "--slots", "1"], {
      stdio: ["ignore", "ignore", "ignore", "pipe", "pipe", "pipe", "pipe"],
    });
    const control = z.stdio[3] as unknown as NodeJS.ReadWriteStream;
    const frames: Frame[] = [];
    const decoder = new FrameDecoder(
      (f) => frames.push(f),
      () => {},
    );
    control.on("data", (c: Buffer) => decoder.push(c));
    assert.ok(await waitUntil(() => frames.length === 1));
    assert.equal(frames[0]!.type, "ready");
    assert.equal(frames[0]!.mode, "zygote");
    control.write(encodeFrame({ type: "run", id: "x", code: "pass", filename: "x.py" }));
    const status = await new Promise((r) => z.once("exit", r));
    assert.equal(status, 70);
    assert.equal(frames[1]?.type, "fatal");
    assert.match(String(frames[1]?.message), /unexpected frame for the fork server: 'run'/);

    for (const slot of [1, "0", -1]) {
      const y = spawn(PYTHON, [RUNNER_PATH, "--mode", "zygote", "--slots", "1"], {
        stdio: ["ignore", "ignore", "ignore", "pipe", "pipe", "pipe", "pipe"],
      });
      const got: Frame[] = [];
      const d = new FrameDecoder(
        (f) => got.push(f),
        () => {},
      );
      (y.stdio[3] as unknown as NodeJS.ReadableStream).on("data", (c: Buffer) => d.push(c));
      assert.ok(await waitUntil(() => got.length === 1));
      (y.stdio[3] as unknown as NodeJS.WritableStream).write(encodeFrame({ type: "fork", slot }));
      assert.equal(await new Promise((r) => y.once("exit", r)), 70, `slot ${JSON.stringify(slot)}`);
      assert.match(String(got[1]?.message), /is not a free slot/);
    }

    const missing = spawn(PYTHON, [RUNNER_PATH, "--mode", "zygote", "--slots", "2"], {
      stdio: ["ignore", "ignore", "pipe", "pipe", "pipe", "pipe", "pipe"],
    });
    let said = "";
    missing.stderr!.on("data", (c) => (said += c));
    assert.equal(await new Promise((r) => missing.once("exit", r)), 2);
    assert.match(said, /fd 7 \(a fork server's channel or slot\) is not open/);
  });

  test("a spent fork server is followed by the next one: every runner still forks, none shares a slot", async () => {
    const host = `fork-${++hosts}`;
    const parents = new Set<number>();
    const outs: string[] = [];
    for (let i = 0; i < SLOTS + 2; i++) {
      const h = await start(specFor("start", host));
      parents.add(ppid(h.pid));
      const { out, exit } = await runIn(h, `print(${i})`);
      outs.push(out);
      assert.equal(exit.code, 0);
    }
    assert.deepEqual(
      outs,
      Array.from({ length: SLOTS + 2 }, (_, i) => `${i}\n`),
      "each runner's output is its own",
    );
    assert.equal(parents.size, 2, "two fork servers, one after the other");
    assert.ok(![...parents].includes(process.pid), "no runner was spawned");
  });

  test("a runner forked after its working directory was replaced runs in the new one; a removed one is not forked", async () => {
    const host = `fork-${++hosts}`;
    const dir = tempDir("pcs-fork-cwd-");
    const spec = { ...specFor("start", host), cwd: dir };
    const a = await start(spec);
    const server = ppid(a.pid);
    assert.equal((await runIn(a, "pass")).exit.code, 0);
    rmSync(dir, { recursive: true });
    mkdirSync(dir);
    writeFileSync(join(dir, "marker"), "new");
    const b = await start(spec);
    assert.equal(ppid(b.pid), server, "forked from the same server");
    const { out } = await runIn(b, "import os\nprint(os.listdir('.'))");
    assert.equal(out, "['marker']\n");
    rmSync(dir, { recursive: true });
    const gone = await localOperations.start(spec);
    assert.ok(!gone.ok && /does not exist/.test(gone.error.message), "a missing directory is refused, as for a spawn");
  });

  test("a host's shutdown stops its fork servers, whatever they are doing", async () => {
    const mine = () => processesMatching("--mode zygote").filter((pid) => pidAlive(pid) && ppid(pid) === process.pid);
    const before = new Set(mine());
    const host = new SupervisorHost();
    await host.run({ code: "pass", cwd, timeoutMs: 10_000 });
    assert.ok(await waitUntil(() => host.spares().some((s) => s.ready), 10_000), "a spare, forked");
    const servers = mine().filter((pid) => !before.has(pid));
    assert.equal(servers.length, 1, "one fork server for the key");
    await host.shutdown();
    // Sooner than the 1 s a childless server lingers: the host stopped it.
    assert.ok(await waitUntil(() => servers.every((pid) => !pidAlive(pid)), 500), "gone with the host");
  });

  test("a fork server exits when its host closes the channel", async () => {
    const z = spawn(PYTHON, [RUNNER_PATH, "--mode", "zygote", "--slots", "1"], {
      stdio: ["ignore", "ignore", "ignore", "pipe", "pipe", "pipe", "pipe"],
    });
    const control = z.stdio[3] as unknown as NodeJS.ReadWriteStream & { destroy(): void };
    await new Promise((r) => control.once("data", r));
    control.destroy();
    assert.equal(await new Promise((r) => z.once("exit", r)), 0);
  });
});
