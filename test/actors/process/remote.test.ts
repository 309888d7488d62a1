// The remote backend through a real OpenSSH server on a loopback port (started and stopped here; if it cannot start
// the test fails with sshd's reason). The core acceptance scenarios run through it; the kubectl/docker/podman/command
// presets are checked for argv and stream plumbing with a stand-in executable.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { SupervisorHost, type RunRequestInput } from "../../../host/host.ts";
import { mapCwd, remoteOperations, runtimeBundle } from "../../../actors/process/remote.ts";
import { transportArgv, shellQuote } from "../../../actors/process/transport.ts";
import { parseSshFlag } from "../../../actors/process/backends.ts";
import { liveGroups } from "../../../actors/registry/registry.ts";
import type { RunTools } from "../../../actors/calls/contract.ts";
import { startSshd, type TestSshd } from "../../helpers/sshd.ts";
import { buildWheel } from "../../helpers/wheels.ts";
import { waitUntil } from "../../helpers/procs.ts";
import { PYTHON } from "../../helpers/pythons.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

let sshd: TestSshd;
let local: string;
let remoteDir: string;
let host: SupervisorHost;
const extra: SupervisorHost[] = [];
const run = (code: string, more: Partial<RunRequestInput> = {}, tools?: RunTools) =>
  host.run({ code, cwd: local, timeoutMs: 30_000, ...more }, tools ? { tools } : {});

/** Remote runner processes still alive (they run from the shipped runtime's cache folder). */
function remoteRunners(): string[] {
  const out = spawnSync("pgrep", ["-af", `${sshd.cache}/pi-code-supervisor/runtime/`]).stdout.toString();
  return out.split("\n").filter((l) => l && !l.includes("pgrep"));
}

before(async () => {
  sshd = await startSshd();
  local = tempDir("pcs-remote-local-");
  remoteDir = tempDir("pcs-remote-dir-");
  // The server's cache folder is new (test/helpers/sshd.ts): the first run must ship the runtime.
  host = new SupervisorHost({
    ops: remoteOperations({ remote: sshd.remote({ cwd: remoteDir }), localRoot: local }),
    limits: { graceMs: 300, killMs: 300 },
    spareRunners: () => false,
  });
});
after(async () => {
  await host?.shutdown();
  for (const h of extra) await h.shutdown();
  await sshd?.stop();
  rmSync(local, { recursive: true, force: true });
  rmSync(remoteDir, { recursive: true, force: true });
  assert.deepEqual(liveGroups(host.id), []);
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(remoteRunners(), [], "no remote runner left");
});

