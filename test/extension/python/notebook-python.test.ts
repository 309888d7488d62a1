// The `python` tool (pi-python compatible) in a real Pi session: cells in order, skipping after a failure, shared
// state with code_execution's notebook session, timeouts with pi-python's escalation, interpreter switching.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { callAs } from "../../helpers/notebook.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

let pi: PiHarness;
before(async () => {
  process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,python";
  pi = await startPi();
});
after(async () => {
  await pi.dispose();
  delete process.env.PI_CODE_EXECUTION_TOOLS;
});

describe("python tool", () => {
  test("registers python next to code_execution", () => {
    const names = pi.session.getActiveToolNames();
    for (const n of ["python", "python_set_interpreter", "code_execution"]) assert.ok(names.includes(n), n);
  });

  test("cells run in order; values as => repr; a failing cell skips the rest; state before the error stays", async () => {
    const [r] = await callAs(pi, [
      [
        "python",
        {
          cells: [
            { code: "x = 20\nprint('hello')", title: "setup" },
            { code: "x * 2 + 2" },
            { code: "x = 99\nraise ValueError('boom')" },
            { code: "print('never')" },
          ],
        },
      ],
    ]);
    const text = textOf(r);
    assert.equal(r.isError, true);
    assert.match(text, /^── cell 1\/4 setup ──\nstdout: hello\n\n── cell 2\/4 ──\n=> 42\n\n── cell 3\/4 ──\nTraceback/);
    assert.match(text, /ValueError: boom\n\n── cell 4\/4 ──\n\[not run\]$/);
    assert.deepEqual(
      r.details.cells.map((c: any) => c.status),
      ["ok", "ok", "error", "not_run"],
    );
    assert.equal(r.details.cells[1].value, "42");
    assert.equal(r.details.cells[0].index, 0);
    assert.equal(r.details.cells[0].title, "setup");
    assert.equal(r.details.session.name, "notebook");
    assert.match(r.details.python.version, /^3\.\d+/);
    const [after] = await callAs(pi, [["python", { cells: [{ code: "x" }] }]]);
    assert.equal(textOf(after), "── cell 1/1 ──\n=> 99");
  });

  test("state is shared with code_execution's notebook session, both ways", async () => {
    const [a, b] = await callAs(pi, [
      ["python", { cells: [{ code: "shared = 'from python'" }] }],
      ["code_execution", { code: "print(shared)\nback = 7", session: "notebook" }],
    ]);
    assert.equal(a.isError, false);
    assert.match(textOf(b), /^from python\n/);
    const [c] = await callAs(pi, [["python", { cells: [{ code: "back * 6" }] }]]);
    assert.equal(textOf(c), "── cell 1/1 ──\n=> 42");
  });

  test("reset gives an empty namespace and says so", async () => {
    const [r] = await callAs(pi, [["python", { reset: true, cells: [{ code: "'x' in globals()" }] }]]);
    assert.equal(textOf(r), "[kernel reset]\n\n── cell 1/1 ──\n=> False");
    assert.equal(r.details.reset, true);
  });

  test("cwd: the call runs there and the directory goes first on sys.path; the next call is back", async () => {
    const { writeFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const dir = tempDir("pcs-nb-cwd-");
    writeFileSync(join(dir, "nbhelper.py"), "VALUE = 'helped'\n");
    const [a, b, bad] = await callAs(pi, [
      [
        "python",
        { cwd: dir, cells: [{ code: "import os, sys, nbhelper\n(os.getcwd() == sys.path[0], nbhelper.VALUE)" }] },
      ],
      ["python", { cells: [{ code: "os.getcwd()" }] }],
      ["python", { cwd: join(dir, "missing"), cells: [{ code: "1" }] }],
    ]);
    assert.equal(textOf(a), "── cell 1/1 ──\n=> (True, 'helped')");
    assert.equal(textOf(b), `── cell 1/1 ──\n=> ${JSON.stringify(pi.cwd).replace(/"/g, "'")}`);
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /is not a directory/);
  });

  test("/python-restart restarts the kernel empty; /python-status is /code-status", async () => {
    await callAs(pi, [["python", { cells: [{ code: "survivor = 1" }] }]]);
    const out: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    // Captured and passed through: the test runner reports on stdout too, and a swallowed report is a lost result.
    process.stdout.write = ((chunk: string, ...rest: never[]) => (
      out.push(String(chunk)),
      write(chunk, ...rest)
    )) as never;
    try {
      await pi.session.prompt("/python-restart");
      await pi.session.prompt("/python-status");
    } finally {
      process.stdout.write = write;
    }
    const text = out.join("");
    assert.match(
      text,
      /The python kernel \(session "notebook"\) restarted: Python 3\.\d+\.\d+, pid \d+; its namespace is empty\./,
    );
    assert.match(text, /Tool surfaces: code_execution, python/);
    assert.match(text, /notebook\s+idle/);
    const [r] = await callAs(pi, [["python", { cells: [{ code: "'survivor' in globals()" }] }]]);
    assert.equal(textOf(r), "── cell 1/1 ──\n=> False");
  });

  test("cells call Pi tools over the bridge; the notebook tools themselves are not exposed to Python", async () => {
    const [r] = await callAs(pi, [
      [
        "python",
        {
          cells: [
            { code: "names = str(available_tools())\n(await bash(command='echo bridged')).splitlines()[0]" },
            { code: "('bash(' in names, 'python(' in names, 'eval(' in names)" },
          ],
        },
      ],
    ]);
    assert.equal(textOf(r), "── cell 1/2 ──\n=> 'bridged'\n\n── cell 2/2 ──\n=> (True, False, False)");
  });
});
