// Output and source artifacts: the canonical transcript from real Python output, paging that reconstructs it
// exactly, verification that rejects tampered, symlinked and over-permissive files, collisions that never
// overwrite, and the whole path through a real Pi session (preview, outputId, rerun by sourceId).
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { SupervisorHost } from "../../host/host.ts";
import {
  OutputArtifactCollisionError,
  outputIdOf,
  readOutputPage,
  saveOutputArtifact,
  type OutputRef,
} from "../../store/artifacts.ts";
import { PAGE_BYTES } from "../../store/artifact-fs.ts";
import { savesFailing, savesLanded } from "../../store/artifact-saves.ts";
import { CodeArtifactCollisionError, loadSource, readSourcePage, saveSource, sourceIdOf } from "../../store/sources.ts";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "../helpers/pi-session.ts";
import { waitUntil } from "../helpers/procs.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");

let host: SupervisorHost;
let cwd: string;
const run = (code: string) => host.run({ code, cwd, timeoutMs: 60_000 });

before(() => {
  cwd = tempDir("pcs-art-cwd-");
  host = new SupervisorHost();
});
after(async () => {
  await host.shutdown();
});

/** Reads every page from offset 0 and returns the concatenated text and the pages' byte sizes. */
async function readAll(outputId: string, root: string, limit?: number) {
  let offset = 0;
  let text = "";
  const sizes: number[] = [];
  for (;;) {
    const page = await readOutputPage(outputId, { offset, ...(limit ? { limit } : {}) }, root);
    assert.equal(page.offset, offset, "pages are contiguous");
    const bytes = Buffer.byteLength(page.text, "utf8");
    assert.equal(bytes, page.end - page.offset, "a page decodes to exactly its bytes (no split character)");
    assert.ok(!page.text.includes("\ufffd"), "no replacement character at a page edge");
    sizes.push(bytes);
    text += page.text;
    if (page.end >= page.ref.retainedBytes) return { text, sizes, ref: page.ref };
    offset = page.end;
  }
}

