// End to end in a real terminal: interactive `pi` (scripts/pi.sh, this extension, a driver extension registering
// the scripted faux model) in tmux. capture-pane must show the rendered run (script, status label, session state,
// output), the footer status, and a command's output (/code-status, which names the --python interpreter).
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, describe, test } from "node:test";
import { pidAlive, waitUntil } from "../helpers/procs.ts";
import { PYTHON, PYTHON_RE, systemPython } from "../helpers/pythons.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const hasTmux = spawnSync("tmux", ["-V"]).status === 0;
const SOCKET = `pcs-test-${process.pid}`;
const SESSION = "pi";
const tmux = (...args: string[]) =>
  execFileSync("tmux", ["-L", SOCKET, "-f", "/dev/null", ...args], { encoding: "utf8" });
const screen = () => tmux("capture-pane", "-p", "-t", SESSION);

async function waitForScreen(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  let last = "";
  const ok = await waitUntil(() => pattern.test((last = screen())), timeoutMs);
  assert.ok(ok, `screen never matched ${pattern}:\n${last}`);
  return last;
}

const DRIVER = `import { fauxAssistantMessage, fauxProvider, fauxToolCall } from "@earendil-works/pi-ai";
export default function (pi: any) {
  const faux = fauxProvider({ provider: "faux" });
  const code = "import sys\\nfor i in range(3):\\n    print('line', i)\\n" + Array.from({ length: 20 }, (_, i) => "v" + i + " = " + i).join("\\n") + "\\nsys.version_info[:2]";
  faux.setResponses([
    fauxAssistantMessage([fauxToolCall("code_execution", { code, session: "demo" })], { stopReason: "toolUse" }),
    fauxAssistantMessage("all done"),
  ]);
  pi.registerProvider(faux.provider);
}
`;

/** The labels under `[Extensions]` in Pi's start-up listing (shown once the extensions are bound). */
async function extensionsListed(): Promise<string[]> {
  const screen = await waitForScreen(/\[Extensions\]\n +\S/);
  return /\[Extensions\]\n +(.+)/.exec(screen)![1].trim().split(/,\s*/).sort();
}

/** Stops the tmux server (a test that failed may have left it) and waits until it is gone. */
async function killServer(): Promise<void> {
  try {
    tmux("kill-server");
  } catch {
    // not running
  }
  await waitUntil(() => spawnSync("tmux", ["-L", SOCKET, "-f", "/dev/null", "list-sessions"]).status !== 0, 5000);
}

describe(
  "interactive pi in tmux",
  { skip: !hasTmux && "tmux is not installed (scripts/setup.sh installs it when run as root)" },
  () => {
    after(() => {
      try {
        tmux("kill-server");
      } catch {
        // already gone
      }
    });

    test("the rendered run, the footer status and /code-status", async () => {
      const dir = tempDir("pcs-tmux-");
      const agent = join(dir, "agent");
      const cwd = join(dir, "cwd");
      mkdirSync(agent);
      mkdirSync(cwd);
      writeFileSync(join(dir, "driver.ts"), DRIVER);
      const env = [
        `PI_CODING_AGENT_DIR=${agent}`,
        "PI_OFFLINE=1",
        "PI_SKIP_VERSION_CHECK=1",
        "PI_TELEMETRY=0",
        `PI_CODE_EXECUTION_JOURNAL=${join(dir, "journal.sqlite")}`,
        `PI_CODE_EXECUTION_LOG_DIR=${join(dir, "logs")}`,
      ];
      const command = [
        "cd",
        cwd,
        "&&",
        "exec env",
        ...env,
        "bash",
        join(ROOT, "scripts", "pi.sh"),
        "-e",
        join(dir, "driver.ts"),
        `--provider faux --model faux-1 --python ${PYTHON} --no-session`,
      ].join(" ");
      // Tall enough for the whole /code-status report.
      tmux("new-session", "-d", "-s", SESSION, "-x", "120", "-y", "100", command);
      await waitForScreen(/faux-1/);
      // Pi's start-up listing names the extension after its entry's folder: pi-code-supervisor.
      assert.deepEqual(await extensionsListed(), ["driver.ts", "pi-code-supervisor"]);

      tmux("send-keys", "-t", SESSION, "run it", "Enter");
      const run = await waitForScreen(/all done/);
      // The call: highlighted (plain in the capture), numbered because long, collapsed.
      assert.match(run, /python · session demo/);
      assert.match(run, / 1 │ import sys/);
      assert.match(run, /… showing 10 of 24 lines \(.*to expand\)/);
      // The result: label from the details, the session's state, the Python version, the output.
      assert.match(run, /✓ success · session demo started · Python 3\.11\.\d+ · \d+\.\ds/);
      assert.match(run, /line 0\n +line 1\n +line 2\n +\(3, 11\)/);
      // The footer status.
      assert.match(run, /1 session: Python \(code_execution\) · idle/);

      tmux("send-keys", "-t", SESSION, "/code-status");
      await new Promise((r) => setTimeout(r, 300));
      tmux("send-keys", "-t", SESSION, "Enter");
      const status = await waitForScreen(/Warnings: none/);
      assert.match(
        status,
        new RegExp(`Python ${systemPython()?.version.replaceAll(".", "\\.")}: ${PYTHON_RE}\n +from the --python flag`),
      );
      assert.match(status, /Live sessions \(1\):\n +demo +idle +pid (\d+)/);
      assert.match(status, /maxTimeout +3600 +default/);
      const pid = Number(/demo +idle +pid (\d+)/.exec(status)![1]);
      assert.ok(pidAlive(pid));

      // Quitting the terminal leaves no Python process behind.
      tmux("kill-server");
      assert.ok(await waitUntil(() => !pidAlive(pid), 10_000), `runner ${pid} outlived pi`);
    });

    test("installed as the README says (`pi install <checkout>`), Pi lists it as pi-code-supervisor", async () => {
      const dir = tempDir("pcs-tmux-install-");
      const agent = join(dir, "agent");
      mkdirSync(agent);
      writeFileSync(join(dir, "driver.ts"), DRIVER);
      const env = {
        PI_CODING_AGENT_DIR: agent,
        PI_OFFLINE: "1",
        PI_SKIP_VERSION_CHECK: "1",
        PI_TELEMETRY: "0",
        PI_CODE_EXECUTION_JOURNAL: "off",
      };
      const pi = join(ROOT, "node_modules", ".bin", "pi");
      execFileSync(pi, ["install", ROOT], { env: { ...process.env, ...env }, encoding: "utf8" });
      const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
      const command = [
        `cd ${dir} && source ${join(ROOT, "scripts", "env.sh")} && exec env`,
        ...vars,
        pi,
        "-e",
        join(dir, "driver.ts"),
        "--provider faux --model faux-1 --no-session",
      ].join(" ");
      await killServer();
      tmux("new-session", "-d", "-s", SESSION, "-x", "120", "-y", "60", `bash -c '${command}'`);
      try {
        await waitForScreen(/faux-1/);
        assert.deepEqual(await extensionsListed(), ["driver.ts", "pi-code-supervisor"]);
      } finally {
        tmux("kill-server");
      }
    });
  },
);
