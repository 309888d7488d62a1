// `/code-inspect` and `--code-inspect` in Pi: the command starts the inspector of the session's supervisor and
// prints its URL (and the session's event log); the flag does the same at start-up, through the real `pi` CLI.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { piPrint } from "../../helpers/pi-cli.ts";
import { startPi } from "../../helpers/pi-session.ts";

/** Resolves with the first frame a WebSocket receives. */
function firstFrame(url: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.onmessage = (m) => {
      ws.close();
      resolve(JSON.parse(String(m.data)));
    };
    ws.onerror = () => reject(new Error(`cannot connect to ${url}`));
  });
}

/** What `prompt` writes to stderr (where Pi without a UI prints the command's notices). */
async function printedBy(prompt: () => Promise<unknown>): Promise<string> {
  const printed: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string) => (printed.push(String(chunk)), true)) as typeof process.stderr.write;
  try {
    await prompt();
  } finally {
    process.stderr.write = write;
  }
  return printed.join("");
}

/** A port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Whether something accepts connections on `port` (any interface: the relay listens on all of them). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(true));
    probe.listen(port, () => probe.close(() => resolve(false)));
  });
}

describe("in Pi", () => {
  test("/code-inspect starts the inspector and prints its URL; /code-inspect stop stops it", async () => {
    const pi = await startPi();
    const printed: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => (printed.push(String(chunk)), true)) as typeof process.stderr.write;
    try {
      await pi.session.prompt("/code-inspect");
    } finally {
      process.stderr.write = write;
    }
    const url = /Inspector: (http:\/\/127\.0\.0\.1:\d+\/\S+\/)/.exec(printed.join(""))?.[1];
    assert.ok(url, printed.join(""));
    assert.match(printed.join(""), /read-only/);
    assert.match(printed.join(""), /Event log: .*pi-code-supervisor\/logs\/.*\.jsonl/);
    const info = (await fetch(`${url}api/info`).then((r) => r.json())) as { live: boolean; readOnly: boolean };
    assert.equal(info.live, true);
    assert.equal(info.readOnly, true);
    const frame = await firstFrame(`${url.replace("http", "ws")}ws`);
    assert.equal(frame.sessionId, "supervisor", "the live tree is there before any run");
    assert.match(await printedBy(() => pi.session.prompt("/code-inspect stop")), /code-inspect: inspector stopped/);
    await assert.rejects(fetch(`${url}api/info`));
    // Said truly: a second stop finds nothing running.
    const again = await printedBy(() => pi.session.prompt("/code-inspect stop"));
    assert.match(again, /code-inspect: no inspector was running/);
    assert.doesNotMatch(again, /stopped/);
    await pi.dispose();
  });

  test("/code-inspect stop also stops the Stately relay it started (listening on every interface)", async () => {
    const pi = await startPi();
    const port = await freePort();
    const started = await printedBy(() => pi.session.prompt(`/code-inspect stately ${port}`));
    assert.match(started, new RegExp(`Stately Inspector: http://localhost:${port}`), started);
    assert.equal(await listening(port), true, "the relay listens");
    // Control: the relay alone (no page inspector) counts as running, and stop names it.
    const stopped = await printedBy(() => pi.session.prompt("/code-inspect stop"));
    assert.match(stopped, /code-inspect: Stately relay stopped/);
    assert.equal(await listening(port), false, `port ${port} is free again`);
    assert.doesNotMatch(await printedBy(() => pi.session.prompt("/code-inspect status")), /Stately Inspector/);
    // Both: the page inspector and the relay, stopped together.
    await printedBy(() => pi.session.prompt(`/code-inspect stately ${port}`));
    await printedBy(() => pi.session.prompt("/code-inspect"));
    assert.equal(await listening(port), true);
    assert.match(
      await printedBy(() => pi.session.prompt("/code-inspect stop")),
      /code-inspect: inspector and Stately relay stopped/,
    );
    assert.equal(await listening(port), false);
    await pi.dispose();
  });

  test("--code-inspect starts it with Pi and prints the URL", () => {
    const agentDir = join(tmpdir(), `pcs-flag-${process.pid}`);
    const r = piPrint("extension/pi-code-supervisor/index.ts", ["--code-inspect", "--", "hello"], {
      PI_CODING_AGENT_DIR: agentDir,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /Inspector: http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{43}\/ \(read-only/);
  });
});
