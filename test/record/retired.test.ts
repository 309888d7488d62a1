// Retired context fields (record/retired.ts): a log recorded while the supervisor still kept a copy of each session's
// busy run replays identical on today's machines, and any other difference in the same records still diverges.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { parseLog, replayRecords } from "../../record/replay.ts";
import { canonical, type TraceRecord } from "../../record/trace.ts";
import { withoutRetired } from "../../record/retired.ts";
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

describe("withoutRetired", () => {
  test("the field leaves every session entry, and a snapshot whose only change was the field shows none", () => {
    const out = withoutRetired(
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
    const [t] = withoutRetired(traced([other]));
    assert.deepEqual(t!.record, other);
    const [u] = withoutRetired(traced([snap({ sessions: { s: { busyRunId: "r1" } } })]));
    assert.equal(u!.key, canonical(snap({ sessions: { s: {} } })));
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
