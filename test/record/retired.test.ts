// What replay reads of older logs (record/retired.ts): a log recorded while the supervisor still kept a copy of each
// session's busy run, while shell sessions' own events were named `session.*`, while their stop after SIGKILL had a
// 1 s clock (`confirmMs`), or while the spare runners were the supervisor's own children, replays identical on
// today's machines, and any other difference in the same records
// still diverges.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { parseLog, replayRecords } from "../../record/replay.ts";
import { canonical, type TraceRecord } from "../../record/trace.ts";
import { asRecordedToday, checkpointWithoutRetired } from "../../record/retired.ts";
import { FIXTURE_DIR } from "../../scripts/record-fixtures.ts";

/** Logs committed before the supervisor's `busyRunId` was retired (2026-12-03). */
const OLDER = ["before-direct/js-session.jsonl", "v2/js-session.jsonl", "before-direct/interrupt-keeps-state.jsonl"];
const replayText = (text: string) => replayRecords(parseLog(text).lines);

const snap = (delta: Record<string, unknown>, id = "supervisor"): TraceRecord => ({
  k: "snap",
  id,
  cause: "e",
  status: "active",
  value: "serving",
  delta,
});
const traced = (records: TraceRecord[]) => records.map((record) => ({ record, key: canonical(record) }));

describe("asRecordedToday", () => {
  test("the field leaves every session entry, and a snapshot whose only change was the field shows none", () => {
    const out = asRecordedToday(
      traced([
        snap({ sessions: { s: { incarnation: 1, status: "alive", cwd: "/w", busyRunId: "r1" } }, queue: [] }),
        snap({ sessions: { s: { incarnation: 1, status: "alive", cwd: "/w" } }, active: {} }),
        snap({ sessions: { s: { incarnation: 1, status: "alive", cwd: "/w", busyRunId: "r2" } } }),
        snap({ sessions: { s: { incarnation: 1, status: "lost", cwd: "/w" } } }),
      ]),
    ).map((t) => t.record);
    assert.deepEqual(out, [
      snap({ sessions: { s: { incarnation: 1, status: "alive", cwd: "/w" } }, queue: [] }),
      snap({ active: {} }),
      { k: "snap", id: "supervisor", cause: "e", status: "active", value: "serving" },
      snap({ sessions: { s: { incarnation: 1, status: "lost", cwd: "/w" } } }),
    ]);
  });

  test("another actor's field of the same name is not touched, and keys are recomputed for comparison", () => {
    const other = snap({ sessions: { s: { busyRunId: "r1" } } }, "session:s");
    const [t] = asRecordedToday(traced([other]));
    assert.deepEqual(t!.record, other);
    const [u] = asRecordedToday(traced([snap({ sessions: { s: { busyRunId: "r1" } } })]));
    assert.equal(u!.key, canonical(snap({ sessions: { s: {} } })));
  });
});

describe("renamed events", () => {
  test("a shell session's own events read under today's names; a named session's are left as they are", () => {
    const records: TraceRecord[] = [
      { k: "event", to: "exec:2", from: "exec:pool", event: { type: "session.stop", reason: "kill", signal: "TERM" } },
      { k: "event", to: "exec:pool", from: "exec:2", event: { type: "session.held", id: 2 } },
      { k: "snap", id: "exec:pool", cause: "session.running", status: "active", value: "serving" },
      { k: "event", to: "supervisor", event: { type: "session.stop", name: "s" } },
      { k: "snap", id: "supervisor", cause: "session.stop", status: "active", value: "serving" },
    ];
    const out = asRecordedToday(traced(records));
    assert.deepEqual(
      out.map((t) => t.record),
      [
        { k: "event", to: "exec:2", from: "exec:pool", event: { type: "shell.stop", reason: "kill", signal: "TERM" } },
        { k: "event", to: "exec:pool", from: "exec:2", event: { type: "shell.held", id: 2 } },
        { k: "snap", id: "exec:pool", cause: "shell.running", status: "active", value: "serving" },
        records[3],
        records[4],
      ],
    );
    out.forEach((t) => assert.equal(t.key, canonical(t.record)));
  });

  test("the shell fixture, written with the old names, replays identical; an unknown name still diverges", () => {
    const today = readFileSync(join(FIXTURE_DIR, "shell-sessions.jsonl"), "utf8");
    const older = today.replace(/"shell\.(stop|running|held)"/g, '"session.$1"');
    assert.notEqual(older, today, "the fixture has events to rename");
    assert.equal(replayText(older).identical, true, JSON.stringify(replayText(older).divergence));
    const wrong = today.replace(/"shell\.held"/, '"session.holding"');
    const report = replayText(wrong);
    assert.equal(report.identical, false);
    assert.equal(report.divergence?.actor, "exec:pool");
  });
});