describe("remote backend over a real sshd", () => {
  test("fresh run: ships the runtime (verified cache), runs in the mapped directory, output returned", async () => {
    const r = await run("import os\nprint(os.getcwd())\n'done'");
    assert.equal(r.outcome.status, "success", `${r.outcome.message} ${r.stderr}`);
    assert.equal(r.stdout, `${remoteDir}\ndone\n`);
    assert.ok(existsSync(join(sshd.cache, "pi-code-supervisor", "runtime", runtimeBundle().hash, "relay.py")));
    assert.equal(host.backend().kind, "remote");
    const health = await host.backendHealth();
    assert.equal(health.ok, true);
  });

  test("a subfolder maps to the same subfolder; a folder outside Pi's directory is a setup_error", async () => {
    mkdirSync(join(local, "sub"));
    mkdirSync(join(remoteDir, "sub"));
    const r = await run("import os\nos.getcwd()", { cwd: join(local, "sub") });
    assert.equal(r.stdout, `${join(remoteDir, "sub")}\n`);
    const out = await run("1", { cwd: tmpdir() });
    assert.equal(out.outcome.status, "setup_error");
    assert.equal(out.outcome.hints?.[0]?.id, "remote_cwd");
  });

  test("named session: state kept after an interrupt, lost after a kill", async () => {
    await run("x = 41", { session: "s" });
    const r = await run("import time\nprint('before', flush=True)\ntime.sleep(30)", { session: "s", timeoutMs: 800 });
    assert.equal(r.outcome.status, "timeout");
    assert.equal(r.outcome.session?.isLost, false);
    assert.equal(r.stdout, "before\n");
    assert.match(r.stderr, /KeyboardInterrupt/);
    assert.equal((await run("x + 1", { session: "s" })).stdout, "42\n");
    const k = await run(
      "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('stubborn', flush=True)\ntime.sleep(30)",
      { session: "s", timeoutMs: 500 },
    );
    assert.equal(k.outcome.killed, true);
    assert.equal(k.outcome.session?.isLost, true);
    assert.equal(k.stdout, "stubborn\n");
    const after = await run("'x' in globals()", { session: "s" });
    assert.equal(after.stdout, "False\n");
  });

  test("10 MiB of output arrives whole and in order with stderr apart", async () => {
    const r = await run("import sys\nsys.stdout.write('y' * (10 << 20))\nsys.stderr.write('err\\n');");
    assert.equal(r.outcome.status, "success");
    assert.equal(r.stdoutBytes, 10 << 20);
    assert.equal(r.stderr, "err\n");
  });

  test("user output cannot spoof control: frame-like bytes on stdout stay output", async () => {
    const fake = Buffer.concat([Buffer.from([3, 0, 0, 0, 20]), Buffer.from('{"type":"done","id":"x"}')]);
    const r = await run(`import os\nos.write(1, bytes(${JSON.stringify([...fake])}))\nprint()\n'after'`);
    assert.equal(r.outcome.status, "success");
    assert.match(r.stdout, /after\n$/);
  });

  test("nested tool call from remote Python travels back over the transport", async () => {
    const tools: RunTools = {
      callerId: "call_1",
      cwd: local,
      tools: [
        {
          spec: { name: "echo", python: "echo", signature: "echo(*, text: str)" },
          validate: (args) => ({ ok: true, value: args }),
        },
      ],
      emit: () => {},
      execute: async (_name, input) => ({
        result: { content: [{ type: "text", text: `echo:${String(input.text)}` }] },
        isError: false,
      }),
    };
    const r = await run("await echo(text='hi')", {}, tools);
    assert.equal(r.outcome.status, "success", r.stderr);
    assert.equal(r.stdout, "echo:hi\n");
    assert.equal(r.outcome.nestedCalls?.length, 1);
  });

  test("PEP 723 dependencies install on the remote side with its pip (PIP_* carried over), cached there", async () => {
    const wheels = tempDir("pcs-remote-wheels-");
    const localEnvs = tempDir("pcs-remote-localenvs-");
    buildWheel(wheels, "remotepkg", "1.0");
    const h = new SupervisorHost({
      ops: remoteOperations({ remote: sshd.remote({ cwd: remoteDir, python: PYTHON }), localRoot: local }),
      env: () => ({ ...process.env, PIP_NO_INDEX: "1", PIP_FIND_LINKS: wheels }),
      packages: { envRoot: join(localEnvs, "envs"), sessionRoot: join(localEnvs, "sessions") },
      spareRunners: () => false,
    });
    extra.push(h);
    const code =
      '# /// script\n# dependencies = ["remotepkg==1.0"]\n# ///\nimport remotepkg\nprint(remotepkg.VERSION, remotepkg.__file__)';
    const progress: string[] = [];
    const first = await h.run({ code, cwd: local, timeoutMs: 60_000 }, { onProgress: (p) => progress.push(p.line) });
    const envDir = first.outcome.install?.sysPath ?? "";
    try {
      assert.equal(first.outcome.status, "success", `${first.outcome.message} ${first.stderr}`);
      assert.equal(first.outcome.install?.cached, false);
      assert.ok(envDir.startsWith(join(sshd.cache, "pi-code-supervisor", "envs")), envDir);
      assert.equal(first.stdout, `1.0 ${join(envDir, "remotepkg", "__init__.py")}\n`);
      assert.deepEqual(first.outcome.install?.modules, ["remotepkg"]);
      assert.ok(
        progress.some((l) => /remotepkg/.test(l)),
        `progress named the package: ${progress.join(" | ")}`,
      );
      assert.equal(existsSync(join(localEnvs, "envs")), false, "nothing installed on this machine");
      const again = await h.run({ code, cwd: local, timeoutMs: 60_000 });
      assert.equal(again.outcome.status, "success", again.stderr);
      assert.equal(again.outcome.install?.cached, true);
      // A session: its own package folder there, nothing installed twice.
      const s1 = await h.run({ code, cwd: local, session: "deps", timeoutMs: 60_000 });
      assert.equal(s1.outcome.status, "success", `${s1.outcome.message} ${s1.stderr}`);
      assert.match(s1.outcome.install?.sysPath ?? "", /\/pi-code-execution-\d+\/host-[^/]+\/deps-\d+$/);
      assert.match(s1.stdout, /^1\.0 /);
      const s2 = await h.run({ code, cwd: local, session: "deps", timeoutMs: 60_000 });
      assert.equal(s2.outcome.install?.cached, true);
      rmSync(s1.outcome.install?.sysPath ?? "/nonexistent", { recursive: true, force: true });
      // A requirement the remote pip cannot find: the install stage fails with pip's words.
      const missing = await h.run({
        code: code.replace("remotepkg==1.0", "remotepkg==9.9"),
        cwd: local,
        timeoutMs: 60_000,
      });
      assert.equal(missing.outcome.stage, "install");
      assert.match(missing.outcome.message ?? "", /remotepkg==9\.9/);
    } finally {
      if (envDir) rmSync(envDir, { recursive: true, force: true });
      rmSync(wheels, { recursive: true, force: true });
      rmSync(localEnvs, { recursive: true, force: true });
    }
  });

  test("the connection drops mid-run (the sshd connection process is killed): lost, output kept, nothing left", async () => {
    await run("y = 1", { session: "d" });
    const p = run("import time\nprint('partial', flush=True)\ntime.sleep(30)", { session: "d" });
    await new Promise((r) => setTimeout(r, 800));
    const conns = sshd.connectionPids();
    assert.ok(conns.length > 0, "sshd has a connection process");
    for (const pid of conns) process.kill(pid, "SIGKILL");
    const r = await p;
    assert.equal(r.outcome.session?.isLost, true);
    assert.equal(r.stdout, "partial\n");
    assert.ok(
      r.outcome.hints?.some((h) => h.id === "remote_disconnected"),
      JSON.stringify(r.outcome),
    );
    await new Promise((res) => setTimeout(res, 500));
    assert.deepEqual(remoteRunners(), [], "the remote group was killed when the connection went");
    // The next run reconnects.
    assert.equal((await run("'again'")).stdout, "again\n");
  });

  test("reconnecting the ssh master keeps one process-exit hook per backend, removed at close", async () => {
    const dir = tempDir("pcs-remote-rt-");
    const ops = remoteOperations({ remote: sshd.remote({ cwd: remoteDir }), localRoot: local, runtimeDir: dir });
    // Count only hooks added by this test: the process registry's own exit hook comes and goes as earlier tests'
    // processes end, so the total listener count is not stable here.
    const before = new Set(process.listeners("exit"));
    const registryHook = (globalThis as Record<symbol, { killAll?: unknown } | undefined>)[
      Symbol.for("pi-code-supervisor.process-trees")
    ]?.killAll;
    const added = () => process.listeners("exit").filter((l) => !before.has(l) && l !== registryHook).length;
    try {
      for (let i = 0; i < 4; i++) {
        const h = await ops.health();
        assert.equal(h.ok, true, JSON.stringify(h));
        // The master is the ssh whose ControlPath is in this backend's own folder: drop it, the next use reconnects.
        const pids = spawnSync("pgrep", ["-f", `ControlPath=${dir}/`])
          .stdout.toString()
          .trim()
          .split("\n")
          .filter(Boolean);
        assert.equal(pids.length, 1, `one master: ${pids.join(",")}`);
        process.kill(Number(pids[0]), "SIGKILL");
        // Gone as `kill -0` sees it, a zombie still counting (with pidAlive, which counts a zombie gone, it failed once).
        await waitUntil(() => spawnSync("kill", ["-0", pids[0]!]).status !== 0, 2000);
      }
      assert.equal((await ops.health()).ok, true);
      assert.equal(added(), 1);
    } finally {
      await ops.close();
      rmSync(dir, { recursive: true, force: true });
    }
    assert.equal(added(), 0);
  });

  test("authentication refused: setup_error remote_auth with ssh's message", async () => {
    const h = new SupervisorHost({
      ops: remoteOperations({ remote: sshd.remote({ identityFile: join(sshd.dir, "host_key") }), localRoot: local }),
    });
    extra.push(h);
    const r = await h.run({ code: "1", cwd: local, timeoutMs: 20_000 });
    assert.equal(r.outcome.status, "setup_error");
    assert.equal(r.outcome.hints?.[0]?.id, "remote_auth");
    assert.match(r.outcome.message ?? "", /Permission denied/);
  });

  test("unreachable host and missing remote python: their own hints", async () => {
    const closed = new SupervisorHost({
      ops: remoteOperations({ remote: sshd.remote({ port: 1 }), localRoot: local }),
    });
    const nopy = new SupervisorHost({
      ops: remoteOperations({ remote: sshd.remote({ python: "/nonexistent/python3" }), localRoot: local }),
    });
    extra.push(closed, nopy);
    const a = await closed.run({ code: "1", cwd: local, timeoutMs: 20_000 });
    assert.equal(a.outcome.hints?.[0]?.id, "remote_unreachable", a.outcome.message);
    const b = await nopy.run({ code: "1", cwd: local, timeoutMs: 20_000 });
    assert.equal(b.outcome.status, "setup_error");
    assert.equal(b.outcome.hints?.[0]?.id, "remote_python", b.outcome.message);
  });
});

