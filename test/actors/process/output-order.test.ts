// Output lands before the frames that follow it (actors/process/output-order.ts), with real processes and sockets:
// a scripted runner sends a frame naming output it writes only later, as a busy host can read a `done` before the
// stdout bytes written ahead of it (the three sockets are read in no fixed order). And the JS runner's frames say
// how much it wrote before them. The ordering alone (OutputOrder fed by hand, no process) for what the processes
// cannot place exactly: a frame whose output has just arrived, stderr after the last frame, the release at exit.
import "../../helpers/agent-dir.ts";
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { localOperations, type RunnerHandle } from "../../../actors/process/operations.ts";
import { OUTPUT_WAIT_MS, OutputOrder } from "../../../actors/process/output-order.ts";
import type { Frame } from "../../../actors/process/framing.ts";
import { runCell, startJs } from "../../helpers/js-runner.ts";
import { SupervisorHost } from "../../../host/host.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

const cwd = tempDir("pcs-order-");

/** A runner script (CommonJS, `fs` in scope) whose `body` runs once the host has the runner's handle and says so (a
 * frame on fd 3, which `start` sends): a runner that exited before then would have its output discarded by Node's
 * ChildProcess (it drains the pipes of an exited child nobody reads yet), which is not what these tests are about. */
function runner(name: string, body: string[]): string {
  const path = join(cwd, `${name}-${Math.random().toString(36).slice(2)}.cjs`);
  writeFileSync(
    path,
    [
      "const fs = require('node:fs');",
      "new (require('node:net').Socket)({ fd: 3 }).once('data', () => {",
      ...body,
      "});",
    ].join("\n"),
  );
  return path;
}

/** A runner that sends `frames` on fd 3 first, then writes `stdout` after `delayMs`, then exits. */
function scripted(frames: object[], stdout: string, delayMs: number): string {
  return runner("scripted", [
    `for (const f of ${JSON.stringify(frames)}) {`,
    "  const body = Buffer.from(JSON.stringify(f));",
    "  const head = Buffer.alloc(4); head.writeUInt32BE(body.length);",
    "  fs.writeSync(3, Buffer.concat([head, body]));",
    "}",
    `setTimeout(() => { fs.writeSync(1, ${JSON.stringify(stdout)}); setTimeout(() => process.exit(0), 300); }, ${delayMs});`,
  ]);
}

/** Starts `script` and, unless `go` is false, tells it to begin. */
async function start(script: string, settleOutput = true, go = true): Promise<RunnerHandle> {
  const r = await localOperations.start({
    executable: process.execPath,
    args: [script],
    cwd,
    env: { PATH: process.env.PATH ?? "" },
    settleOutput,
    killMs: 500,
  });
  assert.ok(r.ok, r.ok ? "" : r.error.message);
  if (go) assert.ok(r.value.send({ type: "go" }).ok);
  return r.value;
}

/** A runner that writes `steps` in order, each at once (fd 1 text, `{ stderr }` fd 2 text, `{ control }` raw bytes on
 * fd 3, or a frame on fd 3), then exits: a later write can be read before an earlier one (three sockets), or in one
 * chunk with output written before and after a frame. */
function sequence(steps: (string | object)[]): string {
  return runner("sequence", [
    `for (const s of ${JSON.stringify(steps)}) {`,
    "  if (typeof s === 'string') { fs.writeSync(1, s); continue; }",
    "  if (s.stderr !== undefined) { fs.writeSync(2, s.stderr); continue; }",
    "  if (s.control !== undefined) { fs.writeSync(3, s.control); continue; }",
    "  const body = Buffer.from(JSON.stringify(s));",
    "  const head = Buffer.alloc(4); head.writeUInt32BE(body.length);",
    "  fs.writeSync(3, Buffer.concat([head, body]));",
    "}",
    "setTimeout(() => process.exit(0), 100);",
  ]);
}

/** `frame(f)` in a runner script: writes `f` on fd 3. */
const FRAME = [
  "const frame = (f) => { const body = Buffer.from(JSON.stringify(f)); const head = Buffer.alloc(4);",
  "  head.writeUInt32BE(body.length); fs.writeSync(3, Buffer.concat([head, body])); };",
];

/** A runner that acts on the host's frames as they come: `steps[type]` runs once, when a frame of that type from the
 * host has been read whole (`frame(f)` in scope). For tests whose host blocks its own loop between steps, to place
 * reads in polls. */
