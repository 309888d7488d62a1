// The extension loaded into a real Pi agent session, driven by a scripted model: what the model sees and the
// details the user sees.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";

let pi: PiHarness;
before(async () => {
  pi = await startPi();
});
after(async () => {
  await pi.dispose();
});

describe("code_execution in a Pi session", () => {
  test("is registered with its guidelines", () => {
    assert.ok(pi.session.getActiveToolNames().includes("code_execution"));
  });

  test("a fresh run: output then the final value; details describe the run", async () => {
    const [r] = await pi.callTools([{ code: "print('hello')\n6 * 7" }]);
    assert.equal(r.isError, false);
    assert.equal(textOf(r), "hello\n42\n");
    assert.equal(r.details.status, "success");
    assert.equal(r.details.exitCode, 0);
    assert.equal(r.details.displayedValue, true);
    assert.equal(r.details.stdoutBytes, 9);
    assert.equal(r.details.stderrBytes, 0);
    assert.equal(r.details.stdoutTruncated, false);
    assert.equal(typeof r.details.durationMs, "number");
    assert.equal(r.details.session, undefined);
  });

  test("a named session keeps state; the model is told when it starts", async () => {
    const [a, b] = await pi.callTools([
      { code: "import math\nradius = 2", session: "geo" },
      { code: "round(math.pi * radius ** 2, 3)", session: "geo" },
    ]);
    assert.match(textOf(a), /\[session "geo" started \(Python 3\.\d+\.\d+\)\]/);
    assert.deepEqual(a.details.session, { name: "geo", ordinal: 1, incarnation: 1, isLost: false, state: "started" });
    assert.equal(textOf(b), "12.566\n");
    // The run's ordinal within the session process (seed-compatible), and which process it is.
    assert.deepEqual(b.details.session, { name: "geo", ordinal: 2, incarnation: 1, isLost: false, state: "continued" });
  });

  test("errors are tool errors that keep output and details", async () => {
    const [r] = await pi.callTools([{ code: "print('partial')\nraise ValueError('bad value')" }]);
    assert.equal(r.isError, true);
    assert.equal(r.details.status, "runtime_error");
    assert.match(
      textOf(r),
      /^partial\n\[stderr\]\nTraceback \(most recent call last\):\n  File "script\.py", line 2, in <module>/,
    );
    assert.match(textOf(r), /ValueError: bad value/);
  });

  test("timeout keeps the session and says so; a swallowed interrupt loses it and says so", async () => {
    const [set, slow, kept, stubborn, after] = await pi.callTools([
      { code: "keep = 'me'", session: "t" },
      { code: "import time\ntime.sleep(60)", session: "t", timeout: 1 },
      { code: "keep", session: "t" },
      {
        code: "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        pass",
        session: "t",
        timeout: 1,
      },
      { code: "'keep' in globals()", session: "t" },
    ]);
    assert.equal(set.isError, false);
    assert.equal(slow.isError, true);
    assert.equal(slow.details.status, "timeout");
    assert.match(textOf(slow), /timed out after 1 s: KeyboardInterrupt was raised/);
    assert.match(textOf(slow), /\[session "t" kept its state\]/);
    assert.equal(textOf(kept), "me\n");
    assert.equal(stubborn.details.status, "timeout");
    assert.equal(stubborn.details.session.isLost, true);
    assert.match(textOf(stubborn), /session "t" lost its state/);
    assert.doesNotMatch(textOf(stubborn), /kept its state/);
    assert.match(textOf(after), /^False\n\[session "t" started anew/);
    assert.equal(stubborn.details.session.ordinal, 4);
    assert.equal(stubborn.details.session.incarnation, 1);
    // A lost session's new process counts its runs from 1 again.
    assert.equal(after.details.session.ordinal, 1);
    assert.equal(after.details.session.incarnation, 2);
  });

  test("bad parameters get a validation error naming the parameter", async () => {
    const [badName, badTimeout, resetAlone] = await pi.callTools([
      { code: "1", session: "no/slash" },
      { code: "1", timeout: 0 },
      { code: "1", reset: true },
    ]);
    for (const r of [badName, badTimeout, resetAlone]) assert.equal(r.isError, true);
    assert.match(textOf(badName), /session/);
    assert.match(textOf(badTimeout), /timeout/);
    assert.match(textOf(resetAlone), /reset/);
  });

  test("sibling calls in one batch run one after another", async () => {
    const results = await pi.callTools(
      [
        { code: "import time\nt0 = time.time()\ntime.sleep(0.3)\nt0", session: "seq" },
        { code: "import time\ntime.time() - t0 >= 0.3", session: "seq" },
      ],
      { batch: true },
    );
    assert.equal(results.length, 2);
    assert.equal(textOf(results[1]), "True\n");
  });

  test("live updates stream a preview with status running and the script's sourceId from the first update", async () => {
    const before = pi.events.length;
    const [r] = await pi.callTools([
      { code: "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.15)" },
    ]);
    const updates = pi.events.slice(before).filter((e) => e.type === "tool_execution_update");
    assert.ok(updates.length >= 1, "at least one update");
    assert.match(r.details.sourceId, /^[0-9a-f]{12}$/);
    for (const u of updates)
      assert.deepEqual(u.partialResult.details, { status: "running", sourceId: r.details.sourceId });
    assert.ok(updates.some((u) => /tick 0/.test(u.partialResult.content[0].text)));
    // A session run's updates say which session, too.
    const mark = pi.events.length;
    const [s] = await pi.callTools([{ code: "import time\nprint('s', flush=True)\ntime.sleep(0.3)", session: "live" }]);
    const sessionUpdates = pi.events.slice(mark).filter((e) => e.type === "tool_execution_update");
    assert.ok(sessionUpdates.length >= 1);
    for (const u of sessionUpdates)
      assert.deepEqual(u.partialResult.details, { status: "running", sourceId: s.details.sourceId, session: "live" });
  });

  test("the live preview never starts or ends inside a UTF-8 character and stays within 20 KiB", async () => {
    // 2-byte characters then one ASCII byte: the newest-bytes window starts on a continuation byte.
    const cases = [
      "import sys, time\nsys.stdout.write('é' * 3000 + 'x'); sys.stdout.flush()\ntime.sleep(0.4)",
      "import sys, time\nsys.stdout.write('€' * 3000 + 'xy'); sys.stdout.flush()\ntime.sleep(0.4)",
      "import sys, time\nsys.stdout.write('😀' * 3000 + 'xyz'); sys.stdout.flush()\ntime.sleep(0.4)",
      // An incomplete character at the end is held back until it is complete.
      "import os, time\nos.write(1, 'ab😀'.encode()[:-2])\ntime.sleep(0.4)\nos.write(1, '😀'.encode()[2:])\ntime.sleep(0.4)",
    ];
    for (const code of cases) {
      const before = pi.events.length;
      const [r] = await pi.callTools([{ code }]);
      assert.equal(r.isError, false, textOf(r));
      const texts = pi.events
        .slice(before)
        .filter((e) => e.type === "tool_execution_update")
        .map((e) => e.partialResult.content[0].text as string);
      assert.ok(texts.length >= 1, code);
      for (const t of texts) {
        assert.ok(
          !t.includes("\ufffd"),
          `a replacement character in the preview of ${JSON.stringify(code)}: ${t.slice(0, 20)}`,
        );
        assert.ok(Buffer.byteLength(t) <= 20 * 1024);
      }
    }
    // Invalid bytes on both channels are replaced (3 bytes each): the preview still stays within 20 KiB.
    const before = pi.events.length;
    await pi.callTools([
      { code: "import os, time\nos.write(1, b'\\xff' * 30000)\nos.write(2, b'\\xfe' * 30000)\ntime.sleep(0.4)" },
    ]);
    const texts = pi.events
      .slice(before)
      .filter((e) => e.type === "tool_execution_update")
      .map((e) => e.partialResult.content[0].text as string);
    assert.ok(texts.some((t) => t.includes("[stderr]")));
    for (const t of texts) assert.ok(Buffer.byteLength(t) <= 20 * 1024, `${Buffer.byteLength(t)} bytes`);
  });

  test("a PEP 723 block with invalid TOML is a setup_error with hint pep723_syntax and the parser's message", async () => {
    const blocks: [string, RegExp][] = [
      ["a = 01", /leading zero/],
      ["a = 1__000", /underscore/],
      ["a = 0x_", /underscore/],
      ['a = "x\u0007y"', /control characters/],
      ["[t]\n# x = 1\n# [t]", /redefine/],
      ["d = 2023-02-30", /impossible date 2023-02-30/],
      ["n = 99999999999999999999", /does not fit in 64 bits/],
    ];
    const results = await pi.callTools(
      blocks.map(([toml]) => ({ code: `# /// script\n# ${toml}\n# ///\nprint('ran')` })),
    );
    for (const [i, r] of results.entries()) {
      const [toml, why] = blocks[i];
      assert.equal(r.isError, true, toml);
      assert.equal(r.details.status, "setup_error", toml);
      assert.deepEqual(
        r.details.hints.map((h: { id: string }) => h.id),
        ["pep723_syntax"],
        toml,
      );
      assert.match(
        textOf(r),
        /\[setup error: invalid PEP 723 metadata: the `# \/\/\/ script` block is not valid TOML: /,
      );
      assert.match(textOf(r), why, toml);
      assert.doesNotMatch(textOf(r), /^ran/m, "the code did not run");
    }
  });

  test("final details always list nestedCalls (empty when the code called no tool)", async () => {
    const [fresh, session, failed, refused] = await pi.callTools([
      { code: "1 + 1" },
      { code: "x = 1", session: "nc" },
      { code: "raise SystemExit(3)" },
      { code: "# /// script\n# dependencies = [\n# ///\nprint(1)" },
    ]);
    for (const r of [fresh, session, failed, refused]) assert.deepEqual(r.details.nestedCalls, [], textOf(r));
    assert.equal(refused.details.status, "setup_error");
  });

  test("session_shutdown ends every Python process", async () => {
    const other = await startPi();
    const [r] = await other.callTools([
      { code: "import os, subprocess\nsubprocess.Popen(['sleep', '1000'])\nos.getpid()", session: "bye" },
    ]);
    const pid = Number(textOf(r).split("\n")[0]);
    assert.ok(pidAlive(pid));
    await other.dispose();
    assert.ok(await waitUntil(() => !pidAlive(pid)), "session process ended with Pi");
  });
});
