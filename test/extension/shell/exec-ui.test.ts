// What the user sees of shell sessions in Pi's terminal: the footer while processes are alive (`unified-exec: …`, as
// pi-unified-exec words it), the widget after /tree, /unified-exec-sessions (and /exec-sessions) stopping one or all
// without the model, the warning near the 60-session mark and each eviction, and the tools setting in /code-status.
// The five tools' renderers are exec-render.test.ts.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, type PiHarness, type ToolResultMessage } from "../../helpers/pi-session.ts";
import { livePids } from "../../helpers/exec-pi.ts";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";
import { scriptedUI, type ScriptedUI } from "../../helpers/scripted-ui.ts";

let pi: PiHarness;
let ui: ScriptedUI;

before(async () => {
  process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,exec,bogus,python";
  ui = scriptedUI();
  pi = await startPi({ uiContext: ui.ui });
});
after(async () => {
  await pi.dispose();
  delete process.env.PI_CODE_EXECUTION_TOOLS;
});

async function call(name: string, args: Record<string, unknown>): Promise<ToolResultMessage> {
  const before = pi.toolResults().length;
  pi.faux.setResponses([
    fauxAssistantMessage([fauxToolCall(name, args as never)], { stopReason: "toolUse" }),
    fauxAssistantMessage("done"),
  ]);
  await pi.session.prompt("go");
  return pi.toolResults()[before];
}

/** The extension's one footer item (extension/footer.ts), and its shells part. */
const footer = () => ui.statuses.get("code-execution");
const status = () =>
  footer()
    ?.split(" │ ")
    .find((p) => p.startsWith("unified-exec: "));