describe("output artifacts from real runs", () => {
  test("paging reconstructs the exact transcript with multibyte characters on page boundaries", async () => {
    const root = join(tempDir("pcs-art-"), "code-execution-output");
    // 1-, 2-, 3- and 4-byte characters in a 10-byte cycle: every page limit lands inside some character.
    const r = await run(
      "import sys\nfor i in range(6000):\n    print('a\u00e9\u20ac\ud834\udd1e' * 3, i)\nprint('tail on stderr \u00e9', file=sys.stderr)",
    );
    assert.equal(r.outcome.status, "success");
    const ref = await saveOutputArtifact(r.capture, root);
    const expected = `${r.stdout}[stderr]\n${r.stderr}`;
    assert.equal(ref.sha256, sha256(expected));
    assert.equal(ref.retainedBytes, Buffer.byteLength(expected));
    assert.equal(ref.emittedBytes, ref.retainedBytes);
    assert.equal(ref.lines, 6002);
    assert.equal(ref.retainedLines, 6002);
    assert.equal(ref.truncated, false);
    for (const limit of [undefined, PAGE_BYTES - 1, 7, 1]) {
      if (limit === 1 || limit === 7) {
        // Small pages over the first few hundred bytes only (each read verifies the whole file).
        let offset = 0;
        let text = "";
        while (offset < 300) {
          const page = await readOutputPage(ref.outputId, { offset, limit }, root);
          assert.ok(page.end > page.offset, "a page always holds at least one character");
          assert.ok(!page.text.includes("\ufffd"));
          text += page.text;
          offset = page.end;
        }
        assert.ok(expected.startsWith(text));
        continue;
      }
      const all = await readAll(ref.outputId, root, limit);
      assert.equal(sha256(all.text), ref.sha256, `limit ${limit}: the pages hash to the transcript's digest`);
      assert.ok(all.sizes.every((s) => s <= (limit ?? PAGE_BYTES)));
      assert.ok(
        all.sizes.slice(0, -1).some((s) => s < (limit ?? PAGE_BYTES)),
        "some page ended early rather than split a character",
      );
    }
  });

  test("an offset inside a character moves back to its start; limits above 20 KiB are capped", async () => {
    const root = join(tempDir("pcs-art-"), "out");
    const r = await run("print('\u20ac' * 20000)");
    const ref = await saveOutputArtifact(r.capture, root);
    const page = await readOutputPage(ref.outputId, { offset: 4, limit: 1_000_000 }, root);
    assert.equal(page.offset, 3);
    assert.equal(page.end - page.offset, PAGE_BYTES - (PAGE_BYTES % 3));
    await assert.rejects(readOutputPage(ref.outputId, { offset: ref.retainedBytes + 1 }, root), /past the end/);
    const end = await readOutputPage(ref.outputId, { offset: ref.retainedBytes }, root);
    assert.equal(end.text, "");
  });

  test("the [stderr] boundary gets its own line; counts are exact", async () => {
    const root = join(tempDir("pcs-art-"), "out");
    const r = await run("import sys\nsys.stdout.write('no newline')\nsys.stdout.flush()\nsys.stderr.write('e1\\ne2');");
    const ref = await saveOutputArtifact(r.capture, root);
    const text = readFileSync(join(root, `${ref.outputId}.out`), "utf8");
    assert.equal(text, "no newline\n[stderr]\ne1\ne2");
    assert.equal(ref.lines, 4);
    assert.equal(ref.emittedBytes, Buffer.byteLength(text));
    const onlyErr = await run("import sys\nsys.stderr.write('x\\n');");
    const ref2 = await saveOutputArtifact(onlyErr.capture, root);
    assert.equal(readFileSync(join(root, `${ref2.outputId}.out`), "utf8"), "[stderr]\nx\n");
    assert.equal(ref2.lines, 2);
    // Stderr only: the boundary is the bare `[stderr]` line in the count too, and the artifact reads back.
    assert.equal(ref2.emittedBytes, "[stderr]\nx\n".length);
    assert.equal(ref2.retainedBytes, ref2.emittedBytes);
    assert.equal(ref2.truncated, false);
    const back = await readAll(ref2.outputId, root);
    assert.equal(back.text, "[stderr]\nx\n");
    const first = await readOutputPage(ref.outputId, {}, root);
    assert.equal(first.text, "no newline\n[stderr]\ne1\ne2");
  });

  test("ID, sidecar, modes: 12 hex from the metadata digest, 0700 directory, 0600 files, no paths", async () => {
    const base = tempDir("pcs-art-");
    const root = join(base, "out");
    const r = await run("print('x' * 100)");
    const ref = await saveOutputArtifact(r.capture, root);
    assert.match(ref.outputId, /^[0-9a-f]{12}$/);
    const { outputId, ...meta } = ref;
    assert.equal(outputIdOf(meta), outputId);
    assert.equal(statSync(root).mode & 0o777, 0o700);
    assert.deepEqual(readdirSync(root).sort(), [`${outputId}.json`, `${outputId}.out`]);
    for (const f of readdirSync(root)) assert.equal(statSync(join(root, f)).mode & 0o777, 0o600);
    const sidecar = readFileSync(join(root, `${outputId}.json`), "utf8");
    assert.ok(!sidecar.includes(base) && !sidecar.includes(tmpdir()), "no machine-specific paths in the sidecar");
    assert.deepEqual(JSON.parse(sidecar), { format: "pi-code-execution-output/1", ...meta });
  });

  test("concurrent identical saves produce one file and the same reference", async () => {
    const root = join(tempDir("pcs-art-"), "out");
    const r = await run("for i in range(50000): print(i)");
    const refs = await Promise.all(Array.from({ length: 6 }, () => saveOutputArtifact(r.capture, root)));
    for (const ref of refs) assert.deepEqual(ref, refs[0]);
    assert.deepEqual(readdirSync(root).sort(), [`${refs[0].outputId}.json`, `${refs[0].outputId}.out`]);
  });

  test("output past the retention limit is counted exactly; the artifact says it is truncated", async () => {
    // The host's limit is 64 MiB (test/memory/output-1gib.test.ts); a RunOutput with a small limit stands in for it
    // here.
    const { RunOutput } = await import("../../lib/run-output.ts");
    const out = new RunOutput(1000);
    out.write("stdout", Buffer.from("a".repeat(999) + "\n" + "b\n".repeat(500)));
    out.write("stderr", Buffer.from("Traceback...\nValueError: x\n"));
    const c = out.collect();
    const root = join(tempDir("pcs-art-"), "out");
    const ref = await saveOutputArtifact(c.capture, root);
    assert.equal(ref.truncated, true);
    assert.equal(ref.emittedBytes, 1000 + 1000 + 9 + Buffer.byteLength("Traceback...\nValueError: x\n"));
    assert.equal(ref.lines, 1 + 500 + 1 + 2);
    assert.equal(ref.retainedBytes, 1000);
    assert.equal(ref.retainedLines, 1);
    assert.equal(readFileSync(join(root, `${ref.outputId}.out`), "utf8"), "a".repeat(999) + "\n");
    const all = await readAll(ref.outputId, root);
    assert.equal(sha256(all.text), ref.sha256);
  });
});

