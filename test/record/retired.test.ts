// What replay reads of older logs (record/retired.ts): a log recorded while the supervisor still kept a copy of each
// session's busy run, while shell sessions' own events were named `session.*`, while their stop after SIGKILL had a
// 1 s clock (`confirmMs`), while the spare runners were the supervisor's own children, or while the supervisor's
// `serving` had no substates (`idle`, `preparing`), replays identical on today's machines, and any other difference
// in the same records still diverges.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { parseLog, replayRecords } from "../../record/replay.ts";
import { canonical, type TraceRecord } from "../../record/trace.ts";
import { asRecordedToday, checkpointWithoutRetired } from "../../record/retired.ts";
import { FIXTURE_DIR } from "../../scripts/record-fixtures.ts";
import { createActor, fromCallback, type Snapshot } from "xstate";
import { supervisorWith } from "../../machines/system.ts";
import type { RunStartEvent } from "../../machines/events.ts";
import { TEST_LIMITS } from "../helpers/fake-runner.ts";

/** Logs committed before the supervisor's `busyRunId` was retired (2026-12-03). */
const OLDER = ["before-direct/js-session.jsonl", "v2/js-session.jsonl", "before-direct/interrupt-keeps-state.jsonl"];
const replayText = (text: string) => replayRecords(parseLog(text).lines);

/** Today's value: these records show other readings than the supervisor's restated state. */
const IDLE = { serving: "idle" };
const snap = (delta: Record<string, unknown>, id = "supervisor"): TraceRecord => ({
  k: "snap",
  id,
  cause: "e",
  status: "active",
  value: IDLE,
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
      { k: "snap", id: "supervisor", cause: "e", status: "active", value: IDLE },
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
      { k: "snap", id: "supervisor", cause: "session.stop", status: "active", value: IDLE },
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
    const bare = { k: "snap", id: "supervisor", cause: "e", status: "active", value: IDLE } as const;
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

describe("restated states: the supervisor's `serving` before its substates", () => {
  const state = (value: unknown, rest: Partial<Extract<TraceRecord, { k: "snap" }>> = {}, id = "supervisor") =>
    ({ k: "snap", id, cause: "e", status: "active", value, ...rest }) as TraceRecord;
  const request = { type: "run.start", runId: "r1" };

  test("an old `serving` reads as `preparing` while the queue its context holds is not empty, else as `idle`", () => {
    const out = asRecordedToday(
      traced([
        state("serving", { context: { queue: [], sessions: {}, active: {} } }),
        state("serving", { delta: { queue: [request] } }),
        state("serving", { delta: { active: {} } }),
        state("serving", { delta: { queue: [] } }),
        state("serving", { delta: { queue: [request] } }),
        state("stopping", { delta: { queue: [] } }),
        state("serving", { removed: ["queue"] }),
        state("serving", {}, "exec:pool"),
      ]),
    );
    assert.deepEqual(
      out.map((t) => (t.record as { value?: unknown }).value),
      [
        { serving: "idle" },
        { serving: "preparing" },
        { serving: "preparing" },
        { serving: "idle" },
        { serving: "preparing" },
        "stopping",
        { serving: "idle" },
        "serving",
      ],
    );
    out.forEach((t) => assert.equal(t.key, canonical(t.record)));
  });

  test("a value today's machine records is kept as it is", () => {
    const today = state({ serving: "preparing" }, { context: { queue: [] } });
    assert.deepEqual(asRecordedToday(traced([today]))[0]!.record, today);
  });

  /** An older log in which the supervisor prepared requests (a prepare actor and a queue). */
  const OLD = "v2/fresh-runs.jsonl";
  const text = () => readFileSync(join(FIXTURE_DIR, OLD), "utf8");

  test(`${OLD}, recorded with \`serving\` alone, replays identical`, () => {
    assert.match(
      text(),
      /"id":"supervisor","cause":"run\.start","status":"active","value":"serving"[^\n]*"queue":\[\{/,
    );
    assert.doesNotMatch(text(), /"preparing"/);
    const report = replayText(text());
    assert.equal(report.identical, true, JSON.stringify(report.divergence ?? report.error));
  });

  test("the same log with the supervisor's state altered still diverges, at that record", () => {
    const lines = text().split("\n");
    const at = lines.findIndex((l) => l.includes('"id":"supervisor","cause":"run.start"'));
    assert.ok(at > 0);
    lines[at] = lines[at]!.replace('"value":"serving"', '"value":"stopping"');
    const report = replayText(lines.join("\n"));
    assert.equal(report.identical, false);
    assert.equal(report.divergence?.line, at + 1);
    assert.equal(report.divergence?.actor, "supervisor");
  });

  test("a log recorded today with a substate altered still diverges, at that record", () => {
    const today = readFileSync(join(FIXTURE_DIR, "fresh-runs.jsonl"), "utf8");
    const lines = today.split("\n");
    const at = lines.findIndex((l) => l.includes('"id":"supervisor"') && l.includes('"value":{"serving":"preparing"}'));
    assert.ok(at > 0, "the fixture records the supervisor preparing (re-recorded since the substates)");
    lines[at] = lines[at]!.replace('{"serving":"preparing"}', '{"serving":"idle"}');
    const report = replayText(lines.join("\n"));
    assert.equal(report.identical, false);
    assert.equal(report.divergence?.line, at + 1);
    assert.equal(report.divergence?.actor, "supervisor");
  });

  test("an older checkpoint restores the supervisor in the substate its queue says", () => {
    const prepare = fromCallback(() => {}); // a preparation that does not end: the request waits
    const live = createActor(
      supervisorWith(
        fromCallback(() => {}),
        { prepare },
      ),
      { input: { limits: TEST_LIMITS } },
    );
    live.start();
    live.send({ type: "run.start", at: 0, runId: "r1", code: "1", cwd: "/w", timeoutMs: 1000 } as RunStartEvent);
    const persisted = live.getPersistedSnapshot() as unknown as { value: unknown; context: { queue: unknown[] } };
    live.stop();
    assert.deepEqual(persisted.value, { serving: "preparing" });
    const older = { ...persisted, value: "serving" };
    const restore = (snapshot: unknown) => {
      const actor = createActor(
        supervisorWith(
          fromCallback(() => {}),
          { prepare },
        ),
        {
          input: undefined as never,
          snapshot: snapshot as Snapshot<unknown>,
        },
      );
      const value = actor.getSnapshot().value;
      actor.stop();
      return value;
    };
    assert.deepEqual(restore(older), { serving: "idle" }, "as it was recorded, it would restore as idle");
    assert.deepEqual(restore(checkpointWithoutRetired(older)), { serving: "preparing" });
    const empty = { ...older, context: { ...persisted.context, queue: [] }, children: {} };
    assert.deepEqual((checkpointWithoutRetired(empty) as { value: unknown }).value, { serving: "idle" });
    assert.deepEqual((checkpointWithoutRetired(persisted) as { value: unknown }).value, { serving: "preparing" });
  });
});
