// The spawn server (actors/process/spawner.ts, runtime-py/pcs_spawner.py) with real processes: a plain pipe child
// started through it behaves as one Node spawns (exit codes, signals, separate stdout and stderr, stdin, start
// failures as values), is born in its own cgroup (a setsid daemon started first thing is inside and dies with the
// group), and survives its server: a killed server's children are still seen to end, and the next spawn falls back
// to Node. Each test checks who started the child (the server or this process) so a silent fallback cannot pass.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { spawnLocalChild, type ChildExit, type ChildHandle, type ChildSpec } from "../../../actors/process/children.ts";
import { containmentMode } from "../../../actors/registry/containment.ts";
import { stopTracked } from "../../../actors/registry/registry.ts";
import { SHUTDOWN } from "../../../actors/registry/shutdown.ts";
import { SPAWNER_ENV, SPAWNER_SLOTS, spawnerPids } from "../../../actors/process/spawner.ts";
import { findPython } from "../../../actors/process/spawner-python.ts";
import { PYTHON } from "../../helpers/pythons.ts";
import { parentOf, pidAlive, waitUntil } from "../../helpers/procs.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

const scratch = tempDir("pcs-spawner-");
const spec = (command: string, more: Partial<ChildSpec> = {}): ChildSpec => ({
  file: "bash",
  args: ["-c", command],
  cwd: scratch,
  env: process.env,
  purpose: "shell",
  ...more,
});
const cgroupOf = (pid: number) => /^0::(.*)$/m.exec(readFileSync(`/proc/${pid}/cgroup`, "utf8"))?.[1] ?? "";
const servers = () => spawnerPids().map((s) => s.pid);

interface Run {
  h: ChildHandle;
  out: { stdout: string; stderr: string; both: string };
  exit: Promise<ChildExit>;
  closed: Promise<ChildExit>;
}

async function start(s: ChildSpec): Promise<Run> {
  const r = await spawnLocalChild(s);
  assert.ok(r.ok, r.ok ? "" : r.error.message);
  const h = r.value;
  const out = { stdout: "", stderr: "", both: "" };
  h.onData((c, stream) => {
    out[stream] += c.toString();
    out.both += c.toString();
  });
  return {
    h,
    out,
    exit: new Promise((done) => h.onProcessExit(done)),
    closed: new Promise((done) => h.onClose(done)),
  };
}

/** A server is ready: the first spawn starts one (off its path) and is Node's own. */
async function serverReady(): Promise<number> {
  if (!spawnerPids().some((s) => s.ready && s.used < SPAWNER_SLOTS)) {
    const first = await start(spec("true"));
    await first.closed;
    await stopTracked(first.h.pid, SHUTDOWN.shortChild);
  }
  assert.ok(await waitUntil(() => spawnerPids().some((s) => s.ready && s.used < SPAWNER_SLOTS), 20_000), "ready");
  return spawnerPids().find((s) => s.ready && s.used < SPAWNER_SLOTS)!.pid;
}

