// Shell sessions under the sandbox backend, attacked through real Pi sessions (PI_CODE_EXECUTION_BACKEND=sandbox,
// the faux model calling exec_command and write_stdin): a secret planted in $HOME, a loopback listener started
// here, Pi's own pid and a path outside the working directory are all out of reach, beside a control on the local
// backend where each of the same actions works. PTY shells work in the sandbox, and kill_session and Pi's quit
// leave no process of a session behind (found by a marker argument).
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "../helpers/pi-session.ts";
import { processesMatching, waitUntil } from "../helpers/procs.ts";
import { SupervisorHost } from "../../host/host.ts";
import { sandboxOperations } from "../../actors/process/sandbox.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const SECRET = join(homedir(), `pcs-exec-secret-${process.pid}`);
const OUTSIDE = join("/var/tmp", `pcs-exec-outside-${process.pid}`);
let server: Server;
let port = 0;
let connections = 0;

before(async () => {
  writeFileSync(SECRET, "the-planted-secret\n", { mode: 0o600 });
  server = createServer((s) => {
    connections += 1;
    s.on("error", () => {});
    s.end("hello from the host\n");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as { port: number }).port;
});
after(() => {
  rmSync(SECRET, { force: true });
  rmSync(OUTSIDE, { force: true });
  server?.close();
});

/** Each hostile action, one line of verdict each: `<NAME>-OK` when it worked, `<NAME>-BLOCKED` when it did not. */
const hostile = () =>
  [
    `cat ${SECRET} 2>/dev/null | grep -q the-planted-secret && echo READ-OK || echo READ-BLOCKED`,
    `(exec 3<>/dev/tcp/127.0.0.1/${port} && read -r -u 3 line && [ "$line" = "hello from the host" ]) 2>/dev/null && echo NET-OK || echo NET-BLOCKED`,
    `kill -0 ${process.pid} 2>/dev/null && echo SIGNAL-OK || echo SIGNAL-BLOCKED`,
    `(echo x > ${OUTSIDE}) 2>/dev/null && echo WRITE-OK || echo WRITE-BLOCKED`,
    `echo inside > ./pcs-inside && echo CWD-OK || echo CWD-BLOCKED`,
  ].join("\n");

async function withPi(backend: "local" | "sandbox", fn: (pi: PiHarness) => Promise<void>) {
  process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,exec";
  process.env.PI_CODE_EXECUTION_BACKEND = backend;
  let pi: PiHarness | undefined;
  try {
    pi = await startPi({ cwd: tempDir(`pcs-exec-${backend}-`) });
  } finally {
    delete process.env.PI_CODE_EXECUTION_TOOLS;
    delete process.env.PI_CODE_EXECUTION_BACKEND;
  }
  try {
    await fn(pi);
  } finally {
    await pi.dispose();
  }
}

async function call(pi: PiHarness, batches: [string, Record<string, unknown>][][]): Promise<ToolResultMessage[]> {
  const before = pi.toolResults().length;
  pi.faux.setResponses([
    ...batches.map((b) =>
      fauxAssistantMessage(
        b.map(([n, a]) => fauxToolCall(n, a as never)),
        { stopReason: "toolUse" },
      ),
    ),
    fauxAssistantMessage("done"),
  ]);
  await pi.session.prompt("go");
  return pi.toolResults().slice(before);
}

const verdicts = (r: ToolResultMessage) => textOf(r).match(/\b[A-Z]+-(OK|BLOCKED)\b/g) ?? [];

function reset() {
  rmSync(OUTSIDE, { force: true });
  connections = 0;
}

describe("exec_command: the hostile actions", () => {
  test("local (the control): each action works", async () => {
    reset();
    await withPi("local", async (pi) => {
      const [r] = await call(pi, [[["exec_command", { cmd: hostile() }]]]);
      assert.deepEqual(verdicts(r!), ["READ-OK", "NET-OK", "SIGNAL-OK", "WRITE-OK", "CWD-OK"], textOf(r!));
      assert.equal(connections, 1, "the listener saw the connection");
      assert.ok(existsSync(OUTSIDE));
    });
  });

  test("sandbox: each is blocked; writing in the working directory still works", async () => {
    reset();
    await withPi("sandbox", async (pi) => {
      const [r] = await call(pi, [[["exec_command", { cmd: hostile() }]]]);
      assert.deepEqual(
        verdicts(r!),
        ["READ-BLOCKED", "NET-BLOCKED", "SIGNAL-BLOCKED", "WRITE-BLOCKED", "CWD-OK"],
        textOf(r!),
      );
      assert.equal(connections, 0, "nothing reached the listener");
      assert.ok(!existsSync(OUTSIDE));
      assert.equal(readFileSync(join(pi.cwd, "pcs-inside"), "utf8"), "inside\n");
      // Another pid namespace: the shell is pid 1 or 2 there, and Pi's pid is not visible.
      const [p] = await call(pi, [[["exec_command", { cmd: "echo $$; ls /proc | grep -c '^[0-9]'" }]]]);
      const [own, count] = textOf(p!).split("\n---\n")[1]!.trim().split("\n").map(Number);
      assert.ok(own! <= 3 && count! < 10, textOf(p!));
    });
  });
});

describe("write_stdin into bash: the same actions", () => {
  for (const backend of ["local", "sandbox"] as const)
    test(`${backend}: ${backend === "local" ? "each works (the control)" : "each is blocked"}`, async () => {
      reset();
      await withPi(backend, async (pi) => {
        const [s] = await call(pi, [[["exec_command", { cmd: "bash", yield_time_ms: 500 }]]]);
        const id = s!.details.session_id as number;
        assert.ok(id > 0, textOf(s!));
        const [w] = await call(pi, [
          [["write_stdin", { session_id: id, chars: `${hostile()}\nexit\n`, yield_time_ms: 10_000 }]],
        ]);
        const want =
          backend === "local"
            ? ["READ-OK", "NET-OK", "SIGNAL-OK", "WRITE-OK", "CWD-OK"]
            : ["READ-BLOCKED", "NET-BLOCKED", "SIGNAL-BLOCKED", "WRITE-BLOCKED", "CWD-OK"];
        assert.deepEqual(verdicts(w!), want, textOf(w!));
        assert.equal(connections, backend === "local" ? 1 : 0);
      });
    });
});

describe("PTY shells in the sandbox", () => {
  test("an interactive python3: it sees a terminal, answers, and ^C interrupts it", async () => {
    await withPi("sandbox", async (pi) => {
      const [s] = await call(pi, [[["exec_command", { cmd: "python3 -q", tty: true, yield_time_ms: 3000 }]]]);
      const id = s!.details.session_id as number;
      assert.ok(id > 0, textOf(s!));
      const [a] = await call(pi, [
        [["write_stdin", { session_id: id, chars: "import os; print(os.isatty(0), 6*7)\r", yield_time_ms: 3000 }]],
      ]);
      assert.match(textOf(a!), /True 42/);
      const [b] = await call(pi, [
        [["write_stdin", { session_id: id, chars: "import time; time.sleep(30)\r", yield_time_ms: 500 }]],
      ]);
      assert.match(textOf(b!), /still running/);
      const [c] = await call(pi, [[["write_stdin", { session_id: id, chars: "\x03", yield_time_ms: 2000 }]]]);
      assert.match(textOf(c!), /KeyboardInterrupt/);
      const [d] = await call(pi, [[["write_stdin", { session_id: id, chars: "\x04", yield_time_ms: 5000 }]]]);
      assert.match(textOf(d!), /\[exited\]/);
    });
  });

  test("an interactive bash echoes a line", async () => {
    await withPi("sandbox", async (pi) => {
      const [s] = await call(pi, [[["exec_command", { cmd: "bash --norc -i", tty: true, yield_time_ms: 1500 }]]]);
      const id = s!.details.session_id as number;
      const [a] = await call(pi, [
        [["write_stdin", { session_id: id, chars: "echo $((6*7))-pty\r", yield_time_ms: 2000 }]],
      ]);
      assert.match(textOf(a!), /42-pty/);
    });
  });
});

describe("a PTY shell's exit code", () => {
  // dash (the `sh -m` a sandboxed PTY child runs under) used to exit 2 with "Cannot set tty process group": it handed
  // the terminal back to a process group outside the sandbox's pid namespace.
  for (const backend of ["local", "sandbox"] as const)
    test(`${backend}${backend === "local" ? " (the control)" : ""}: exit 39 is reported as 39, with no word from the wrapper`, async () => {
      await withPi(backend, async (pi) => {
        const [r] = await call(pi, [
          [["exec_command", { cmd: "sleep 0.3; exit 39", tty: true, yield_time_ms: 10_000 }]],
        ]);
        assert.equal(r!.details.exit_code, 39, textOf(r!));
        assert.doesNotMatch(textOf(r!), /tty process group/);
      });
    });
});

describe("nothing of a sandboxed session is left", () => {
  test("kill_session and Pi's quit: no process with the marker survives, not even one ignoring SIGTERM", async () => {
    const marker = `pcs-sbx-mark-${process.pid}`;
    await withPi("sandbox", async (pi) => {
      const [a, b] = await call(pi, [
        [
          ["exec_command", { cmd: `trap '' TERM; sleep 60; : ${marker}-a`, yield_time_ms: 500 }],
          ["exec_command", { cmd: `sleep 60 & sleep 60; : ${marker}-b`, yield_time_ms: 500 }],
        ],
      ]);
      assert.ok(await waitUntil(() => processesMatching(`${marker}-b`).length > 0, 5000));
      await call(pi, [[["kill_session", { session_id: a!.details.session_id }]]]);
      assert.ok(await waitUntil(() => processesMatching(`${marker}-a`).length === 0, 5000), "killed");
      assert.ok(processesMatching(`${marker}-b`).length > 0, "the other one still runs");
      void b;
    });
    assert.ok(
      await waitUntil(() => processesMatching(marker).length === 0, 5000),
      `left: ${processesMatching(marker)}`,
    );
  });
});

describe("signals to a sandboxed session reach the program, not bwrap", () => {
  for (const tty of [false, true])
    test(`kill_session SIGINT ${tty ? "(PTY)" : "(pipes)"}: the program's trap runs and it carries on until SIGKILL`, async () => {
      const host = new SupervisorHost({
        ops: sandboxOperations({ writable: [], readable: [], network: false, support: [] }),
        exec: { logDir: tempDir("pcs-sbx-logs-") },
      });
      try {
        const r = await host.exec.start({
          command: "trap 'echo got-int' INT; echo ready; sleep 30 & wait; echo after; sleep 30",
          cwd: tempDir("pcs-sbx-sig-"),
          tty,
          cols: 80,
          rows: 24,
          yieldMs: 1500,
          onExit: "none",
          callId: `sig-${tty}`,
        });
        assert.ok(r.ok && r.value.running, r.ok ? Buffer.from(r.value.output).toString() : r.error);
        const k = await host.exec.kill(r.value.id, "SIGINT", `kill-${tty}`);
        const out = Buffer.from(k!.output).toString();
        assert.match(out, /got-int\r?\nafter/, "the trap ran and the script went on: bwrap did not die of it");
        assert.equal(k!.escalated, true, "it ignored SIGINT, so SIGKILL ended it");
      } finally {
        await host.shutdown();
      }
    });
});