function conversing(name: string, steps: Record<string, string>): string {
  const path = join(cwd, `${name}-${Math.random().toString(36).slice(2)}.cjs`);
  writeFileSync(
    path,
    [
      "const fs = require('node:fs');",
      ...FRAME,
      "let heard = '';",
      "const ran = new Set();",
      "new (require('node:net').Socket)({ fd: 3 }).on('data', (c) => {",
      "  heard += c.toString();",
      ...Object.entries(steps).map(
        ([type, code]) =>
          `  if (heard.includes('"type":"${type}"') && !ran.has('${type}')) { ran.add('${type}'); ${code} }`,
      ),
      "});",
    ].join("\n"),
  );
  return path;
}

/** `order` as the frames with, between them, what each channel wrote (the channels' interleaving between two frames
 * is not kept: only each frame's place in each channel). */
function segments(order: string[]): string[] {
  const out: string[] = [];
  let text = { stdout: "", stderr: "" };
  const close = () => {
    if (text.stdout || text.stderr) out.push(`stdout:${text.stdout} stderr:${text.stderr}`);
    text = { stdout: "", stderr: "" };
  };
  for (const item of order) {
    const [kind, ...rest] = item.split(":");
    if (kind === "stdout" || kind === "stderr") text[kind] += rest.join(":");
    else {
      close();
      out.push(item);
    }
  }
  close();
  return out;
}

/** Blocks the host's event loop for `ms`. */
const block = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** What the host saw, in order, until the runner exited. */
async function observe(handle: RunnerHandle): Promise<{ order: string[]; at: Record<string, number> }> {
  const order: string[] = [];
  const at: Record<string, number> = {};
  const t0 = performance.now();
  handle.onStdout((c) => {
    order.push(`stdout:${c.toString()}`);
    at.stdout = performance.now() - t0;
  });
  handle.onStderr((c) => order.push(`stderr:${c.toString()}`));
  handle.onFrame((f: Frame) => {
    order.push(`frame:${String(f.type)}`);
    at[String(f.type)] = performance.now() - t0;
  });
  handle.onProtocolError((message) => order.push(`protocol:${message}`));
  await new Promise<void>((resolve) => handle.onExit(() => resolve()));
  return { order, at };
}

describe("output before the frames after it", () => {
  test("a frame naming output not yet read waits for it, and the frames behind it wait too", async () => {
    const h = await start(scripted([{ type: "done", id: "r", out: [5, 0] }, { type: "ready" }], "late\n", 40));
    const { order } = await observe(h);
    assert.deepEqual(order, ["stdout:late\n", "frame:done", "frame:ready"]);
  });

  test("a frame without `out`, or whose output has arrived, is not held", async () => {
    const h = await start(
      scripted(
        [
          { type: "started", id: "r" },
          { type: "done", id: "r", out: [0, 0] },
        ],
        "x\n",
        60,
      ),
    );
    const { order, at } = await observe(h);
    assert.deepEqual(order, ["frame:started", "frame:done", "stdout:x\n"]);
    assert.ok(at.done! < at.stdout!);
  });

  test("output that never comes holds the frame for OUTPUT_WAIT_MS at most", async () => {
    // Both frames leave the runner together: the first names no output, the second more than ever comes.
    const h = await start(scripted([{ type: "ready" }, { type: "done", id: "r", out: [1000, 0] }], "short\n", 2000));
    const at: Record<string, number> = {};
    const seen = new Promise<void>((resolve) =>
      h.onFrame((f: Frame) => {
        at[String(f.type)] = performance.now();
        if (f.type === "done") resolve();
      }),
    );
    await seen;
    const held = at.done! - at.ready!;
    assert.ok(held >= OUTPUT_WAIT_MS - 20 && held < OUTPUT_WAIT_MS + 500, `done held ${held.toFixed(0)} ms`);
    h.signalGroup("SIGKILL");
  });

  test("the JS runner's display and done say how many bytes it wrote before them", async () => {
    const d = await startJs({ cwd });
    try {
      const r = await runCell(
        d,
        "console.log('out')\nprocess.stderr.write('e\u00e9')\ndisplay('shown')\nprint('after')",
      );
      assert.equal(r.stdout, "out\nafter\n");
      const display = r.displays[0]!;
      assert.deepEqual(display.out, [4, 3], "written before the display: 'out\\n' and 'e\u00e9' (3 bytes)");
      assert.deepEqual(r.done.out, [10, 3]);
    } finally {
      await d.close();
    }
  });

  test("output written after a frame stays after it, even read first or in one chunk with what came before", async () => {
    // Three bytes before the display, three after, written back to back: whichever way the host reads them, the
    // display goes between the two parts (a chunk holding both is cut at the display's count). Rounds run five at a
    // time: each runner waits 100 ms before it exits, and the reads race the same way with others running.
    const round = async (i: number) => {
      const h = await start(
        sequence(["ab\n", { type: "display", id: "r", out: [3, 0] }, "cd\n", { type: "done", id: "r", out: [6, 0] }]),
      );
      const { order } = await observe(h);
      assert.deepEqual(
        order.join("").replace(/stdout:/g, ""),
        "ab\nframe:displaycd\nframe:done",
        `round ${i}: ${JSON.stringify(order)}`,
      );
      // Output after the last frame, read with or before it, goes out once that frame has.
      const last = await observe(await start(sequence(["ab\n", { type: "done", id: "r", out: [3, 0] }, "cd\n"])));
      assert.deepEqual(last.order.join("").replace(/stdout:/g, ""), "ab\nframe:donecd\n", `round ${i}`);
    };
    for (let i = 0; i < 20; i += 5) await Promise.all([i, i + 1, i + 2, i + 3, i + 4].map(round));
  });

  test("a JS cell's displays and console.log lines come out in the order the cell made them", async () => {
    const host = new SupervisorHost({ spareRunners: () => false });
    try {
      const code = "for (let i = 0; i < 40; i++) { display('d' + i); console.log('l' + i); }";
      for (let round = 0; round < 3; round++) {
        const r = await host.run({ code, cwd, timeoutMs: 20_000, session: "js", language: "js" });
        assert.equal(r.outcome.status, "success", r.stderr);
        const expected = Array.from({ length: 40 }, (_, i) => `d${i}\nl${i}\n`).join("");
        assert.equal(r.stdout, expected);
      }
    } finally {
      await host.shutdown();
    }
  });
});