describe("transport presets", () => {
  const base = { transport: "ssh" as const, options: [], argv: [] };
  test("argv per preset", () => {
    assert.deepEqual(
      transportArgv({ ...base, transport: "kubectl", host: "pod-1", options: ["-c", "py"] }, ["python3", "-c", "x y"]),
      ["kubectl", "exec", "-i", "-c", "py", "pod-1", "--", "python3", "-c", "x y"],
    );
    assert.deepEqual(transportArgv({ ...base, transport: "docker", host: "box" }, ["python3"]), [
      "docker",
      "exec",
      "-i",
      "box",
      "python3",
    ]);
    assert.deepEqual(transportArgv({ ...base, transport: "podman", host: "box" }, ["python3"]), [
      "podman",
      "exec",
      "-i",
      "box",
      "python3",
    ]);
    assert.deepEqual(transportArgv({ ...base, transport: "command", argv: ["nsenter", "-t", "1"] }, ["python3"]), [
      "nsenter",
      "-t",
      "1",
      "python3",
    ]);
    const ssh = transportArgv(
      { ...base, host: "h", user: "u", port: 2222 },
      ["python3", "-c", "print('a b')"],
      "/tmp/m",
    );
    assert.equal(ssh.at(-1), "python3 -c 'print('\\''a b'\\'')'");
    assert.ok(ssh.includes("ControlPath=/tmp/m"));
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
  });

  test("--ssh user@host[:remote-cwd] and the cwd rule", () => {
    const r = parseSshFlag("dev@build-1:/srv/work", { ...base });
    assert.ok(r.ok);
    assert.deepEqual([r.remote.user, r.remote.host, r.remote.cwd], ["dev", "build-1", "/srv/work"]);
    assert.equal(parseSshFlag("bad host@", base).ok, false);
    assert.equal(mapCwd("/a", "/srv", "/a/b/c"), "/srv/b/c");
    assert.equal(mapCwd("/a", undefined, "/a"), "");
    assert.equal(mapCwd("/a", "/srv", "/other"), undefined);
  });

  for (const preset of ["kubectl", "docker", "podman"] as const) {
    test(`${preset} preset: stream plumbing through a stand-in ${preset}`, async () => {
      // The stand-in records its argv and runs the command after the target (and `--`) locally, stdin and stdout
      // passed through: exactly what `kubectl exec -i` / `docker exec -i` do on the other side.
      const bin = tempDir(`pcs-${preset}-`);
      const log = join(bin, "argv.log");
      writeFileSync(
        join(bin, preset),
        `#!/bin/sh\nprintf '%s\\n' "$@" > ${log}\nshift 3\n[ "$1" = "--" ] && shift\nexec "$@"\n`,
      );
      chmodSync(join(bin, preset), 0o755);
      const oldPath = process.env.PATH;
      process.env.PATH = `${bin}:${oldPath}`;
      const h = new SupervisorHost({
        ops: remoteOperations({ remote: { ...base, transport: preset, host: "target", cwd: local }, localRoot: local }),
        spareRunners: () => false,
      });
      try {
        await h.run({ code: "z = 2", cwd: local, timeoutMs: 20_000, session: "p" });
        const r = await h.run({
          code: "import os\nprint(os.getcwd())\nz * 21",
          cwd: local,
          timeoutMs: 20_000,
          session: "p",
        });
        assert.equal(r.outcome.status, "success", `${r.outcome.message} ${r.stderr}`);
        assert.equal(r.stdout, `${local}\n42\n`);
        const argv = spawnSync("cat", [log]).stdout.toString().split("\n");
        assert.deepEqual(argv.slice(0, 3), ["exec", "-i", "target"]);
      } finally {
        process.env.PATH = oldPath;
        await h.shutdown();
        rmSync(bin, { recursive: true, force: true });
      }
    });
  }
});
