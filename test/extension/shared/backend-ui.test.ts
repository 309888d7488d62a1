// Where a run executed, as Pi's UI shows it, through real Pi sessions: on the sandbox (--sandbox, real bwrap) and on
// a remote host (a loopback sshd), every surface's rendered result (shells too) says `runs on <backend>` and the footer
// names the backend; on the local backend (the control) neither does. The label compared is the one /code-status
// prints for the session's backend.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { initTheme } from "@earendil-works/pi-coding-agent";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "../../helpers/pi-session.ts";
import { callAs } from "../../helpers/notebook.ts";
import { scriptedUI, type ScriptedUI } from "../../helpers/scripted-ui.ts";
import { startSshd, type TestSshd } from "../../helpers/sshd.ts";
import { remoteBackendEnv, savedBackendEnv } from "../../helpers/backend-env.ts";
import { drawnResult } from "../../helpers/drawn.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

const restoreEnv = savedBackendEnv();

before(() => {
  initTheme("dark", false);
  process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,python,eval,exec";
});
after(restoreEnv);

/** A result as Pi draws it, at 120 columns. */
const drawn = (pi: PiHarness, tool: string, r: ToolResultMessage) => drawnResult(pi, tool, r);

/** One call of each surface (code_execution in a session, the python tool, an eval Python cell, a shell), drawn. */
async function drawEach(pi: PiHarness): Promise<Record<string, string>> {
  const [ce, py, ev, sh] = await callAs(pi, [
    ["code_execution", { code: "print('ce ran')", session: "where" }],
    ["python", { cells: [{ code: "print('py ran')" }] }],
    ["eval", { cells: [{ language: "py", code: "print('eval ran')" }] }],
    ["exec_command", { cmd: "echo shell ran", yield_time_ms: 5000 }],
  ]);
  for (const r of [ce, py, ev, sh]) assert.equal(r.isError, false, textOf(r));
  assert.equal(sh.details.running, false, "the shell command ended within its window");
  return {
    code_execution: drawn(pi, "code_execution", ce),
    python: drawn(pi, "python", py),
    eval: drawn(pi, "eval", ev),
    exec_command: drawn(pi, "exec_command", sh),
  };
}

/** The backend label /code-status prints for this session. */
async function backendLabel(pi: PiHarness, ui: ScriptedUI): Promise<string> {
  await pi.session.prompt("/code-status");
  const label = /^Backend: (.+)$/m.exec(ui.notices.at(-1)?.text ?? "")?.[1];
  assert.ok(label, ui.notices.at(-1)?.text);
  return label;
}

const footer = (ui: ScriptedUI) => ui.statuses.get("code-execution") ?? "";

describe("local (the control)", () => {
  test("no result and no footer says where it ran", async () => {
    const ui = scriptedUI();
    const pi = await startPi({ uiContext: ui.ui });
    try {
      const shown = await drawEach(pi);
      assert.equal(await backendLabel(pi, ui), "local");
      for (const [tool, text] of Object.entries(shown)) {
        assert.match(text, /ran/, `${tool}: ${text}`);
        assert.doesNotMatch(text, /runs on/, `${tool}: ${text}`);
      }
      assert.equal(footer(ui), "2 sessions: 1 Python (code_execution), 1 Python (python/eval notebook) · idle");
      // A JavaScript runtime is named as such, in the footer and in the picker (never "Python session").
      const [js] = await callAs(pi, [["eval", { cells: [{ language: "js", code: "1 + 1" }] }]]);
      assert.equal(js.isError, false, textOf(js));
      assert.equal(
        footer(ui),
        "3 sessions: 1 Python (code_execution), 1 Python (python/eval notebook), 1 JavaScript (eval) · idle",
      );
      ui.selects.push(() => undefined);
      await pi.session.prompt("/code-sessions");
      const pick = ui.selectCalls.at(-1)!;
      assert.match(pick.title, /^Stop which session\?/);
      assert.ok(
        pick.options.some((o) => /^js +idle +pid \d+ +JavaScript Node \d+\.\d+\.\d+ \(eval\) /.test(o)),
        pick.options.join("\n"),
      );
      assert.ok(pick.options.some((o) => /^where +idle .* Python 3\.\d+\.\d+ \(code_execution\) /.test(o)));
      assert.doesNotMatch(footer(ui), /runs on/);
    } finally {
      await pi.dispose();
    }
  });
});

describe("sandbox (--sandbox, bwrap)", () => {
  test("each surface's result and the footer say `runs on sandbox …`", async () => {
    const ui = scriptedUI();
    const pi = await startPi({ uiContext: ui.ui, flags: { sandbox: true } });
    try {
      const shown = await drawEach(pi);
      const label = await backendLabel(pi, ui);
      assert.match(label, /^sandbox \(bwrap/);
      for (const [tool, text] of Object.entries(shown)) {
        assert.ok(text.includes(`runs on ${label}`), `${tool}: ${text}`);
      }
      assert.ok(footer(ui).endsWith(` │ runs on ${label}`), footer(ui));
    } finally {
      await pi.dispose();
    }
  });
});

describe("remote (ssh to a loopback sshd)", () => {
  let sshd: TestSshd;
  before(async () => {
    sshd = await startSshd();
  });
  after(async () => {
    await sshd?.stop();
  });

  test("each surface's result and the footer say `runs on remote …`", async () => {
    const remoteDir = tempDir("pcs-backend-ui-");
    const r = sshd.remote({ cwd: remoteDir });
    Object.assign(process.env, remoteBackendEnv(r, remoteDir));
    const ui = scriptedUI();
    const pi = await startPi({ uiContext: ui.ui });
    try {
      const shown = await drawEach(pi);
      const label = await backendLabel(pi, ui);
      assert.match(label, /^remote /);
      for (const [tool, text] of Object.entries(shown)) {
        assert.ok(text.includes(`runs on ${label}`), `${tool}: ${text}`);
      }
      assert.ok(footer(ui).endsWith(` │ runs on ${label}`), footer(ui));
    } finally {
      await pi.dispose();
    }
  });
});
