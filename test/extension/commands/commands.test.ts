// The commands, the footer status and the /tree widget through a real Pi session bound to a scripted UI context
// (a plain object with every ExtensionUIContext method, in rpc mode): what the user is shown, and that the
// commands act on real sessions without going through the model.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";
import { scriptedUI, type ScriptedUI } from "../../helpers/scripted-ui.ts";

let pi: PiHarness;
let ui: ScriptedUI;
const lastNotice = () => ui.notices.at(-1)?.text ?? "";
const command = async (text: string) => {
  const before = ui.notices.length;
  await pi.session.prompt(text);
  assert.ok(ui.notices.length > before, `${text} showed something`);
  return lastNotice();
};

before(async () => {
  ui = scriptedUI();
  pi = await startPi({ uiContext: ui.ui });
});
after(async () => {
  await pi.dispose();
});

describe("/code-status", () => {
  test("with no session: the interpreter, settings with their sources, no warnings", async () => {
    const text = await command("/code-status");
    assert.match(text, /^Python 3\.\d+\.\d+: \/\S+\n  from /);
    assert.match(text, /Live sessions: none/);
    assert.match(text, /Settings \(value, source\):\n  defaultTimeout +60 +default/);
    assert.match(text, /maxTimeout +3600 +default/);
    assert.match(text, /venvDiscovery\.dirNames +\[".venv","venv"\] +default/);
    assert.match(text, /Warnings: none/);
    assert.equal(ui.statuses.get("code-execution"), undefined, "no footer status without sessions");
  });

  test("project settings show their file; malformed values show as warnings", async () => {
    const file = join(pi.cwd, ".pi", "pi-code-execution", "settings.json");
    mkdirSync(join(pi.cwd, ".pi", "pi-code-execution"), { recursive: true });
    writeFileSync(file, JSON.stringify({ maxTimeout: 900, killGraceMs: "soon" }));
    // The watcher reloads the file; /code-status shows what is in force.
    let text = "";
    await waitUntil(async () => /maxTimeout +900/.test((text = await command("/code-status"))), 15_000);
    assert.match(text, new RegExp(`maxTimeout +900 +project ${file.replace(/[.]/g, "\\.")}`));
    assert.match(text, /Warnings:\n  - project settings \(.*\): killGraceMs must be an integer/);
  });
});

