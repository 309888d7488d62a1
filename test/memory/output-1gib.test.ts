// 1 GiB of output through a real Pi session: every byte and line counted, 64 MiB retained and saved, the
// traceback after it still reaches the model, and the host's memory stays bounded (RSS and heap sampled while
// the run streams).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createReadStream, existsSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { RETAIN_LIMIT } from "../../lib/run-output.ts";
import { startPi, textOf, type PiHarness } from "../helpers/pi-session.ts";
import { waitUntil } from "../helpers/procs.ts";

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

let pi: PiHarness;
before(async () => {
  pi = await startPi();
});
after(async () => {
  await pi.dispose();
  // 64 MiB per run of the suite would pile up in the temp directory.
  rmSync(join(pi.agentDir, "code-execution-output"), { recursive: true, force: true });
});

test(
  "1 GiB of output: exact counts, 64 MiB saved, the traceback kept, bounded host memory",
  { timeout: 300_000 },
  async () => {
    // 1024-byte lines, 1 MiB per write, then a failure on stderr.
    const code = [
      "import sys",
      "block = (b'x' * 1023 + b'\\n') * 1024",
      "for _ in range(1024):",
      "    sys.stdout.buffer.write(block)",
      "sys.stdout.flush()",
      "raise RuntimeError('after a gibibyte')",
    ].join("\n");
    global.gc?.();
    const base = process.memoryUsage();
    let peakRss = base.rss;
    let peakHeap = base.heapUsed;
    let peakBuffers = base.arrayBuffers;
    const sampler = setInterval(() => {
      const m = process.memoryUsage();
      peakRss = Math.max(peakRss, m.rss);
      peakHeap = Math.max(peakHeap, m.heapUsed);
      peakBuffers = Math.max(peakBuffers, m.arrayBuffers);
    }, 20);
    const t0 = performance.now();
    let r;
    try {
      [r] = await pi.callTools([{ code, timeout: 280 }]);
    } finally {
      clearInterval(sampler);
    }
    const seconds = (performance.now() - t0) / 1000;
    const growth = {
      rss: (peakRss - base.rss) / MiB,
      heap: (peakHeap - base.heapUsed) / MiB,
      buffers: (peakBuffers - base.arrayBuffers) / MiB,
    };
    console.log(
      `# 1 GiB in ${seconds.toFixed(1)} s (${(1024 / seconds).toFixed(0)} MiB/s); peak growth: rss ${growth.rss.toFixed(0)} MiB, heap ${growth.heap.toFixed(0)} MiB, buffers ${growth.buffers.toFixed(0)} MiB`,
    );

    const text = textOf(r);
    const d = r.details;
    assert.equal(d.status, "runtime_error");
    assert.equal(d.stdoutBytes, GiB, "every byte counted");
    assert.equal(d.stdoutTruncated, true);
    assert.ok(Buffer.byteLength(text) <= 20 * 1024);
    assert.match(text, /^x{1023}\n/);
    assert.match(text, /RuntimeError: after a gibibyte\n/, "the traceback after the retention limit reaches the model");
    const out = d.output;
    assert.equal(out.emittedBytes, GiB + "[stderr]\n".length + d.stderrBytes);
    assert.equal(out.lines, 1024 * 1024 + 1 + text.split("[stderr]\n")[1].split("\n[the saved")[0].split("\n").length);
    assert.equal(out.truncated, true);
    assert.equal(out.retainedBytes, RETAIN_LIMIT);
    assert.equal(out.retainedLines, RETAIN_LIMIT / 1024);
    assert.match(
      text,
      new RegExp(`the saved output is truncated: ${RETAIN_LIMIT} of ${out.emittedBytes} bytes were kept`),
    );
    assert.ok(text.endsWith(`outputId: ${out.outputId}`));

    const file = join(pi.agentDir, "code-execution-output", `${out.outputId}.out`);
    // The transcript is written just after the result: its sidecar lands last.
    assert.ok(await waitUntil(() => existsSync(file.replace(/\.out$/, ".json")), 60_000), "the output was saved");
    assert.equal(statSync(file).size, RETAIN_LIMIT);
    const hash = createHash("sha256");
    for await (const chunk of createReadStream(file)) hash.update(chunk);
    assert.equal(hash.digest("hex"), out.sha256);

    // Retention is 64 MiB; the rest is chunks in flight and garbage not yet collected. Unbounded retention would
    // be 1 GiB; decoding the retained output to strings would show in the heap.
    assert.ok(growth.rss < 256, `rss grew ${growth.rss.toFixed(0)} MiB`);
    assert.ok(growth.heap < 64, `heap grew ${growth.heap.toFixed(0)} MiB`);
  },
);