describe("footer, /tree widget, /unified-exec-sessions", () => {
  test("the footer counts running sessions and armed wakes, and clears when none is left", async () => {
    assert.equal(status(), undefined);
    const a = await call("exec_command", { cmd: "sleep 30", yield_time_ms: 250, on_exit: "wake" });
    assert.equal(status(), "unified-exec: 1 session running · 1 [wake]");
    const b = await call("exec_command", { cmd: "sleep 30", yield_time_ms: 250 });
    assert.equal(status(), "unified-exec: 2 sessions running · 1 [wake]");
    await call("kill_session", { session_id: b.details.session_id });
    assert.equal(status(), "unified-exec: 1 session running · 1 [wake]");
    await call("kill_session", { session_id: a.details.session_id });
    assert.equal(status(), undefined);
  });

  test("the footer's parts are separated: code sessions named by runtime, then shells", async () => {
    const shell = await call("exec_command", { cmd: "sleep 30", yield_time_ms: 250 });
    const code = await call("code_execution", { code: "x = 1", session: "footer" });
    assert.equal(code.isError, false);
    const notebook = await call("python", { cells: [{ code: "y = 2" }] });
    assert.equal(notebook.isError, false);
    assert.equal(
      footer(),
      "2 sessions: 1 Python (code_execution), 1 Python (python/eval notebook) · idle │ unified-exec: 1 session running",
    );
    await pi.session.prompt("/code-sessions all");
    await call("kill_session", { session_id: shell.details.session_id });
    assert.equal(footer(), undefined, "nothing left: the item is gone");
  });

  test("a background exit refreshes the footer at once", async () => {
    // It exits when the test says so, after the call (`sleep 0.4` could end inside a loaded window).
    const go = join(pi.cwd, "background-exit");
    await call("exec_command", { cmd: `while [ ! -e ${go} ]; do sleep 0.02; done`, yield_time_ms: 250 });
    assert.equal(status(), "unified-exec: 1 session running");
    writeFileSync(go, "");
    assert.ok(await waitUntil(() => status() === undefined, 3000));
  });

  test("after /tree a widget lists the processes that did not rewind", async () => {
    const s = await call("exec_command", { cmd: "sleep 30", yield_time_ms: 250, on_exit: "wake" });
    const first = (pi.session.sessionManager.getEntries() as any[]).find(
      (e) => e.type === "message" && e.message.role === "user",
    );
    await pi.session.navigateTree(first.id);
    const widget = ui.widgets.get("exec-sessions-tree") as string[];
    assert.ok(Array.isArray(widget), "widget shown");
    assert.match(widget[0], /^unified-exec: 1 session still running/);
    assert.match(widget[1], new RegExp(`#${s.details.session_id} \\d+s \\[wake\\] sleep 30 \\(`));
    await call("list_sessions", {});
    assert.equal(ui.widgets.get("exec-sessions-tree"), undefined, "cleared when the conversation moves on");
  });

  test("/unified-exec-sessions: pick one to kill; /exec-sessions `all` kills the rest", async () => {
    const extra = await call("exec_command", { cmd: "sleep 30", yield_time_ms: 250 });
    const [extraPid] = await livePids(pi, [extra.details.session_id]);
    const live = () => (pi.session.messages.length, status());
    assert.equal(live(), "unified-exec: 2 sessions running · 1 [wake]");
    ui.selects.push((_title, options) => options.find((o) => o.startsWith(`#${extra.details.session_id} `)));
    await pi.session.prompt("/unified-exec-sessions");
    const picked = ui.selectCalls.at(-1)!;
    assert.equal(picked.title, "unified-exec: 2 live sessions — select to kill (Esc to cancel)");
    assert.equal(picked.options.at(-1), "Kill all 2 sessions");
    assert.match(
      picked.options.find((o) => !o.startsWith(`#${extra.details.session_id} `))!,
      /^#\d+ \d+s \[wake\] sleep 30/,
    );
    assert.equal(ui.notices.at(-1)!.text, "unified-exec: killed 1 session");
    assert.ok(!pidAlive(extraPid));
    assert.equal(status(), "unified-exec: 1 session running · 1 [wake]");
    await pi.session.prompt("/exec-sessions all");
    assert.equal(ui.notices.at(-1)!.text, "unified-exec: killed 1 session");
    assert.equal(status(), undefined);
    await pi.session.prompt("/unified-exec-sessions");
    assert.equal(ui.notices.at(-1)!.text, "unified-exec: no live sessions");
    await pi.session.prompt("/exec-sessions");
    assert.equal(ui.notices.at(-1)!.text, "unified-exec: no live sessions");
  });

  test("near the cap: a warning from 60 open sessions on, and each LRU eviction said", async () => {
    const notices = () => ui.notices.filter((n) => n.text.startsWith("unified-exec:")).map((n) => n.text);
    const before = notices().length;
    const started: ToolResultMessage[] = [];
    const batch = async (n: number) => {
      const from = pi.toolResults().length;
      pi.faux.setResponses([
        fauxAssistantMessage(
          Array.from({ length: n }, () =>
            fauxToolCall("exec_command", { cmd: "sleep 60", yield_time_ms: 250 } as never),
          ),
          { stopReason: "toolUse" },
        ),
        fauxAssistantMessage("done"),
      ]);
      await pi.session.prompt("go");
      started.push(...pi.toolResults().slice(from));
    };
    await batch(59);
    assert.ok(started.every((r) => r.details.running));
    assert.deepEqual(notices().slice(before), [], "59 open: no warning yet");
    await batch(2);
    assert.deepEqual(notices().slice(before), [
      "unified-exec: 60/64 sessions open",
      "unified-exec: 61/64 sessions open",
    ]);
    assert.equal(ui.notices.at(-1)!.level, "warning");
    // The oldest is the one to evict once it runs (one still starting never is); its pid, to see it stopped.
    const [oldestPid] = await livePids(pi, [started[0].details.session_id]);
    await batch(4);
    const evicted = notices()
      .slice(before)
      .filter((t) => t.includes("evicted"));
    assert.deepEqual(evicted, [`unified-exec: evicted session ${started[0].details.session_id} (LRU, over cap 64)`]);
    assert.ok(await waitUntil(() => !pidAlive(oldestPid), 5000), "the evicted process is stopped");
    await pi.session.prompt("/unified-exec-sessions all");
    assert.equal(notices().at(-1), "unified-exec: killed 64 sessions");
    assert.equal(status(), undefined);
  });

  test("/code-status shows the tools setting and warns about unknown surfaces", async () => {
    await pi.session.prompt("/code-status");
    const text = ui.notices.at(-1)!.text;
    assert.match(text, /tools +\["code_execution","exec","bogus","python"\] +env PI_CODE_EXECUTION_TOOLS/);
    assert.match(
      text,
      /PI_CODE_EXECUTION_TOOLS: tools: unknown surface "bogus" is ignored \(known: code_execution, python, eval, exec\)/,
    );
    // python is a surface since issue 14: it is listed as active, not warned about.
    assert.match(text, /^Tool surfaces: code_execution, exec, python \(env PI_CODE_EXECUTION_TOOLS\)/m);
    assert.doesNotMatch(text, /"python" is not available/);
    assert.match(text, /execLogs\.perLogBytes +67108864 +default/);
  });
});