describe("/code-status names every path it uses", () => {
  const line = (text: string, label: string) => {
    const files = text.slice(text.indexOf("\nFiles:\n"));
    const found = files.split("\n").find((l) => l.trimStart().startsWith(`${label}  `));
    assert.ok(found, `a "${label}" line in:\n${text}`);
    return found.trim().slice(label.length).trim();
  };

  test("journal, event logs, settings files (and whether each exists), saved scripts and outputs, environments", async () => {
    const agent = pi.agentDir;
    const global = join(agent, "pi-code-execution", "settings.json");
    const project = join(pi.cwd, ".pi", "pi-code-execution", "settings.json");
    rmSync(project, { force: true });
    let text = await command("/code-status");
    assert.match(text, /\nFiles:\n/);
    assert.equal(line(text, "journal"), process.env.PI_CODE_EXECUTION_JOURNAL);
    assert.equal(line(text, "global settings"), `${global} (absent)`);
    assert.equal(line(text, "project settings"), `${project} (absent)`);
    assert.equal(line(text, "saved scripts"), join(agent, "code-execution"));
    assert.equal(line(text, "saved outputs"), join(agent, "code-execution-output"));
    assert.equal(line(text, "dependency environments"), join(agent, "pi-code-execution", "envs"));
    assert.equal(line(text, "shell session logs"), join(agent, "pi-code-supervisor", "exec-logs"));
    assert.match(line(text, "session packages"), /^\/\S+\/pi-code-execution-\d+ \(a folder in it per Pi session/);

    // Once the supervisor runs, this Pi session's event log is named too.
    await pi.callTools([{ code: "1" }]);
    mkdirSync(dirname(global), { recursive: true });
    writeFileSync(global, "{}");
    writeFileSync(project, "{}");
    text = await command("/code-status");
    const logs = join(agent, "pi-code-supervisor", "logs");
    const events = line(text, "event logs");
    assert.ok(events.startsWith(`${logs} (this session: ${logs}/`), events);
    assert.ok(existsSync(events.slice(`${logs} (this session: `.length, -1)), "the named log exists");
    assert.equal(line(text, "global settings"), `${global} (exists)`);
    assert.equal(line(text, "project settings"), `${project} (exists)`);
    assert.match(line(text, "session packages"), /^\/\S+\/pi-code-execution-\d+\/host-[\w-]+$/);
    rmSync(global);
    rmSync(project);
  });
});

describe("sessions: footer status, /code-status, /code-restart, /code-sessions, the /tree widget", () => {
  test("the footer counts live sessions and says which is busy", async () => {
    await pi.callTools([
      // Each run outlasts the footer's put-off redraw (lib/after-results.ts), so its `busy` shows on a loaded machine
      // too: a run quicker than that may go from started to ended in one redraw.
      { code: "import time\ntime.sleep(0.3)\nx = 1", session: "alpha" },
      { code: "import time\ntime.sleep(0.3)\ny = 2", session: "beta" },
    ]);
    // Each runtime is named by its language and surface (a JavaScript runtime is never counted as Python).
    assert.equal(ui.statuses.get("code-execution"), "2 sessions: 2 Python (code_execution) · idle");
    assert.ok(
      ui.statusHistory.includes("1 session: Python (code_execution) · busy: alpha"),
      ui.statusHistory.join(" | "),
    );
    assert.ok(
      ui.statusHistory.includes("2 sessions: 2 Python (code_execution) · busy: beta"),
      ui.statusHistory.join(" | "),
    );
  });

  test("/code-status lists each live session with state, pid, cwd, age and last run", async () => {
    const text = await command("/code-status");
    assert.match(text, /Live sessions \(2\):/);
    assert.match(
      text,
      /  alpha +idle +pid \d+ +Python 3\.\d+\.\d+ \(code_execution\) +up \d+s +last run \d+s ago: success\n    cwd \//,
    );
    assert.match(text, /  beta +idle +pid \d+/);
  });

  test("/code-restart <name> starts the session again, empty", async () => {
    const [before] = await pi.callTools([{ code: "import os\nos.getpid()", session: "alpha" }]);
    const oldPid = Number(textOf(before).trim());
    const text = await command("/code-restart alpha");
    assert.match(text, /^Session "alpha" restarted: Python 3\.\d+\.\d+, pid \d+; its namespace is empty\.$/);
    assert.ok(await waitUntil(() => !pidAlive(oldPid)), "the old process is gone");
    const [after] = await pi.callTools([{ code: "import os\nprint('x' in globals())\nos.getpid()", session: "alpha" }]);
    assert.match(textOf(after), /^False\n\d+\n$/);
    assert.notEqual(Number(textOf(after).split("\n")[1]), oldPid);
    const missing = await command("/code-restart nosuch");
    assert.match(missing, /No live session "nosuch" \(live: alpha, beta\)/);
  });

  test("after /tree navigation a widget lists the sessions that did not rewind; the next turn clears it", async () => {
    const firstUser = pi.session.sessionManager
      .getEntries()
      .find((e: any) => e.type === "message" && e.message.role === "user");
    assert.ok(firstUser);
    await pi.session.navigateTree(firstUser.id);
    const widget = ui.widgets.get("code-execution-sessions") as string[] | undefined;
    assert.ok(Array.isArray(widget), "widget shown");
    assert.match(widget[0], /Code sessions did not rewind with the conversation/);
    assert.ok(widget.some((l) => /alpha +idle +pid \d+/.test(l)));
    assert.ok(widget.some((l) => /beta +idle/.test(l)));
    await pi.callTools([{ code: "1" }]);
    assert.equal(ui.widgets.get("code-execution-sessions"), undefined, "cleared once the conversation moves on");
  });

  test("/code-sessions picks one session to stop, then all", async () => {
    ui.selects.push((_title, options) => options.find((o) => o.startsWith("beta")));
    const one = await command("/code-sessions");
    assert.match(ui.selectCalls.at(-1)!.title, /^Stop which session\?/);
    assert.ok(
      ui.selectCalls
        .at(-1)!
        .options.slice(0, 2)
        .every((o) => / Python 3\.\d+\.\d+ \(code_execution\) /.test(o)),
      ui.selectCalls.at(-1)!.options.join("\n"),
    );
    assert.deepEqual(
      ui.selectCalls.at(-1)!.options.map((o) => o.split(" ")[0]),
      ["alpha", "beta", "all"],
    );
    assert.match(one, /^Stopped session "beta": its state is gone/);
    assert.equal(ui.statuses.get("code-execution"), "1 session: Python (code_execution) · idle");
    await pi.callTools([{ code: "z = 3", session: "gamma" }]);
    ui.selects.push((_title, options) => options.find((o) => o.startsWith("all")));
    const all = await command("/code-sessions");
    assert.match(all, /^Stopped sessions "alpha", "gamma": their state is gone/);
    assert.equal(ui.statuses.get("code-execution"), undefined, "the footer clears with the last session");
    const none = await command("/code-sessions");
    assert.equal(none, "No code sessions (Python or JavaScript) are running.");
  });

  test("a cancelled pick changes nothing", async () => {
    await pi.callTools([{ code: "keep = 1", session: "delta" }]);
    ui.selects.push(() => undefined);
    const text = await command("/code-sessions");
    assert.equal(text, "Nothing was changed.");
    const [still] = await pi.callTools([{ code: "keep", session: "delta" }]);
    assert.equal(textOf(still), "1\n");
  });
});