describe("older logs", () => {
  for (const file of OLDER) {
    test(`${file}, recorded with the field, replays identical`, () => {
      const text = readFileSync(join(FIXTURE_DIR, file), "utf8");
      assert.match(text, /"busyRunId"/, "the log holds the retired field (else this test shows nothing)");
      const report = replayText(text);
      assert.equal(report.identical, true, JSON.stringify(report.divergence ?? report.error));
    });
  }

  test("the same log with a kept field of a session altered still diverges, at that record", () => {
    const text = readFileSync(join(FIXTURE_DIR, "before-direct/js-session.jsonl"), "utf8");
    const lines = text.split("\n");
    const at = lines.findIndex((l) => l.includes('"busyRunId"') && l.includes('"incarnation":1'));
    assert.ok(at > 0, "a supervisor snapshot with the field");
    lines[at] = lines[at].replace('"incarnation":1', '"incarnation":7');
    const report = replayText(lines.join("\n"));
    assert.equal(report.identical, false);
    assert.equal(report.divergence?.line, at + 1);
    assert.equal(report.divergence?.actor, "supervisor");
  });
});

describe("replaced inputs: the shell limits before shell.group_gone", () => {
  const OLD = join(FIXTURE_DIR, "before-group-gone/shell-sessions.jsonl");

  test("a log recorded with confirmMs replays identical", () => {
    const text = readFileSync(OLD, "utf8");
    assert.match(text, /"confirmMs":1000/, "the log holds the old limit (else this test shows nothing)");
    const report = replayText(text);
    assert.equal(report.identical, true, JSON.stringify(report.divergence ?? report.error));
  });

  test("the same log with a kept limit altered still diverges, at the pool's start", () => {
    const text = readFileSync(OLD, "utf8").replace('"killGraceMs":2000', '"killGraceMs":2500');
    const report = replayText(text);
    assert.equal(report.identical, false);
    assert.equal(report.divergence?.actor, "exec:pool");
  });

  test("a checkpoint's children start with today's limits; other actors' keys of that name are left alone", () => {
    const old = { killGraceMs: 2000, stopGraceMs: 1000, confirmMs: 1000 };
    const today = { killGraceMs: 2000, stopGraceMs: 1000, unkillableMs: 30_000 };
    const persisted = {
      context: { sessions: {} },
      children: {
        "exec:pool": {
          snapshot: { context: { limits: old }, children: { "exec:3": { snapshot: { context: { limits: old } } } } },
        },
        "session:s": { snapshot: { context: { limits: old } } },
      },
    };
    assert.deepEqual(checkpointWithoutRetired(persisted), {
      context: { sessions: {} },
      children: {
        "exec:pool": {
          snapshot: {
            context: { limits: today },
            children: { "exec:3": { snapshot: { context: { limits: today } } } },
          },
        },
        "session:s": { snapshot: { context: { limits: old } } },
      },
    });
  });
});

describe("spare runners moved into the spare pool", () => {
  /** A log recorded while spare runners were the supervisor's children, with its spare:1 ready and claimed. */
  const OLD = "v2/fresh-runs.jsonl";
  const text = () => readFileSync(join(FIXTURE_DIR, OLD), "utf8");

  test("the supervisor's spare fields leave its snapshots whole, and a snapshot that changed only them shows no change", () => {
    const bare = { k: "snap", id: "supervisor", cause: "e", status: "active", value: "serving" } as const;
    const out = asRecordedToday(
      traced([
        { ...bare, context: { queue: [], spares: {}, spareTarget: {}, spareSeq: 0 } },
        snap({ active: { r: null }, spares: { "spare:1": { id: "spare:1", key: "k" } }, spareSeq: 1 }),
        snap({ spares: {}, spareTarget: {} }),
        { ...bare, removed: ["spareSeq", "queue"] },
      ]),
    ).map((t) => t.record);
    assert.deepEqual(out, [
      { ...bare, context: { queue: [] } },
      snap({ active: { r: null } }),
      bare,
      { ...bare, removed: ["queue"] },
    ]);
  });

  test(`${OLD}, whose spares were the supervisor's children, replays identical`, () => {
    assert.match(text(), /"k":"actor","id":"spare:1","parent":"supervisor"/, "spares under the supervisor");
    assert.match(text(), /"type":"spare\.claim"/, "a spare was claimed");
    const report = replayText(text());
    assert.equal(report.identical, true, JSON.stringify(report.divergence ?? report.error));
  });

  test("the same log with a spare's own state altered still diverges, at that spare", () => {
    const ready = '"id":"spare:1","cause":"runner.ready","status":"active","value":"ready"';
    assert.ok(text().includes(ready));
    const report = replayText(text().replace(ready, ready.replace('"value":"ready"', '"value":"warming"')));
    assert.equal(report.identical, false);
    assert.equal(report.divergence?.actor, "spare:1");
  });

  test("the same log with a spare's parent or a claim's sender other than the supervisor still diverges", () => {
    const parent = text().replace('"id":"spare:1","parent":"supervisor"', '"id":"spare:1","parent":"run:x"');
    assert.equal(replayText(parent).identical, false);
    const claim = /("k":"event","to":"spare:1","from":)"supervisor"(,"event":\{"type":"spare\.claim")/;
    assert.match(text(), claim);
    assert.equal(replayText(text().replace(claim, '$1"session:x"$2')).identical, false);
  });
});
