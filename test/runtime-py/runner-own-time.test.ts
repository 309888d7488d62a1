// The Python runner's own time per warm run (issue 26): what runtime-py/runner.py adds around the user's code, from
// timing marks around each round trip of a `pass` run in a session runner, beside the round trip of an echo process
// that speaks the same protocol with no work at all (`started`, then `done`, for each run frame), through the same
// driver and alternating with it, in the same run. Reported, and bounded only against that same-run baseline.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { PYTHON, RunnerDriver } from "../helpers/runner-driver.ts";

// The protocol's least answer to a run: `ready` once, then `started` and `done` per run frame, each its own write,
// as the runner sends them (docs/protocol.md).
const ECHO = String.raw`
import json, os
def frame(obj):
    body = json.dumps(obj).encode()
    os.write(3, len(body).to_bytes(4, "big") + body)
def read(n):
    b = b""
    while len(b) < n:
        c = os.read(3, n - len(b))
        if not c:
            os._exit(0)
        b += c
    return b
frame({"type": "ready", "protocol": 1, "pid": os.getpid()})
while True:
    msg = json.loads(read(int.from_bytes(read(4), "big")))
    if msg["type"] == "shutdown":
        os._exit(0)
    frame({"type": "started", "id": msg["id"]})
    frame({"type": "done", "id": msg["id"], "exitCode": 0, "displayedValue": False, "error": None})
`;

const drivers: RunnerDriver[] = [];
after(async () => {
  await Promise.all(drivers.map((d) => d.close()));
});

/** Microseconds from sending a `pass` run to its `done` (the marks are the driver's, around the whole trip). */
async function roundTrip(d: RunnerDriver, i: number): Promise<number> {
  const t0 = performance.now();
  const r = await d.run("pass", { filename: `script-${i}.py` });
  const us = (performance.now() - t0) * 1000;
  assert.equal(r.done.exitCode, 0);
  return us;
}

const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;

test("the runner's own time per warm run, beside an echo of the protocol in the same run", async (t) => {
  const runner = await RunnerDriver.start({ mode: "session" });
  const echo = await RunnerDriver.start({ command: PYTHON, args: ["-c", ECHO] });
  drivers.push(runner, echo);
  for (let i = 0; i < 50; i++) {
    await roundTrip(runner, i);
    await roundTrip(echo, i);
  }
  const own: number[] = [];
  const runnerUs: number[] = [];
  const echoUs: number[] = [];
  for (let i = 50; i < 550; i++) {
    // Alternating, and in turn first, so that neither side always meets the machine just after the other.
    let r: number, e: number;
    if (i % 2) {
      r = await roundTrip(runner, i);
      e = await roundTrip(echo, i);
    } else {
      e = await roundTrip(echo, i);
      r = await roundTrip(runner, i);
    }
    runnerUs.push(r);
    echoUs.push(e);
    own.push(r - e); // paired: the same moment's load on both
  }
  for (const xs of [own, runnerUs, echoUs]) xs.sort((a, b) => a - b);
  const ownP50 = at(own, 0.5);
  const echoP50 = at(echoUs, 0.5);
  const report =
    `runner p50 ${at(runnerUs, 0.5).toFixed(0)} us, echo p50 ${echoP50.toFixed(0)} us; ` +
    `runner's own time per warm run p50 ${ownP50.toFixed(0)} us (p25-p75 ${at(own, 0.25).toFixed(0)}-` +
    `${at(own, 0.75).toFixed(0)} us; goal 50 us, docs/performance.md)`;
  t.diagnostic(report);
  // Generous: on a quiet machine the own time is below the echo's whole round trip; a loaded one stretches both, and
  // the runner's hand-over to its main thread waits for a free core (twice the echo's was seen under load). What
  // fails here is a gross regression: work per run that costs several whole round trips.
  assert.ok(ownP50 < 4 * echoP50, report);
  assert.equal(runner.stderrText(), "");
});
