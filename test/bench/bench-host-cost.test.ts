// bench/host-cost.ts's measurement functions with tiny batches, so the bench keeps working as the host changes: every
// case makes the call it names on the scripted process port (bench/scripted-ops.ts) and gets the answer it checks
// for, the round and its summary have every figure, and the peers' manifest check of bench/pi.ts --peer refuses
// what is not a Pi package. Nothing here is timed.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import {
  benchHost,
  CASE_LABELS,
  floorOnce,
  hostCases,
  hostCostRound,
  measure,
  measureFloor,
  summarize,
  type BenchHost,
  type CaseKey,
} from "../../bench/host-cost.ts";
import { peerManifest } from "../../bench/pi-peers.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const hosts: BenchHost[] = [];
after(async () => {
  for (const b of hosts) await b.close();
});
const open = (recorder = false) => {
  const b = benchHost({ recorder });
  hosts.push(b);
  return b;
};

describe("host-cost bench", () => {
  test("the floor unit runs a 3-state machine through 4 events; its measure counts per unit", () => {
    floorOnce();
    const c = measureFloor(3);
    assert.ok(c.cpuUs >= 0 && c.wallUs > 0);
  });

  test("each case makes its call on the scripted port: runs, nested calls, shells, writes", async () => {
    const b = open();
    const cases = hostCases(b);
    const before = { ...b.counts };
    await cases.sessionRun();
    await cases.sessionRun();
    assert.equal(b.counts.runners - before.runners, 1, "one session runner for two runs");
    assert.equal(b.counts.runs - before.runs, 2);
    await cases.pyCell();
    await cases.evalPyCell();
    assert.equal(b.counts.runners - before.runners, 2, "python and eval share the notebook session");
    await cases.jsCell();
    assert.equal(b.counts.runners - before.runners, 3, "the js cell has its own runtime");
    const r = await cases.nestedRun();
    assert.equal(r.outcome.nestedCalls?.length, b.counts.toolCalls);
    assert.ok(b.counts.toolCalls > 0);
    await cases.execTrue();
    await cases.writeEcho();
    await cases.writeEcho();
    assert.equal(b.counts.shells - before.shells, 2, "`true`, then one `cat` for both writes");
    assert.equal(b.counts.writes - before.writes, 2);
    assert.equal(b.host.stats().activeRuns, 0);
  });

  test("measure awaits every call and reports per call", async () => {
    let calls = 0;
    const c = await measure(4, async () => {
      calls++;
      await new Promise((r) => setImmediate(r));
    });
    assert.equal(calls, 4);
    assert.ok(c.wallUs > 0 && c.cpuUs >= 0);
  });

  test("a round has every case and the floor; the summary a ratio per case (host alone and with the event log)", async () => {
    for (const recorder of [false, true]) {
      const b = open(recorder);
      const cases = hostCases(b);
      const rounds = [await hostCostRound(b, cases, 2), await hostCostRound(b, cases, 2)];
      for (const r of rounds) {
        assert.ok(r.floor.cpuUs > 0, "the floor takes some CPU");
        for (const key of Object.keys(CASE_LABELS) as CaseKey[]) {
          assert.ok(Number.isFinite(r.cases[key].cpuUs), `${key}: cpu`);
          assert.ok(Number.isFinite(r.cases[key].wallUs), `${key}: wall`);
        }
      }
      const s = summarize(rounds);
      for (const key of Object.keys(CASE_LABELS) as CaseKey[]) {
        assert.equal(s[key].label, CASE_LABELS[key]);
        assert.ok(s[key].ratio.min <= s[key].ratio.p50 && s[key].ratio.p50 <= s[key].ratio.max, key);
      }
    }
  });

  test("a bad case input is refused: the scripted shell runs only what it scripts", async () => {
    const b = open();
    const r = await b.host.exec.start({
      command: "ls",
      cwd: b.cwd,
      tty: false,
      cols: 80,
      rows: 24,
      yieldMs: 1000,
      onExit: "none",
      callId: "ls",
    });
    // The port refuses it; the shell session reports that it could not start rather than waiting out its window.
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.value.running, false);
    assert.equal(r.value.end?.end, "failed");
    assert.match(String(r.value.end?.failure), /only "true" and "cat" are scripted, not "ls"/);
  });
});

describe("--peer manifest", () => {
  const dir = tempDir("pcs-peer-");
  test("a directory without package.json is refused", () => {
    assert.throws(() => peerManifest(join(dir, "missing")), /no readable package.json/);
  });
  test("a package without a pi manifest is refused", () => {
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "not-pi", version: "1.0.0" }));
    assert.throws(() => peerManifest(dir), /no "pi": \{"extensions": \[\.\.\.\]\} manifest/);
  });
  test("a Pi package gives its name and version", () => {
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({ name: "a-peer", version: "0.3.1", pi: { extensions: ["./index.ts"] } }),
    );
    assert.deepEqual(peerManifest(dir), { name: "a-peer", version: "0.3.1" });
  });
});
