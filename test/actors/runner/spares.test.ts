// Spare runners: pre-started fresh-mode interpreters that fresh runs take instead of starting one.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { after, before, describe, test } from "node:test";
import { SupervisorHost } from "../../../host/host.ts";
import { MAX_SPARES_PER_KEY } from "../../../machines/spare-pool.ts";
import { liveGroups } from "../../../actors/registry/registry.ts";
import { bareStart, pidAlive, waitUntil } from "../../helpers/procs.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

let cwd: string;
before(() => {
  cwd = tempDir("pcs-spares-");
});

const spareIds = (h: SupervisorHost) => h.spares().map((s) => s.id);
const readySpare = (h: SupervisorHost) => waitUntil(() => h.spares().some((s) => s.ready), 5000);
const PROBE =
  "import os, sys, json\njson.dumps({'argv': sys.argv, 'cwd': os.getcwd(), 'path0': sys.path[0], 'mods': sorted(sys.modules), 'globals': sorted(k for k in globals() if not k.startswith('__')), 'env': os.environ.get('PCS_SPARE_MARK'), 'pid': os.getpid()})";

describe("spare runners", () => {
  let host: SupervisorHost;
  before(() => {
    host = new SupervisorHost();
  });
  after(async () => {
    await host.shutdown();
  });

  test("a fresh run takes a ready spare, which is indistinguishable from a new process", async () => {
    const cold = JSON.parse((await host.run({ code: PROBE, cwd, timeoutMs: 10_000 })).stdout);
    assert.ok(await readySpare(host), "a spare was started for this key and became ready");
    const [spareId] = spareIds(host);
    const warm = JSON.parse((await host.run({ code: PROBE, cwd, timeoutMs: 10_000 })).stdout);
    assert.ok(!spareIds(host).includes(spareId), "the spare was claimed");
    for (const k of ["argv", "cwd", "path0", "mods", "globals", "env"]) assert.deepEqual(warm[k], cold[k], k);
    assert.notEqual(warm.pid, cold.pid);
    assert.ok(
      !pidAlive(warm.pid) || (await waitUntil(() => !pidAlive(warm.pid))),
      "the claimed process ended with its run",
    );
  });

  test("with a spare, a fresh run costs a few milliseconds", async () => {
    // Baseline in the same run, interleaved: a bare start of the same interpreter (`-c pass`), which a run served by
    // a spare skips. Under a loaded machine both grow; the spare's run must stay well below the bare start.
    const exe = (await host.run({ code: "import sys; print(sys.executable)", cwd, timeoutMs: 10_000 })).stdout.trim();
    const times: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < 8; i++) {
      assert.ok(await readySpare(host));
      const t0 = performance.now();
      const r = await host.run({ code: "6 * 7", cwd, timeoutMs: 10_000 });
      times.push(performance.now() - t0);
      assert.equal(r.stdout, "42\n");
      bare.push(await bareStart(exe));
    }
    times.sort((a, b) => a - b);
    bare.sort((a, b) => a - b);
    const [p50, bareP50] = [times[4]!, bare[4]!];
    assert.ok(
      p50 < 30 || p50 < bareP50 / 2,
      `p50 ${p50.toFixed(1)} ms, a bare interpreter start ${bareP50.toFixed(1)} ms (goal 5 ms; bounded loosely for a shared CI machine)`,
    );
  });

  test("a claimed spare is replaced at claim time, while the run that took it still runs", async () => {
    const h = new SupervisorHost();
    try {
      await h.run({ code: "0", cwd, timeoutMs: 10_000 });
      assert.ok(await readySpare(h));
      const before = spareIds(h);
      assert.equal(before.length, 1, "one spare for the key");
      const ac = new AbortController();
      const running = h.run({ code: "import time\ntime.sleep(60)", cwd, timeoutMs: 120_000 }, { signal: ac.signal });
      const active = () => h.stats().activeRuns;
      assert.ok(await waitUntil(() => active() === 1, 5000), "the run started");
      const now = spareIds(h);
      assert.ok(!now.includes(before[0]!), "it took the spare");
      assert.equal(now.length, 1, "and a replacement exists at once, before the run ends");
      assert.ok(await readySpare(h), "which warms while the run still runs");
      assert.equal(active(), 1);
      ac.abort();
      assert.equal((await running).outcome.status, "cancelled");
    } finally {
      await h.shutdown();
    }
  });

  test("a different environment does not take the spare", async () => {
    let mark = "one";
    const h2 = new SupervisorHost({ env: () => ({ ...process.env, PCS_SPARE_MARK: mark }) });
    try {
      await h2.run({ code: "0", cwd, timeoutMs: 10_000 });
      assert.ok(await readySpare(h2));
      mark = "two";
      const r = await h2.run({ code: "import os\nos.environ['PCS_SPARE_MARK']", cwd, timeoutMs: 10_000 });
      assert.equal(r.stdout, "two\n", "the run saw the environment it asked for, not the spare's");
    } finally {
      await h2.shutdown();
    }
  });

  test("sessions and runs with spares off use no spare", async () => {
    const h = new SupervisorHost({ spareRunners: () => false });
    try {
      await h.run({ code: "0", cwd, timeoutMs: 10_000 });
      await h.run({ code: "0", cwd, timeoutMs: 10_000, session: "s" });
      assert.deepEqual(spareIds(h), []);
    } finally {
      await h.shutdown();
    }
  });

  test("runs arriving faster than a spare warms grow a bounded pool per key, which retires when idle", async () => {
    const h = new SupervisorHost({ spareIdleMs: 1500 });
    try {
      // Started together: each finds the key's spares still warming, so the pool grows, never past the bound.
      const outcomes = await Promise.all(Array.from({ length: 6 }, () => h.run({ code: "0", cwd, timeoutMs: 20_000 })));
      assert.ok(outcomes.every((r) => r.outcome.status === "success"));
      const ctx = () => ({ spareTarget: h.spareTargets(), spares: h.spares() });
      const [key] = Object.keys(ctx().spareTarget);
      assert.equal(ctx().spareTarget[key!], MAX_SPARES_PER_KEY, "the pool grew to its bound");
      assert.equal(spareIds(h).length, MAX_SPARES_PER_KEY, "each spare is an actor");
      assert.ok(await waitUntil(() => Object.values(ctx().spares).every((s) => s.ready), 10_000), "all warm");
      assert.ok(
        // The key's fork server (actors/process/fork-server.ts) is its spares' parent, not a spare.
        await waitUntil(() => liveGroups(h.id, /^spare:/).length === MAX_SPARES_PER_KEY, 5000),
        "one process per spare once the runs' processes are reaped (off the result path)",
      );
      assert.ok(await waitUntil(() => spareIds(h).length === 0, 8000), "idle spares retire");
      assert.deepEqual(ctx().spareTarget, {}, "and the pool is forgotten");
      assert.ok(await waitUntil(() => liveGroups(h.id).length === 0, 3000), "their processes are gone");
    } finally {
      await h.shutdown();
    }
  });

  test("an unused spare retires after its idle time; shutdown stops spares", async () => {
    const h = new SupervisorHost({ spareIdleMs: 300 });
    await h.run({ code: "0", cwd, timeoutMs: 10_000 });
    assert.ok(await readySpare(h));
    assert.ok(await waitUntil(() => liveGroups(h.id, /^spare:/).length === 1), "one process left: the spare");
    assert.ok(await waitUntil(() => spareIds(h).length === 0, 3000), "the spare retired");
    assert.ok(await waitUntil(() => liveGroups(h.id).length === 0, 3000), "its process is gone");
    await h.run({ code: "0", cwd, timeoutMs: 10_000 });
    assert.ok(await readySpare(h));
    const [pgid] = liveGroups(h.id, /^spare:/);
    await h.shutdown();
    assert.ok(await waitUntil(() => !pidAlive(pgid)), "shutdown stopped the spare");
  });

  test("two hosts in one process never take each other's spare (their spares have the same ids)", async () => {
    // Each host's spares are numbered from 1; a run hands over `spare:<n>` of its own host only. The hosts differ in
    // the environment their runners start with, so a run on another host's process would print the other mark.
    const hosts = ["a", "b"].map(
      (mark) => new SupervisorHost({ env: () => ({ ...process.env, PCS_SPARE_MARK: mark }) }),
    );
    try {
      const code = "import os\nprint(os.environ.get('PCS_SPARE_MARK'))";
      const seen: string[][] = [[], []];
      for (let round = 0; round < 12; round++) {
        const outs = await Promise.all(hosts.map((h) => h.run({ code, cwd, timeoutMs: 10_000 })));
        outs.forEach((r, i) => seen[i].push(r.stdout.trim()));
        await Promise.all(hosts.map((h) => readySpare(h)));
      }
      assert.deepEqual(seen, [Array(12).fill("a"), Array(12).fill("b")]);
      const ids = hosts.map((h) => spareIds(h));
      assert.ok(
        ids[0].some((id) => ids[1].includes(id)),
        `the hosts' spares share ids: ${JSON.stringify(ids)}`,
      );
    } finally {
      await Promise.all(hosts.map((h) => h.shutdown()));
    }
  });
});