describe("what the wrapper passes on besides ordered output", () => {
  test("output read with the runner's end, in the same poll as its exit, goes out with it", async () => {
    // The runner writes and exits once told to; meanwhile the host's event loop is blocked, so its next poll reads
    // the last output, the end of the pipes and the exit together: that output is still waiting one turn in the
    // wrapper when the exit is reported, and goes out with it.
    const path = runner("last", [
      "fs.writeSync(1, 'ab\\n');",
      "const body = Buffer.from(JSON.stringify({ type: 'done', id: 'r', out: [3, 0] }));",
      "const head = Buffer.alloc(4); head.writeUInt32BE(body.length);",
      "fs.writeSync(3, Buffer.concat([head, body]));",
      "fs.writeSync(1, 'cd\\n');",
      "process.exit(0);",
    ]);
    for (let i = 0; i < 5; i++) {
      const h = await start(path, true, false);
      const seen = observe(h);
      assert.ok(h.send({ type: "go" }).ok);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
      const { order } = await seen;
      assert.equal(
        order.join("").replace(/stdout:/g, ""),
        "ab\nframe:donecd\n",
        `round ${i}: ${JSON.stringify(order)}`,
      );
    }
  });

  test("a held runner's stderr takes its place among the frames, read in one poll with the stdout before it", async () => {
    // The host's loop is blocked while the runner writes everything and exits, so stdout, stderr and the frames are
    // read in one poll: the stdout waits in the wrapper a turn or two, and the stderr written after the display must
    // wait behind it rather than go out as read.
    const path = runner("stderr", [
      ...FRAME,
      "fs.writeSync(1, 'ab\\n');",
      "frame({ type: 'display', id: 'r', out: [3, 0] });",
      "fs.writeSync(2, 'e\\n');",
      "frame({ type: 'done', id: 'r', out: [3, 2] });",
      "process.exit(0);",
    ]);
    for (let i = 0; i < 3; i++) {
      const h = await start(path, true, false);
      const seen = observe(h);
      assert.ok(h.send({ type: "go" }).ok);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
      const { order } = await seen;
      assert.deepEqual(order, ["stdout:ab\n", "frame:display", "stderr:e\n", "frame:done"], `round ${i}`);
    }
  });

  test("a frame read in the same poll as the exit, after both pipes closed, still goes out", async () => {
    // The host's listeners block its loop at two points, so that the last stdout and the pipes' ends are read in one
    // poll, then the last frame and the exit in the next: that frame is still queued in the wrapper (output read
    // before it waits there one more turn) when the exit is reported, and is decoded then. (A runner starved past
    // the blocks places it otherwise: the order is the same.)
    const path = conversing("closing", {
      go: "fs.writeSync(1, 'a'); frame({ type: 'ready' });",
      more: "fs.writeSync(1, 'b'); fs.closeSync(1); fs.closeSync(2);",
      end: "frame({ type: 'done', id: 'r', out: [2, 0] }); process.exit(0);",
    });
    for (let i = 0; i < 3; i++) {
      const h = await start(path, true, false);
      let [asked, told] = [false, false];
      h.onFrame((f) => {
        if (f.type !== "ready") return;
        asked = true;
        assert.ok(h.send({ type: "more" }).ok);
        block(200);
      });
      h.onStdout(() => {
        if (!asked || told) return;
        told = true;
        assert.ok(h.send({ type: "end" }).ok);
        block(200);
      });
      const seen = observe(h);
      assert.ok(h.send({ type: "go" }).ok);
      block(200);
      const { order } = await seen;
      const text = order.join("").replace(/stdout:/g, "");
      assert.ok(/^(frame:readya|aframe:ready)bframe:done$/.test(text), `round ${i}: ${text}`);
    }
  });

  test("output read in one poll waits for the next, where a frame written inside it is read", async () => {
    // The host's frame listener blocks its loop in the middle of a poll, after the control channel was read and
    // before stdout and stderr are: the runner meanwhile writes output, a frame, more output. The stdout read later
    // in that poll holds bytes from both sides of a frame read only in the next poll; two reads (stdout, stderr) ask
    // for a settle in that poll, and one settle must still leave their output waiting one more poll.
    const path = conversing("midpoll", {
      go: "frame({ type: 'ready' }); fs.writeSync(1, 'x'); fs.writeSync(2, 'y');",
      more: [
        "fs.writeSync(1, 'ab\\n');",
        "frame({ type: 'display', id: 'r', out: [4, 1] });",
        "fs.writeSync(1, 'cd\\n');",
        "frame({ type: 'done', id: 'r', out: [7, 1] });",
        "setTimeout(() => process.exit(0), 100);",
      ].join(" "),
    });
    for (let i = 0; i < 3; i++) {
      const h = await start(path, true, false);
      h.onFrame((f) => {
        if (f.type !== "ready") return;
        assert.ok(h.send({ type: "more" }).ok);
        block(200);
      });
      const seen = observe(h);
      assert.ok(h.send({ type: "go" }).ok);
      block(200);
      const { order } = await seen;
      assert.deepEqual(
        segments(order),
        ["frame:ready", "stdout:xab\n stderr:y", "frame:display", "stdout:cd\n stderr:", "frame:done"],
        `round ${i}: ${JSON.stringify(order)}`,
      );
    }
  });

  test("a frame read when nothing waits goes out at once, before what the same poll reads after it", async () => {
    // A quiet cell's `done` is not held a turn. Two runners, the second not held: the first's frame, then (once a
    // file says that frame is written) the second's stdout, both while the host's loop is blocked, so that one poll
    // reads them in that order. Should either runner be late past the block, the frame is read a poll earlier still.
    for (let i = 0; i < 3; i++) {
      const flag = join(cwd, `written-${Math.random().toString(36).slice(2)}`);
      const quiet = conversing("quiet", {
        go: `frame({ type: 'ready' }); fs.writeFileSync(${JSON.stringify(flag)}, ''); setTimeout(() => process.exit(0), 500);`,
      });
      const other = conversing("other", {
        go: `const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(flag)})) { clearInterval(t); fs.writeSync(1, 'z'); } }, 5); setTimeout(() => process.exit(0), 500);`,
      });
      const [a, b] = [await start(quiet, true, false), await start(other, false, false)];
      const seen: string[] = [];
      a.onFrame((f) => seen.push(`frame:${String(f.type)}`));
      b.onStdout((c) => seen.push(`other:${c.toString()}`));
      const ended = Promise.all([a, b].map((h) => new Promise<void>((resolve) => h.onExit(() => resolve()))));
      assert.ok(b.send({ type: "go" }).ok);
      assert.ok(a.send({ type: "go" }).ok);
      block(300);
      await ended;
      assert.deepEqual(seen, ["frame:ready", "other:z"], `round ${i}`);
    }
  });

  test("a runner whose output is not held (Python's) gets its stdout, stderr and frames as read", async () => {
    const { order } = await observe(await start(sequence(["out\n", { stderr: "err\n" }, { type: "ready" }]), false));
    assert.deepEqual(order.toSorted(), ["frame:ready", "stderr:err\n", "stdout:out\n"]);
  });

  test("a malformed control frame is reported as a protocol error, with output held or not", async () => {
    const malformed = { control: "\u0000\u0000\u0000\u0002{x" };
    for (const settleOutput of [true, false]) {
      const { order } = await observe(await start(sequence(["ab\n", malformed]), settleOutput));
      assert.ok(order.includes("protocol:control frame is not valid JSON"), JSON.stringify(order));
      assert.ok(order.includes("stdout:ab\n"), JSON.stringify(order));
    }
  });
});