describe("spawn server", () => {
  before(() => delete process.env[SPAWNER_ENV]);
  after(() => delete process.env[SPAWNER_ENV]);

  test("exit codes and signals come from the server, exit before close", async () => {
    const server = await serverReady();
    // Each child waits for a line before it ends, so it is still there (not yet reaped) to be asked for its parent.
    const a = await start(spec("read _; exit 7"));
    assert.equal(parentOf(a.h.pid), server, "started by the server");
    a.h.write(Buffer.from("\n"));
    const order: string[] = [];
    a.h.onProcessExit(() => order.push("exit"));
    a.h.onClose(() => order.push("close"));
    assert.deepEqual(await a.closed, { code: 7, signal: null });
    assert.deepEqual(order, ["exit", "close"]);
    const b = await start(spec("read _; kill -TERM $$"));
    assert.equal(parentOf(b.h.pid), server);
    b.h.write(Buffer.from("\n"));
    assert.deepEqual(await b.closed, { code: null, signal: "SIGTERM" });
    const c = await start(spec("exec sleep 30"));
    assert.ok(c.h.signalGroup("SIGINT").ok);
    assert.deepEqual(await c.closed, { code: null, signal: "SIGINT" });
    for (const r of [a, b, c]) await stopTracked(r.h.pid, SHUTDOWN.shortChild);
  });

  test("stdout and stderr stay apart; what ran before exit is all there at close", async () => {
    await serverReady();
    const r = await start(spec("for i in 1 2 3; do echo out$i; echo err$i >&2; done; printf tail"));
    await r.closed;
    assert.equal(r.out.stdout, "out1\nout2\nout3\ntail");
    assert.equal(r.out.stderr, "err1\nerr2\nerr3\n");
    await stopTracked(r.h.pid, SHUTDOWN.shortChild);
  });

  test("stdin: writes reach `cat`, and a write after the exit is refused", async () => {
    const server = await serverReady();
    const r = await start(spec("exec cat"));
    assert.equal(parentOf(r.h.pid), server);
    assert.ok(r.h.write(Buffer.from("hello\n")).ok);
    assert.ok(await waitUntil(() => r.out.stdout === "hello\n", 5000), r.out.stdout);
    assert.ok(r.h.write(Buffer.from("again\n")).ok);
    assert.ok(await waitUntil(() => r.out.stdout === "hello\nagain\n", 5000));
    assert.ok(r.h.signalGroup("SIGTERM").ok);
    await r.closed;
    const late = r.h.write(Buffer.from("late\n"));
    assert.equal(late.ok, false);
    assert.match(!late.ok ? late.error : "", /stdin write failed/);
    await stopTracked(r.h.pid, SHUTDOWN.shortChild);
  });

  test("the child's environment, argv[0] and working directory are the spec's, signals at their defaults", async () => {
    await serverReady();
    const script =
      'printf "%s|%s|%s|" "$PCS_SPAWN_VAR" "$0" "$PWD"; grep -E "^Sig(Ign|Blk):" /proc/self/status | tr "\\n" " "';
    const r = await start(
      spec("", { env: { ...process.env, PCS_SPAWN_VAR: "välue ☃" }, args: ["-c", script, "argv0"] }),
    );
    await r.closed;
    const [v, argv0, pwd, sigs] = r.out.stdout.split("|");
    assert.deepEqual([v, argv0, pwd], ["välue ☃", "argv0", scratch]);
    // Python ignores SIGPIPE and SIGXFSZ; the child must not inherit that (bash itself ignores nothing here).
    assert.match(sigs!, /SigBlk:\s+0+\s+SigIgn:\s+0+/, sigs);
    await stopTracked(r.h.pid, SHUTDOWN.shortChild);
  });

  test("a start failure is a value: a missing program, a program the kernel cannot run, a bad working directory", async () => {
    const server = await serverReady();
    const missing = await spawnLocalChild(spec("", { file: "/nonexistent/pcs-program", args: [] }));
    assert.match(!missing.ok ? missing.error.message : "", /could not start \/nonexistent\/pcs-program: ENOENT/);
    // Executable, but not a format the kernel runs: the exec in the server fails, nothing starts.
    const junk = join(scratch, "junk");
    writeFileSync(junk, Buffer.from([0x7f, 0x45, 0x4c, 0x46, 1, 2, 3, 4]));
    chmodSync(junk, 0o755);
    const before = spawnerPids().find((s) => s.pid === server)!.used;
    const bad = await spawnLocalChild(spec("", { file: junk, args: [] }));
    assert.equal(spawnerPids().find((s) => s.pid === server)?.used, before + 1, "the server took it");
    assert.match(!bad.ok ? bad.error.message : "", /could not start .*junk: ENOEXEC/);
    const cwd = join(scratch, "no-such-dir");
    const gone = await spawnLocalChild(spec("true", { cwd }));
    assert.match(
      !gone.ok ? gone.error.message : "",
      new RegExp(`could not start bash: ENOENT \\(working directory ${cwd}`),
    );
    const nul = await spawnLocalChild(spec("echo a\0b"));
    assert.match(!nul.ok ? nul.error.message : "", /could not start bash: EINVAL/);
    // The server goes on: the next child starts.
    const next = await start(spec("read _; exit 3"));
    assert.equal(parentOf(next.h.pid), server);
    next.h.write(Buffer.from("\n"));
    assert.deepEqual(await next.closed, { code: 3, signal: null });
    await stopTracked(next.h.pid, SHUTDOWN.shortChild);
  });

  test("born in its own cgroup: a setsid daemon started first thing is inside and dies with the group", async (t) => {
    if (containmentMode().kind !== "cgroup") return t.skip(`no cgroups here: ${containmentMode().reason}`);
    const server = await serverReady();
    const home = cgroupOf(server);
    const r = await start(
      spec("setsid sleep 30 >/dev/null 2>&1 </dev/null & echo $!; grep ^0:: /proc/self/cgroup; exec sleep 30"),
    );
    assert.equal(parentOf(r.h.pid), server);
    assert.ok(await waitUntil(() => r.out.stdout.split("\n").length >= 3, 5000), r.out.stdout);
    const [daemonLine, ownLine] = r.out.stdout.split("\n");
    const daemon = Number(daemonLine);
    // `grep` ran as one of the child's first forks, so it shows where the program was from its start.
    assert.match(ownLine!, /^0::.*\/pi-code-supervisor\.\d+\/c\d+$/);
    assert.equal(cgroupOf(daemon), cgroupOf(r.h.pid), "the daemon shares the child's cgroup");
    assert.equal(`0::${cgroupOf(r.h.pid)}`, ownLine);
    assert.equal(cgroupOf(server), home, "the server stepped back out of the child's cgroup");
    assert.ok(r.h.signalGroup("SIGKILL").ok);
    assert.ok(await waitUntil(() => !pidAlive(daemon) && !pidAlive(r.h.pid), 5000), "the group died, daemon too");
    await r.closed;
    await stopTracked(r.h.pid, SHUTDOWN.shortChild);
  });

  test("the server killed mid-run: its children run on, their ends are still seen, the next spawn is Node's", async () => {
    const server = await serverReady();
    const cat = await start(spec("exec cat"));
    const sleeper = await start(spec("exec sleep 30"));
    assert.equal(parentOf(cat.h.pid), server);
    process.kill(server, "SIGKILL");
    assert.ok(await waitUntil(() => !servers().includes(server), 5000), "the server is gone");
    // Output still flows both ways (the slot's sockets are the child's and ours).
    assert.ok(cat.h.write(Buffer.from("still\n")).ok);
    assert.ok(await waitUntil(() => cat.out.stdout === "still\n", 5000));
    const next = await start(spec("read _; exit 5"));
    assert.equal(parentOf(next.h.pid), process.pid, "spawned by Node while no server is ready");
    next.h.write(Buffer.from("\n"));
    assert.deepEqual(await next.closed, { code: 5, signal: null });
    // Their exit statuses went with their parent: each end is noticed, without a status.
    assert.ok(cat.h.signalGroup("SIGTERM").ok);
    assert.ok(sleeper.h.signalGroup("SIGKILL").ok);
    assert.deepEqual(await cat.closed, { code: null, signal: null });
    assert.deepEqual(await sleeper.exit, { code: null, signal: null });
    for (const r of [cat, sleeper, next]) await stopTracked(r.h.pid, SHUTDOWN.shortChild);
    // A new server comes up for later spawns.
    await serverReady();
  });

  test("a start in flight when the server dies fails (it is not run again by Node); the next spawn is Node's", async () => {
    const server = await serverReady();
    const used = () => spawnerPids().find((s) => s.pid === server)?.used ?? -1;
    const before = used();
    process.kill(server, "SIGSTOP");
    const pending = spawnLocalChild(spec(`touch ${join(scratch, "ran")}; exec sleep 30`));
    // The request took a slot and waits in the stopped server's channel.
    assert.ok(await waitUntil(() => used() === before + 1, 5000));
    process.kill(server, "SIGKILL");
    const r = await pending;
    assert.equal(r.ok, false);
    assert.match(
      !r.ok ? r.error.message : "",
      /could not start bash: ESRCH \(the spawn server exited while it started/,
    );
    assert.equal(existsSync(join(scratch, "ran")), false, "the program did not run");
    const next = await start(spec("read _; exit 4"));
    assert.equal(parentOf(next.h.pid), process.pid);
    next.h.write(Buffer.from("\n"));
    assert.deepEqual(await next.closed, { code: 4, signal: null });
    await stopTracked(next.h.pid, SHUTDOWN.shortChild);
  });

  test("more concurrent spawns than a server has slots: every one runs once, with its own exit code", async () => {
    const first = await serverReady();
    const n = SPAWNER_SLOTS * 2 + 8;
    const runs = await Promise.all(
      Array.from({ length: n }, (_, i) => start(spec(`echo $((${i} * 3)); exit ${i % 7}`))),
    );
    const exits = await Promise.all(runs.map((r) => r.closed));
    runs.forEach((r, i) => {
      assert.equal(r.out.stdout, `${i * 3}\n`);
      assert.deepEqual(exits[i], { code: i % 7, signal: null });
    });
    // The ready server's slots were all taken (the rest went to its successor or to Node).
    assert.ok(!spawnerPids().some((s) => s.pid === first && s.used < SPAWNER_SLOTS), "the server was used");
    for (const r of runs) await stopTracked(r.h.pid, SHUTDOWN.shortChild);
  });

  test(`${SPAWNER_ENV}=off: Node spawns every child (through the joining shell)`, async () => {
    await serverReady();
    process.env[SPAWNER_ENV] = "off";
    try {
      const r = await start(spec("read _; exit 2"));
      assert.equal(parentOf(r.h.pid), process.pid);
      r.h.write(Buffer.from("\n"));
      assert.deepEqual(await r.closed, { code: 2, signal: null });
      await stopTracked(r.h.pid, SHUTDOWN.shortChild);
    } finally {
      delete process.env[SPAWNER_ENV];
    }
  });

  test("the host process killed outright: its server's children die with it (nothing outlives Pi)", async () => {
    const children = new URL("../../../actors/process/children.ts", import.meta.url).pathname;
    const spawner = new URL("../../../actors/process/spawner.ts", import.meta.url).pathname;
    const script = `import { spawnLocalChild } from ${JSON.stringify(children)};
import { spawnerPids } from ${JSON.stringify(spawner)};
const s = { file: "bash", args: ["-c", "true"], cwd: "/", env: process.env, purpose: "shell" };
await spawnLocalChild(s);
while (!spawnerPids().some((x) => x.ready)) await new Promise((r) => setTimeout(r, 20));
const r = await spawnLocalChild({ ...s, args: ["-c", "exec sleep 600"] });
console.log(JSON.stringify({ child: r.value.pid, server: spawnerPids()[0].pid }));
setInterval(() => {}, 1000);`;
    const node = spawn(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    node.stdout.on("data", (c: Buffer) => (out += c.toString()));
    assert.ok(await waitUntil(() => out.includes("\n"), 30_000), "the child started");
    const { child, server } = JSON.parse(out) as { child: number; server: number };
    assert.equal(parentOf(child), server);
    node.kill("SIGKILL");
    assert.ok(await waitUntil(() => !pidAlive(child), 5000), `the child (pid ${child}) died with its host`);
    assert.ok(await waitUntil(() => !pidAlive(server), 5000), "and so did the server");
  });

  after(() => rmSync(scratch, { recursive: true, force: true }));
});

describe("the server's interpreter", () => {
  test("a real python3 on PATH before a launcher script found earlier; the script when it is the only one", () => {
    const root = tempDir("pcs-spawner-python-");
    const [shim, real, none] = ["shim", "real", "none"].map((d) => join(root, d));
    for (const d of [shim, real, none]) mkdirSync(d);
    // A launcher like pyenv's shim: a shell script that picks an interpreter and execs it.
    writeFileSync(join(shim, "python3"), `#!/bin/sh\nexec ${PYTHON} "$@"\n`);
    chmodSync(join(shim, "python3"), 0o755);
    symlinkSync(PYTHON, join(real, "python3"));
    assert.equal(findPython([none, shim, real].join(":")), join(real, "python3"));
    assert.equal(findPython([shim, none].join(":")), join(shim, "python3"));
    assert.equal(findPython(["relative", none].join(":")), undefined);
  });
});