describe("output artifact verification", () => {
  let root: string;
  let ref: OutputRef;
  let outFile: string;
  let jsonFile: string;
  const fresh = async () => {
    root = join(tempDir("pcs-art-"), "out");
    ref = await saveOutputArtifact((await run("print('verified ' * 1000)")).capture, root);
    outFile = join(root, `${ref.outputId}.out`);
    jsonFile = join(root, `${ref.outputId}.json`);
  };

  test("a tampered transcript (same size) is rejected", async () => {
    await fresh();
    const bytes = readFileSync(outFile);
    bytes[10] ^= 1;
    chmodSync(outFile, 0o600);
    writeFileSync(outFile, bytes);
    await assert.rejects(readOutputPage(ref.outputId, {}, root), /digest/);
  });
  test("a truncated transcript is rejected", async () => {
    await fresh();
    writeFileSync(outFile, readFileSync(outFile).subarray(0, 100));
    await assert.rejects(readOutputPage(ref.outputId, {}, root), /100 bytes, its metadata says/);
  });
  test("a sidecar whose metadata no longer hashes to its ID is rejected", async () => {
    await fresh();
    const m = JSON.parse(readFileSync(jsonFile, "utf8"));
    m.emittedBytes += 1;
    m.retainedBytes += 1;
    m.truncated = true;
    writeFileSync(jsonFile, JSON.stringify(m));
    await assert.rejects(readOutputPage(ref.outputId, {}, root), /does not match its ID/);
  });
  test("a symlinked transcript is refused, even to an identical file", async () => {
    await fresh();
    const elsewhere = join(tempDir("pcs-art-"), "copy.out");
    renameSync(outFile, elsewhere);
    symlinkSync(elsewhere, outFile);
    await assert.rejects(readOutputPage(ref.outputId, {}, root), /symlink/);
  });
  test("a symlinked sidecar is refused", async () => {
    await fresh();
    const elsewhere = join(tempDir("pcs-art-"), "copy.json");
    renameSync(jsonFile, elsewhere);
    symlinkSync(elsewhere, jsonFile);
    await assert.rejects(readOutputPage(ref.outputId, {}, root), /symlink/);
  });
  test("over-permissive files are refused", async () => {
    await fresh();
    chmodSync(outFile, 0o644);
    await assert.rejects(readOutputPage(ref.outputId, {}, root), /readable or writable by others/);
    chmodSync(outFile, 0o600);
    chmodSync(jsonFile, 0o660);
    await assert.rejects(readOutputPage(ref.outputId, {}, root), /readable or writable by others/);
  });
  test("the artifact directory replaced by a symlink (to an identical copy) is refused", async () => {
    await fresh();
    const copy = join(tempDir("pcs-art-"), "real");
    renameSync(root, copy);
    symlinkSync(copy, root);
    await assert.rejects(
      readOutputPage(ref.outputId, {}, root),
      /output artifact directory is not a directory \(symlink\?\)/,
    );
    assert.ok((await readOutputPage(ref.outputId, {}, copy)).text.startsWith("verified "), "the copy itself is fine");
  });
  test("a directory in place of the transcript is not a regular file", async () => {
    await fresh();
    unlinkSync(outFile);
    mkdirSync(outFile);
    await assert.rejects(readOutputPage(ref.outputId, {}, root), /not a regular file/);
  });
  test("missing artifacts and malformed IDs are clear errors", async () => {
    await fresh();
    unlinkSync(outFile);
    await assert.rejects(readOutputPage(ref.outputId, {}, root), /missing/);
    await assert.rejects(readOutputPage("../../etc/pa", {}, root), /not an outputId/);
    await assert.rejects(readOutputPage("0123456789ab", {}, root), /missing/);
  });
  test("a save never overwrites a different artifact under the same ID", async () => {
    await fresh();
    const bytes = readFileSync(outFile);
    bytes[0] ^= 1;
    writeFileSync(outFile, bytes);
    const again = await run("print('verified ' * 1000)");
    await assert.rejects(saveOutputArtifact(again.capture, root), OutputArtifactCollisionError);
    assert.deepEqual(readFileSync(outFile), bytes, "the existing file is untouched");
  });
});