/** An OutputOrder fed by hand (no process: the ordering alone), with what it passes on in `seen`. Its wait is long so
 * that anything the test sees went out at once, not on the timer; each test ends by releasing it (clearing that timer). */
function ordering(): { order: OutputOrder; seen: string[] } {
  const seen: string[] = [];
  const order = new OutputOrder(
    (f) => seen.push(`frame:${String(f.type)}`),
    (channel, chunk) => seen.push(`${channel}:${chunk.toString()}`),
    5000,
  );
  return { order, seen };
}

describe("the ordering itself, fed by hand", () => {
  test("a frame whose output has exactly arrived on both channels goes at once", () => {
    const { order, seen } = ordering();
    order.output(0, Buffer.from("abc"));
    order.output(1, Buffer.from("de"));
    order.frame({ type: "display", id: "r", out: [3, 2] });
    assert.deepEqual(seen, ["0:abc", "1:de", "frame:display"]);
    // And one whose output comes later goes the moment its last byte does, the output written after it behind it.
    order.frame({ type: "done", id: "r", out: [4, 3] });
    order.output(1, Buffer.from("fg"));
    order.output(0, Buffer.from("hi"));
    assert.deepEqual(seen, ["0:abc", "1:de", "frame:display", "1:f", "0:h", "frame:done", "0:i", "1:g"]);
    order.release();
  });

  test("stderr read while a frame waits for stdout goes out after that frame", () => {
    const { order, seen } = ordering();
    order.frame({ type: "done", id: "r", out: [3, 0] });
    order.output(1, Buffer.from("late"));
    assert.deepEqual(seen, []);
    order.output(0, Buffer.from("abc"));
    assert.deepEqual(seen, ["0:abc", "frame:done", "1:late"]);
    order.release();
  });

  test("a loop stalled past the wait reads what arrived meanwhile before it gives up on it (a starved process)", async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const accepted = new Promise<Socket>((r) => server.once("connection", r));
    const reader = connect((server.address() as AddressInfo).port, "127.0.0.1");
    const writer = await accepted;
    const seen: string[] = [];
    const order = new OutputOrder(
      (f) => seen.push(`frame:${String(f.type)}`),
      (channel, chunk) => seen.push(`${channel}:${chunk.toString()}`),
      20,
    );
    // What has gone out by the end of the turn that read the bytes: the frame behind, whose bytes are not written, still
    // waits (a new wait of its own, not the give-up the first frame's timer had set).
    let afterRead: string[] | undefined;
    reader.on("data", (c: Buffer) => {
      order.output(0, c);
      setImmediate(() => (afterRead ??= [...seen]));
    });
    try {
      // From the check phase, so the loop's next phases are the timers (the wait, run out) and then the poll that
      // reads the bytes: the awaited output sits in the socket while the loop is blocked past the wait.
      await new Promise<void>((r) =>
        setImmediate(() => {
          order.frame({ type: "display", id: "r", out: [3, 0] });
          order.frame({ type: "done", id: "r", out: [6, 0] });
          writer.write("abc");
          const until = performance.now() + 100;
          while (performance.now() < until);
          r();
        }),
      );
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(afterRead, ["0:abc", "frame:display"]);
      // Its bytes never came: given up on after its own wait.
      assert.deepEqual(seen, ["0:abc", "frame:display", "frame:done"]);
    } finally {
      order.release();
      reader.destroy();
      writer.destroy();
      server.close();
    }
  });

  test("release sends the frames still waiting for output that never came, at once and in order", () => {
    const { order, seen } = ordering();
    order.output(0, Buffer.from("ab"));
    order.frame({ type: "display", id: "r", out: [5, 0] });
    order.frame({ type: "done", id: "r", out: [5, 0] });
    order.output(1, Buffer.from("e"));
    assert.deepEqual(seen, ["0:ab"]);
    order.release();
    assert.deepEqual(seen, ["0:ab", "frame:display", "frame:done", "1:e"]);
  });
});
