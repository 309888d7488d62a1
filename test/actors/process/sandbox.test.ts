// The bubblewrap backend against real processes: each promise of the sandbox is checked from inside Python, and the
// interrupt reaches the runner without killing the sandbox (a session's state survives it, as locally).
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { SupervisorHost, type RunRequestInput } from "../../../host/host.ts";
import { sandboxOperations, bwrapArgv, bwrapExit } from "../../../actors/process/sandbox.ts";
import { liveGroups } from "../../../actors/registry/registry.ts";
import { RUNNER_PATH } from "../../../actors/runner/runner.ts";
import { dirname } from "node:path";
import { PYTHON } from "../../helpers/pythons.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

let cwd: string;
let outside: string;
let server: Server;
let port: number;
const hosts: SupervisorHost[] = [];

function sandboxHost(network = false): SupervisorHost {
  const h = new SupervisorHost({
    ops: sandboxOperations({ network, writable: [], readable: [], support: [dirname(RUNNER_PATH)] }),
    limits: { graceMs: 300, killMs: 300 },
  });
  hosts.push(h);
  return h;
}
const runOn = (h: SupervisorHost, code: string, extra: Partial<RunRequestInput> = {}) =>
  h.run({ code, cwd, timeoutMs: 20_000, ...extra });

before(async () => {
  cwd = tempDir("pcs-sandbox-");
  outside = tempDir("pcs-sandbox-outside-", "/var/tmp");
  server = createServer((s) => s.end("hello from the host\n"));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as { port: number }).port;
});
after(async () => {
  for (const h of hosts) await h.shutdown();
  server.close();
  rmSync(cwd, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
  for (const h of hosts) assert.deepEqual(liveGroups(h.id), [], "no process group left registered");
});

describe("sandbox backend", () => {
  test("the working directory is writable, the rest of the system is not", async () => {
    const h = sandboxHost();
    const r = await runOn(
      h,
      [
        "open('inside.txt', 'w').write('kept')",
        "for p in [" + JSON.stringify(join(outside, "escape.txt")) + ", '/etc/pcs-escape', '/usr/pcs-escape']:",
        "    try:",
        "        open(p, 'w').write('x'); print('WROTE', p)",
        "    except OSError as e:",
        "        print('denied', e.errno)",
      ].join("\n"),
    );
    assert.equal(r.outcome.status, "success", r.stderr);
    assert.equal(readFileSync(join(cwd, "inside.txt"), "utf8"), "kept");
    assert.doesNotMatch(r.stdout, /WROTE/);
    assert.equal(r.stdout.match(/denied/g)?.length, 3);
    assert.equal(h.backend().kind, "sandbox");
  });

  test("$HOME is hidden: ~/.ssh cannot be read; /tmp is private", async () => {
    const ssh = join(homedir(), ".ssh");
    mkdirSync(ssh, { recursive: true, mode: 0o700 });
    const probe = join(ssh, "pcs-sandbox-probe");
    writeFileSync(probe, "secret");
    const hostTmp = join(tmpdir(), `pcs-host-only-${process.pid}`);
    writeFileSync(hostTmp, "host");
    try {
      const r = await runOn(
        sandboxHost(),
        `import os\nprint(os.path.exists(${JSON.stringify(probe)}), os.path.exists(${JSON.stringify(hostTmp)}))\n` +
          `try:\n    open(${JSON.stringify(probe)}).read(); print('READ')\nexcept OSError as e:\n    print('denied')`,
      );
      assert.equal(r.stdout, "False False\ndenied\n", r.stderr);
    } finally {
      rmSync(probe, { force: true });
      rmSync(hostTmp, { force: true });
    }
  });

  const connect = `import socket\ns = socket.socket()\ns.settimeout(3)\ntry:\n    s.connect(('127.0.0.1', PORT)); print(s.recv(100).decode().strip())\nexcept OSError as e:\n    print('no network', e.errno)`;
  test("no network unless sandbox.network: a socket to 127.0.0.1 fails", async () => {
    const r = await runOn(sandboxHost(false), connect.replace("PORT", String(port)));
    assert.match(r.stdout, /^no network/, r.stderr);
  });
  test("with sandbox.network the same socket works", async () => {
    const r = await runOn(sandboxHost(true), connect.replace("PORT", String(port)));
    assert.equal(r.stdout, "hello from the host\n", r.stderr);
  });

  test("a child cannot outlive its run (new PID namespace)", async () => {
    const h = sandboxHost();
    const marker = join(cwd, "child-alive");
    const r = await runOn(
      h,
      `import subprocess, sys\nsubprocess.Popen(['/bin/sh', '-c', 'sleep 1; echo late > ${marker}'], start_new_session=True)\nprint('started')`,
    );
    assert.equal(r.stdout, "started\n", r.stderr);
    await new Promise((res) => setTimeout(res, 1800));
    assert.throws(() => readFileSync(marker), /ENOENT/, "the detached child was killed with the run");
  });

  test("interrupt reaches the runner inside: the session's state survives, output kept", async () => {
    const h = sandboxHost();
    await runOn(h, "x = 41", { session: "s" });
    const r = await runOn(h, "import time\nprint('before', flush=True)\ntime.sleep(30)", {
      session: "s",
      timeoutMs: 800,
    });
    assert.equal(r.outcome.status, "timeout");
    assert.equal(r.outcome.killed, false);
    assert.equal(r.outcome.session?.isLost, false);
    assert.equal(r.stdout, "before\n");
    assert.match(r.stderr, /KeyboardInterrupt/);
    const again = await runOn(h, "x + 1", { session: "s" });
    assert.equal(again.stdout, "42\n");
    // The inspector shows the backend on the session (its input/context); the machines only carry it.
    const session = h.sessions().find((s) => s.name === "s")!;
    assert.equal(session.backend, "sandbox (bwrap, no network)");
  });

  test("a run that ignores the interrupt is killed after the grace period: the session is lost", async () => {
    const h = sandboxHost();
    await runOn(h, "x = 1", { session: "k" });
    const r = await runOn(
      h,
      "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('stubborn', flush=True)\ntime.sleep(30)",
      { session: "k", timeoutMs: 500 },
    );
    assert.equal(r.outcome.status, "timeout");
    assert.equal(r.outcome.killed, true);
    assert.equal(r.outcome.session?.isLost, true);
    assert.equal(r.stdout, "stubborn\n");
  });

  test("bwrap missing: setup_error with sandbox_unavailable and bwrap's message, nothing runs locally", async () => {
    const h = new SupervisorHost({
      ops: sandboxOperations({ network: false, writable: [], readable: [], support: [], bwrap: "/nonexistent/bwrap" }),
    });
    hosts.push(h);
    const r = await runOn(h, "open('ran-locally', 'w')");
    assert.equal(r.outcome.status, "setup_error");
    assert.equal(r.outcome.hints?.[0]?.id, "sandbox_unavailable");
    assert.match(r.outcome.message ?? "", /\/nonexistent\/bwrap: ENOENT/);
    assert.throws(() => readFileSync(join(cwd, "ran-locally")), /ENOENT/);
    const health = await h.backendHealth();
    assert.equal(health.ok, false);
  });

  test("bwrap's exit status 128+N is read back as the runner's signal; other exits pass as they are", () => {
    assert.deepEqual(bwrapExit({ code: 137, signal: null }), { code: null, signal: "SIGKILL" });
    assert.deepEqual(bwrapExit({ code: 139, signal: null }), { code: null, signal: "SIGSEGV" });
    assert.deepEqual(bwrapExit({ code: 9, signal: null }), { code: 9, signal: null });
    assert.deepEqual(bwrapExit({ code: 128, signal: null }), { code: 128, signal: null });
    assert.deepEqual(bwrapExit({ code: null, signal: "SIGTERM" }), { code: null, signal: "SIGTERM" });
    assert.deepEqual(bwrapExit({ code: 255, signal: null }), { code: 255, signal: null });
  });

  test("bwrap argv: writable paths bound, hidden support folders read-only, the runner last", () => {
    const built = bwrapArgv(
      { network: false, writable: ["/srv/data"], readable: [join(homedir(), "models")], support: [], home: homedir() },
      { executable: PYTHON, args: ["runner.py", "--mode", "fresh"], cwd: "/" },
    );
    assert.ok(built.ok);
    const argv = built.value;
    const s = argv.join(" ");
    assert.match(s, /--bind \/srv\/data \/srv\/data/);
    assert.match(s, new RegExp(`--ro-bind-try ${join(homedir(), "models")}`));
    assert.match(s, /--unshare-net/);
    assert.match(s, /--die-with-parent/);
    // The interpreter runs by its real path (a symlink never decides what is shown).
    assert.deepEqual(argv.slice(-4), [realpathSync(PYTHON), "runner.py", "--mode", "fresh"]);
  });

  test("bwrap argv: Pi's project folder kept read-only is Pi's CONFIG_DIR_NAME as handed down (`.pi` by default)", () => {
    const cwd = tempDir("pcs-configdir-");
    const held = (configDir?: string) => {
      const built = bwrapArgv(
        { network: false, writable: [], readable: [], support: [], ...(configDir ? { configDir } : {}) },
        { executable: PYTHON, args: [], cwd },
      );
      assert.ok(built.ok);
      return [".pi", ".mypi", ".venv", "venv"].filter((name) => built.value.includes(join(cwd, name)));
    };
    assert.deepEqual(held(), [".pi", ".venv", "venv"]);
    assert.deepEqual(held(".mypi"), [".mypi", ".venv", "venv"]);
  });
});
