// Resource limits (settings `limits`) against real processes: applied by the runner before user code (setrlimit),
// each ends or breaks the run with its hint, the session is told truthfully whether it survived, output is kept.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { SupervisorHost, type RunRequestInput } from "../../host/host.ts";
import type { ResourceLimits } from "../../store/settings.ts";
import { tempDir } from "../helpers/temp-dir.ts";

let cwd: string;
const hosts: SupervisorHost[] = [];
const hostWith = (limits: ResourceLimits) => {
  const h = new SupervisorHost({ resourceLimits: () => limits, limits: { graceMs: 300, killMs: 300 } });
  hosts.push(h);
  return h;
};
const runOn = (h: SupervisorHost, code: string, extra: Partial<RunRequestInput> = {}) =>
  h.run({ code, cwd, timeoutMs: 30_000, ...extra });
const hintIds = (r: { outcome: { hints?: { id: string }[] } }) => (r.outcome.hints ?? []).map((h) => h.id);

before(() => {
  cwd = tempDir("pcs-limits-");
});
after(async () => {
  for (const h of hosts) await h.shutdown();
  rmSync(cwd, { recursive: true, force: true });
});

describe("resource limits", () => {
  test("memoryMiB: MemoryError, hint limit_memory, the session survives", async () => {
    const h = hostWith({ memoryMiB: 300 });
    await runOn(h, "keep = 'state'", { session: "m" });
    const r = await runOn(h, "print('start', flush=True)\nx = bytearray(600 * 1024 * 1024)", { session: "m" });
    assert.equal(r.outcome.status, "runtime_error");
    assert.match(r.stderr, /MemoryError/);
    assert.equal(r.stdout, "start\n");
    assert.deepEqual(hintIds(r), ["limit_memory"]);
    assert.equal(r.outcome.session?.isLost, false);
    assert.equal((await runOn(h, "keep", { session: "m" })).stdout, "state\n");
  });

  test("cpuSeconds: SIGXCPU ends the process, hint limit_cpu, the session is lost, output kept", async () => {
    const h = hostWith({ cpuSeconds: 1 });
    // A session's earlier runs do not use up a later run's budget.
    await runOn(h, "n = 0\nimport time\nt = time.process_time()\nwhile time.process_time() - t < 0.7: n += 1", {
      session: "c",
    });
    const ok = await runOn(
      h,
      "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.7: n += 1\n'fine'",
      { session: "c" },
    );
    assert.equal(ok.stdout, "fine\n", ok.stderr);
    const r = await runOn(h, "print('spinning', flush=True)\nwhile True: n += 1", { session: "c" });
    assert.equal(r.outcome.signal, "SIGXCPU");
    assert.equal(r.outcome.session?.isLost, true);
    assert.equal(r.stdout, "spinning\n");
    assert.deepEqual(hintIds(r), ["limit_cpu"]);
  });

  test("fileSizeMiB: the write fails with 'File too large', hint limit_file_size, the process lives", async () => {
    const h = hostWith({ fileSizeMiB: 1 });
    const r = await runOn(h, "open('big.bin', 'wb').write(b'x' * (2 << 20))");
    assert.equal(r.outcome.status, "runtime_error");
    assert.match(r.stderr, /File too large/);
    assert.deepEqual(hintIds(r), ["limit_file_size"]);
  });

  test("openFiles: opening past the limit fails with EMFILE", async () => {
    const h = hostWith({ openFiles: 32 });
    const r = await runOn(
      h,
      "fs = []\ntry:\n    while True: fs.append(open('/dev/null'))\nexcept OSError as e:\n    print(e.errno, len(fs) < 32)",
    );
    assert.equal(r.stdout, "24 True\n", r.stderr);
  });

  test("outputMiB: the run's process tree is killed past the limit, output so far kept, hint limit_output", async () => {
    const h = hostWith({ outputMiB: 1 });
    await runOn(h, "v = 1", { session: "o" });
    const r = await runOn(h, "import sys\nwhile True: sys.stdout.write('z' * 65536)", { session: "o" });
    assert.equal(r.outcome.session?.isLost, true);
    assert.ok(r.stdoutBytes > 1 << 20, `kept ${r.stdoutBytes} bytes`);
    assert.deepEqual(hintIds(r), ["limit_output"]);
  });

  test("no limits set: no limit hints, even for a MemoryError of the script's own making", async () => {
    const h = hostWith({});
    const r = await runOn(h, "raise MemoryError('mine')");
    assert.deepEqual(hintIds(r), []);
  });
});