describe("saved sources", () => {
  test("sourceId is the SHA-256 prefix; saving is idempotent and private", async () => {
    const root = join(tempDir("pcs-src-"), "code-execution");
    const code = "print('h\u00e9llo')\n";
    const id = await saveSource(code, root);
    assert.equal(id, sha256(Buffer.from(code)).slice(0, 12));
    assert.equal(id, sourceIdOf(code));
    assert.equal(await saveSource(code, root), id);
    assert.deepEqual(readdirSync(root), [`${id}.py`]);
    assert.equal(statSync(join(root, `${id}.py`)).mode & 0o777, 0o600);
    assert.equal(statSync(root).mode & 0o777, 0o700);
    assert.equal(await loadSource(id, root), code);
  });
  test("sourceIdOf answers a repeated script from its memo with the same ID, and scripts past it by hashing", () => {
    const short = Array.from({ length: 600 }, (_, i) => `v = ${i}  # \u00e9`);
    const long = "x = 1\n" + "#".repeat(5000);
    for (let round = 0; round < 2; round++) {
      for (const code of [...short, long]) assert.equal(sourceIdOf(code), sha256(Buffer.from(code)).slice(0, 12));
    }
  });
  test("a different source under an existing ID is a collision and is not overwritten", async () => {
    const root = join(tempDir("pcs-src-"), "code-execution");
    const code = "x = 1\n";
    const id = sourceIdOf(code);
    mkdirSync(root, { recursive: true, mode: 0o700 });
    writeFileSync(join(root, `${id}.py`), "x = 2\n", { mode: 0o600 });
    await assert.rejects(saveSource(code, root), CodeArtifactCollisionError);
    assert.equal(readFileSync(join(root, `${id}.py`), "utf8"), "x = 2\n");
    await assert.rejects(loadSource(id, root), /does not match its ID/);
  });
  test("symlinked or over-permissive sources are refused", async () => {
    const root = join(tempDir("pcs-src-"), "code-execution");
    const id = await saveSource("print(1)\n", root);
    const file = join(root, `${id}.py`);
    chmodSync(file, 0o604);
    await assert.rejects(loadSource(id, root), /readable or writable by others/);
    const elsewhere = join(tempDir("pcs-src-"), "x.py");
    renameSync(file, elsewhere);
    chmodSync(elsewhere, 0o600);
    symlinkSync(elsewhere, file);
    await assert.rejects(loadSource(id, root), /symlink/);
  });
  test("the source directory replaced by a symlink (to an identical copy) is refused", async () => {
    const root = join(tempDir("pcs-src-"), "code-execution");
    const id = await saveSource("print('via a link')\n", root);
    const copy = join(tempDir("pcs-src-"), "real");
    renameSync(root, copy);
    symlinkSync(copy, root);
    await assert.rejects(loadSource(id, root), /directory is not a directory \(symlink\?\)/);
    await assert.rejects(readSourcePage(id, {}, root), /directory is not a directory \(symlink\?\)/);
    assert.equal(await loadSource(id, copy), "print('via a link')\n", "the copy itself is fine");
  });
  test("pages never split a character and reconstruct the source", async () => {
    const root = join(tempDir("pcs-src-"), "code-execution");
    const code = "# \ud834\udd1e\u20ac\u00e9\n".repeat(5000);
    const id = await saveSource(code, root);
    let offset = 0;
    let text = "";
    for (;;) {
      const page = await readSourcePage(id, { offset }, root);
      assert.ok(page.end - page.offset <= PAGE_BYTES);
      assert.ok(!page.text.includes("\ufffd"));
      text += page.text;
      if (page.end >= page.totalBytes) break;
      offset = page.end;
    }
    assert.equal(text, code);
  });
});

// ---- through a real Pi session ----

async function callTool(
  pi: PiHarness,
  name: string,
  args: Record<string, string | number>,
): Promise<ToolResultMessage> {
  const before = pi.toolResults().length;
  pi.faux.setResponses([
    fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" }),
    fauxAssistantMessage("done"),
  ]);
  await pi.session.prompt("go");
  const results = pi.toolResults().slice(before);
  assert.equal(results.length, 1);
  return results[0];
}

describe("code_execution output and sources in a Pi session", () => {
  let pi: PiHarness;
  before(async () => {
    pi = await startPi();
  });
  after(async () => {
    await pi.dispose();
  });
  const outputDir = () => join(pi.agentDir, "code-execution-output");

  test("a complete small output carries no ID and writes no artifact; the source is saved", async () => {
    const [r] = await pi.callTools([{ code: "print('small')" }]);
    assert.equal(textOf(r), "small\n");
    assert.equal(r.details.output, undefined);
    assert.ok(!readdirSync(pi.agentDir).includes("code-execution-output"));
    assert.equal(r.details.sourceId, sourceIdOf("print('small')"));
    assert.equal(
      readFileSync(join(pi.agentDir, "code-execution", `${r.details.sourceId}.py`), "utf8"),
      "print('small')",
    );
  });

  test("large output: a 20 KiB head-tail preview that keeps the traceback, then the outputId; paging recovers it", async () => {
    const code = "for i in range(100000):\n    print('line', i)\nraise ValueError('the failure at the end')";
    const [r] = await pi.callTools([{ code }]);
    const text = textOf(r);
    assert.equal(r.isError, true);
    assert.ok(Buffer.byteLength(text) <= 20 * 1024, `${Buffer.byteLength(text)} bytes`);
    assert.match(text, /^line 0\nline 1\n/);
    assert.match(text, /ValueError: the failure at the end\n/);
    // The tail crosses the channel boundary: the end of stdout, the `[stderr]` line, then the traceback.
    assert.match(text, /\nline 99999\n\[stderr\]\nTraceback \(most recent call last\):\n/);
    assert.ok(!text.includes("below is the end of stderr"), "the boundary is shown, so no note is needed");
    const out = r.details.output as OutputRef;
    assert.ok(text.endsWith(`\noutputId: ${out.outputId}`));
    assert.match(text, new RegExp(`the output was ${out.emittedBytes} bytes, ${out.lines} lines`));
    assert.match(text, /all \d+ bytes are saved: read them with code_execution_output/);
    const omitted = Number(/\[\.\.\. (\d+) bytes omitted/.exec(text)![1]);
    // The head and the tail each end with a line break, which the marker lines replace.
    const head = text.split("\n[... ")[0] + "\n";
    const tail = text.split(" ...]\n")[1].split("\n[all ")[0] + "\n";
    assert.equal(
      omitted + Buffer.byteLength(head) + Buffer.byteLength(tail),
      out.emittedBytes,
      "shown + omitted = emitted",
    );
    const omittedLines = Number(/omitted \((\d+) whole lines\)/.exec(text)![1]);
    const shownLines = head.split("\n").length - 1 + tail.split("\n").length - 1;
    assert.equal(omittedLines + shownLines, out.lines, "shown + omitted lines = emitted lines");
    assert.equal(r.details.stdoutBytes + r.details.stderrBytes + "[stderr]\n".length, out.emittedBytes);

    let offset = 0;
    let transcript = "";
    let pages = 0;
    for (;;) {
      const page = await callTool(pi, "code_execution_output", { outputId: out.outputId, offset });
      assert.equal(page.isError, false, textOf(page));
      const t = textOf(page);
      const nl = t.indexOf("\n");
      transcript += t.slice(nl + 1);
      pages++;
      if (page.details.done) {
        assert.match(t.slice(0, nl), /end of output\]$/);
        break;
      }
      assert.match(t.slice(0, nl), new RegExp(`next offset ${page.details.nextOffset}\\]$`));
      offset = page.details.nextOffset;
      if (pages === 3) {
        // Jump to the last page: the pager's offsets are stable, any of them can be used later.
        offset = out.retainedBytes - 100;
        transcript = "";
      }
    }
    assert.ok(transcript.endsWith("ValueError: the failure at the end\n"));
    assert.equal(readdirSync(outputDir()).length, 2);
  });

  test("when both channels are long, the preview says its tail is stderr", async () => {
    const [r] = await pi.callTools([
      { code: "import sys\nfor i in range(3000):\n    print('out', i)\n    print('err', i, file=sys.stderr)" },
    ]);
    const text = textOf(r);
    assert.ok(Buffer.byteLength(text) <= 20 * 1024);
    assert.match(text, /^out 0\n/);
    assert.match(text, /lines; below is the end of stderr \.\.\.\]\n(err \d+\n)+err 2999\n\[all/);
  });

  test("code_execution_output: tampering is a clear tool error", async () => {
    const [r] = await pi.callTools([{ code: "print('z' * 30000)" }]);
    const id = r.details.output.outputId;
    // The transcript is written just after the result.
    assert.ok(await waitUntil(() => existsSync(join(outputDir(), `${id}.json`)), 5000));
    chmodSync(join(outputDir(), `${id}.out`), 0o644);
    const bad = await callTool(pi, "code_execution_output", { outputId: id });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), new RegExp(`Output ${id} cannot be read: .*readable or writable by others`));
    const missing = await callTool(pi, "code_execution_output", { outputId: "00000000abcd" });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /missing/);
  });

  test("the saves of the extension Pi loaded (its own copy of these modules) are this process's: savesLanded waits for them", async () => {
    // Pi imports the extension without a module cache, so its store/artifact-saves.ts is not this file's copy. The
    // save is held until Pi is done with the result, so at tool_execution_end it has not been written yet.
    let landed: Promise<[boolean, boolean]> | undefined;
    const off = pi.session.subscribe((e: any) => {
      if (e.type !== "tool_execution_end" || landed) return;
      const file = join(outputDir(), `${e.result.details.output.outputId}.json`);
      const before = existsSync(file);
      landed = savesLanded().then(() => [before, existsSync(file)]);
    });
    try {
      await pi.callTools([{ code: `print('${Date.now()}' * 5000)` }]);
    } finally {
      off();
    }
    assert.deepEqual(await landed, [false, true]);
  });

  test("an output saved after its result: read at once it waits for the write; a failed write is said, then results say it", async () => {
    const code = (c: string) => `print('${c}' * 30000)`;
    const [first] = await pi.callTools([{ code: code("a") }]);
    const page = await callTool(pi, "code_execution_output", { outputId: first.details.output.outputId });
    assert.equal(page.isError, false, textOf(page));
    assert.match(textOf(page), /a{1000}/);
    // The output folder cannot be made: the first result names its outputId, whose read says why it is missing;
    // the next result waits for its save and says it could not be saved. Saves of the tests before this one land
    // first: one still in flight under load failed against the replaced folder, so `b` already waited for its own.
    await savesLanded();
    // The premise: the saves so far all landed well (a failure would make the next result wait for its own save).
    assert.equal(savesFailing(), false, "a save before the folder was replaced failed");
    const aside = `${outputDir()}.aside`;
    renameSync(outputDir(), aside);
    writeFileSync(outputDir(), "not a folder");
    try {
      const [failed] = await pi.callTools([{ code: code("b") }]);
      assert.ok(
        failed.details.output,
        `an outputId, its save still to come: ${JSON.stringify(failed.details).slice(0, 600)} ${textOf(failed).slice(-400)}`,
      );
      const read = await callTool(pi, "code_execution_output", { outputId: failed.details.output.outputId });
      assert.equal(read.isError, true);
      assert.match(textOf(read), /could not be saved: /);
      const [next] = await pi.callTools([{ code: code("c") }]);
      assert.equal(next.details.output, undefined);
      assert.match(textOf(next), /\[the full output could not be saved \(.+\); only this preview is available\]/);
    } finally {
      unlinkSync(outputDir());
      renameSync(aside, outputDir());
    }
    // Saving works again: the next result waits for its save once more, then saves go back after results.
    for (const c of ["d", "e"]) {
      const [ok] = await pi.callTools([{ code: code(c) }]);
      const again = await callTool(pi, "code_execution_output", { outputId: ok.details.output.outputId });
      assert.equal(again.isError, false, textOf(again));
      assert.match(textOf(again), new RegExp(`${c}{1000}`));
    }
  });

  test("sourceId reruns the exact saved script; code_execution_source reads it without running", async () => {
    const code = "import os\nprint('ran', os.getpid() > 0)";
    const [first] = await pi.callTools([{ code }]);
    const id = first.details.sourceId;
    const [again] = await pi.callTools([{ sourceId: id }]);
    assert.equal(textOf(again), "ran True\n");
    assert.equal(again.details.sourceId, id);
    const src = await callTool(pi, "code_execution_source", { sourceId: id });
    assert.equal(src.isError, false);
    assert.equal(
      textOf(src),
      `[source ${id}, 2 lines: bytes 0-${Buffer.byteLength(code) - 1} of ${Buffer.byteLength(code)}; end of source]\n${code}`,
    );
    const [both, neither] = await pi.callTools([{ code: "1", sourceId: id }, { session: "s" }]);
    assert.match(textOf(both), /either `code` or `sourceId`, not both/);
    assert.match(textOf(neither), /`code`.*or `sourceId`.*is required/);
  });

  test("a missing saved source is recovered from this branch; an unknown one is an error that says not to retry", async () => {
    const code = "print('recovered from the branch')";
    const [first] = await pi.callTools([{ code }]);
    const file = join(pi.agentDir, "code-execution", `${first.details.sourceId}.py`);
    unlinkSync(file);
    const [again] = await pi.callTools([{ sourceId: first.details.sourceId }]);
    assert.equal(textOf(again), "recovered from the branch\n");
    assert.equal(readFileSync(file, "utf8"), code, "saved again");
    const [unknown] = await pi.callTools([{ sourceId: "0123456789ab" }]);
    assert.equal(unknown.isError, true);
    assert.match(textOf(unknown), /not available.*Do not retry/);
    const src = await callTool(pi, "code_execution_source", { sourceId: "0123456789ab" });
    assert.match(textOf(src), /Do not retry/);
  });

  test("a tampered saved source is not run", async () => {
    const code = "print('original')";
    const [first] = await pi.callTools([{ code }]);
    const file = join(pi.agentDir, "code-execution", `${first.details.sourceId}.py`);
    writeFileSync(file, "print('evil')");
    const [again] = await pi.callTools([{ sourceId: first.details.sourceId }]);
    assert.equal(again.isError, true);
    assert.match(textOf(again), /does not match its ID.*Do not retry/);
    assert.doesNotMatch(textOf(again), /evil/);
  });
});
