// The output artifact store on its own (store/artifacts.ts, store/artifact-fs.ts), fast: captures built from real
// output buffers (no Python), real files in temporary directories. Exact metadata for every shape of transcript,
// every malformed sidecar refused, pages on character boundaries, and the file rules (modes, symlinks, create once).
// Transcripts from real runs and through Pi are in test/store/artifacts.test.ts; races in
// test/security/hostile-artifacts.test.ts.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { RunOutput } from "../../lib/run-output.ts";
import {
  ArtifactUnavailableError,
  charEnd,
  charStart,
  checkDir,
  checkPage,
  ensurePrivateDir,
  isContinuation,
  openVerified,
  PAGE_BYTES,
  pageBounds,
  placeOnce,
  readVerified,
  writeTemp,
} from "../../store/artifact-fs.ts";
import {
  emittedTranscript,
  OutputArtifactCollisionError,
  outputIdOf,
  outputRoot,
  readOutputPage,
  readSidecar,
  outputArtifact,
  retainedTranscript,
  saveOutputArtifact,
  type OutputMetadata,
} from "../../store/artifacts.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");

/** A capture of what a run wrote, channel by channel, in chunks; `limit` is the retention. */
function capture(writes: ["stdout" | "stderr", string | Buffer][], limit?: number) {
  const out = new RunOutput(limit);
  for (const [channel, data] of writes) out.write(channel, Buffer.from(data));
  return out.collect().capture;
}

const unavailable =
  (re: RegExp, missing = false) =>
  (e: Error) =>
    e instanceof ArtifactUnavailableError &&
    e.name === "ArtifactUnavailableError" &&
    re.test(e.message) &&
    e.missing === missing;

describe("the transcript and its counts", () => {
  const cases: { name: string; writes: ["stdout" | "stderr", string][]; text: string; lines: number }[] = [
    { name: "nothing", writes: [], text: "", lines: 0 },
    { name: "stdout with a final newline", writes: [["stdout", "a\nb\n"]], text: "a\nb\n", lines: 2 },
    { name: "stdout without one", writes: [["stdout", "a\nb"]], text: "a\nb", lines: 2 },
    { name: "stderr only", writes: [["stderr", "e\n"]], text: "[stderr]\ne\n", lines: 2 },
    { name: "stderr only, no newline", writes: [["stderr", "e"]], text: "[stderr]\ne", lines: 2 },
    {
      name: "both, stdout ends its line",
      writes: [
        ["stdout", "o\n"],
        ["stderr", "e"],
      ],
      text: "o\n[stderr]\ne",
      lines: 3,
    },
    {
      name: "both, stdout does not",
      writes: [
        ["stdout", "o"],
        ["stderr", "e\n"],
      ],
      text: "o\n[stderr]\ne\n",
      lines: 3,
    },
  ];
  for (const c of cases) {
    test(`${c.name}: emitted and retained transcripts, saved exactly`, async () => {
      const cap = capture(c.writes);
      assert.deepEqual(emittedTranscript(cap.stdout, cap.stderr), { bytes: Buffer.byteLength(c.text), lines: c.lines });
      assert.equal(Buffer.concat(retainedTranscript(cap.stdout, cap.stderr)).toString(), c.text);
      assert.ok(
        retainedTranscript(cap.stdout, cap.stderr).every((b) => b.length > 0),
        "no empty parts",
      );
      const root = join(tempDir("pcs-store-"), "out");
      const ref = await saveOutputArtifact(cap, root);
      assert.deepEqual(
        { ...ref, outputId: undefined },
        {
          outputId: undefined,
          sha256: sha256(c.text),
          emittedBytes: Buffer.byteLength(c.text),
          lines: c.lines,
          retainedBytes: Buffer.byteLength(c.text),
          retainedLines: c.lines,
          truncated: false,
        },
      );
      assert.equal(readFileSync(join(root, `${ref.outputId}.out`), "utf8"), c.text);
      const page = await readOutputPage(ref.outputId, {}, root);
      assert.deepEqual([page.offset, page.end, page.text], [0, Buffer.byteLength(c.text), c.text]);
      assert.deepEqual(await readSidecar(root, ref.outputId), ref);
    });
  }

  test("truncated by the retention: the counts say what was emitted, the file holds what was kept", async () => {
    // 8 bytes kept of stdout's 12; stderr entirely dropped.
    const cap = capture(
      [
        ["stdout", "1234567\n"],
        ["stdout", "89\nab"],
        ["stderr", "err\n"],
      ],
      10,
    );
    // stdout does not end its line: the boundary is "\n[stderr]\n" (10 bytes).
    assert.deepEqual(emittedTranscript(cap.stdout, cap.stderr), { bytes: 13 + 10 + 4, lines: 3 + 1 + 1 });
    const root = join(tempDir("pcs-store-"), "out");
    const ref = await saveOutputArtifact(cap, root);
    assert.equal(readFileSync(join(root, `${ref.outputId}.out`), "utf8"), "1234567\n89");
    assert.deepEqual([ref.retainedBytes, ref.retainedLines, ref.truncated], [10, 2, true]);
    assert.deepEqual([ref.emittedBytes, ref.lines], [27, 5]);
    assert.equal((await readOutputPage(ref.outputId, {}, root)).text, "1234567\n89");
  });

  test("stdout truncated, no stderr: truncated", () => {
    const ref = outputArtifact(capture([["stdout", "123456\n"]], 4)).ref;
    assert.deepEqual([ref.retainedBytes, ref.emittedBytes, ref.truncated], [4, 7, true]);
  });

  test("stderr truncated, stdout whole: the retained boundary follows the retained stdout", async () => {
    const cap = capture(
      [
        ["stdout", "out"],
        ["stderr", "0123456789"],
      ],
      8,
    );
    const text = Buffer.concat(retainedTranscript(cap.stdout, cap.stderr)).toString();
    assert.equal(text, "out\n[stderr]\n01234");
    const ref = await saveOutputArtifact(cap, join(tempDir("pcs-store-"), "out"));
    assert.equal(ref.truncated, true);
    assert.equal(ref.retainedLines, 3);
  });

  test("a retained stdout prefix that ends in a newline gets the bare boundary line", () => {
    const cap = capture(
      [
        ["stdout", "ab\ncd"],
        ["stderr", "e"],
      ],
      4,
    );
    // Only "ab\nc" of stdout is kept, and nothing of stderr: no boundary at all.
    assert.equal(Buffer.concat(retainedTranscript(cap.stdout, cap.stderr)).toString(), "ab\nc");
    const kept = capture(
      [
        ["stdout", "ab\n"],
        ["stdout", "cd"],
        ["stderr", "e"],
      ],
      6,
    );
    assert.equal(Buffer.concat(retainedTranscript(kept.stdout, kept.stderr)).toString(), "ab\ncd\n[stderr]\ne");
  });
});

describe("the digest, hashed while stdout arrives", () => {
  /** What the reference must say, computed from scratch from the retained transcript. */
  function fromScratch(cap: ReturnType<typeof capture>) {
    const bytes = Buffer.concat(retainedTranscript(cap.stdout, cap.stderr));
    let newlines = 0;
    for (const b of bytes) if (b === 0x0a) newlines += 1;
    const lines = newlines + (bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a ? 1 : 0);
    return { sha256: sha256(bytes), retainedBytes: bytes.length, retainedLines: lines };
  }
  const pick = ({ sha256, retainedBytes, retainedLines }: OutputMetadata) => ({ sha256, retainedBytes, retainedLines });

  // Chunk sizes on both sides of the 16 KiB where hashing starts, stderr interleaved, retention cutting a chunk.
  const shapes: { name: string; writes: ["stdout" | "stderr", Buffer][]; limit?: number }[] = [
    { name: "small stdout only", writes: [["stdout", Buffer.from("a\nb")]] },
    {
      name: "1 MiB of stdout in 64 KiB chunks",
      writes: Array.from({ length: 16 }, (_, i) => ["stdout", Buffer.alloc(64 * 1024, i % 3 ? "x" : "y\n")]),
    },
    {
      name: "many small lines crossing 16 KiB, stderr between them, stdout not ending its line",
      writes: [
        ...Array.from({ length: 900 }, (_, i): ["stdout" | "stderr", Buffer] =>
          i % 97 === 0 ? ["stderr", Buffer.from(`err ${i}\n`)] : ["stdout", Buffer.from(`line ${i}\n`.repeat(3))],
        ),
        ["stdout", Buffer.from("no newline")],
      ],
    },
    {
      name: "retention cuts a chunk past the hashing threshold; stderr dropped",
      writes: [
        ["stdout", Buffer.alloc(20 * 1024, "a")],
        ["stderr", Buffer.from("kept\n")],
        ["stdout", Buffer.alloc(30 * 1024, "b\n")],
        ["stderr", Buffer.from("dropped\n")],
      ],
      limit: 40 * 1024,
    },
    { name: "stderr only, large", writes: [["stderr", Buffer.alloc(100 * 1024, "e\n")]] },
  ];
  for (const shape of shapes) {
    test(`${shape.name}: the reference equals a digest of the whole retained transcript`, () => {
      const cap = capture(shape.writes, shape.limit);
      const ref = outputArtifact(cap).ref;
      assert.deepEqual(pick(ref), fromScratch(cap));
      assert.deepEqual(pick(outputArtifact(cap).ref), pick(ref), "asking twice gives the same digest");
    });
  }

  test("output written after a digest was taken is covered by the next one", () => {
    const out = new RunOutput();
    out.write("stdout", Buffer.alloc(40 * 1024, "a"));
    const before = outputArtifact(out.collect().capture).ref.sha256;
    out.write("stdout", Buffer.from("more\n"));
    const later = out.collect().capture;
    assert.equal(outputArtifact(later).ref.sha256, fromScratch(later).sha256);
    assert.notEqual(outputArtifact(later).ref.sha256, before);
  });

  test("stdout past 16 KiB is hashed as it arrives, not read again on the result path", () => {
    // Observable through a chunk changed in memory after it was written: the digest holds the bytes as written.
    const out = new RunOutput();
    const chunk = Buffer.alloc(64 * 1024, "x");
    out.write("stdout", chunk);
    chunk.fill("y");
    const ref = outputArtifact(out.collect().capture).ref;
    assert.equal(ref.sha256, sha256(Buffer.alloc(64 * 1024, "x")));
  });
});

describe("saving", () => {
  test("files are private, the sidecar is the canonical metadata, the ID hashes it", async () => {
    const base = tempDir("pcs-store-");
    const root = join(base, "a", "out");
    const ref = await saveOutputArtifact(capture([["stdout", "x\n"]]), root);
    const { outputId, ...meta } = ref;
    assert.equal(outputIdOf(meta), outputId);
    assert.match(outputId, /^[0-9a-f]{12}$/);
    assert.equal(statSync(root).mode & 0o777, 0o700);
    assert.deepEqual(readdirSync(root).sort(), [`${outputId}.json`, `${outputId}.out`]);
    for (const f of readdirSync(root)) assert.equal(statSync(join(root, f)).mode & 0o777, 0o600);
    assert.equal(
      readFileSync(join(root, `${outputId}.json`), "utf8"),
      JSON.stringify({ format: "pi-code-execution-output/1", ...meta }, null, 2) + "\n",
    );
  });

  test("the ID depends on every metadata field", () => {
    const meta: OutputMetadata = {
      sha256: "a".repeat(64),
      emittedBytes: 10,
      lines: 2,
      retainedBytes: 10,
      retainedLines: 2,
      truncated: false,
    };
    const ids = new Set([outputIdOf(meta)]);
    for (const change of [
      { sha256: "b".repeat(64) },
      { emittedBytes: 11 },
      { lines: 3 },
      { retainedBytes: 9 },
      { retainedLines: 1 },
      { truncated: true },
    ])
      ids.add(outputIdOf({ ...meta, ...change }));
    assert.equal(ids.size, 7);
  });

  test("a loose existing directory is made private; a file or a symlink in its place is refused", async () => {
    const loose = join(tempDir("pcs-store-"), "out");
    mkdirSync(loose, { mode: 0o755 });
    chmodSync(loose, 0o755);
    await saveOutputArtifact(capture([["stdout", "x"]]), loose);
    assert.equal(statSync(loose).mode & 0o777, 0o700);
    const file = join(tempDir("pcs-store-"), "out");
    writeFileSync(file, "not a directory");
    await assert.rejects(saveOutputArtifact(capture([["stdout", "x"]]), file));
    const real = tempDir("pcs-store-");
    const link = join(tempDir("pcs-store-"), "out");
    symlinkSync(real, link);
    await assert.rejects(saveOutputArtifact(capture([["stdout", "x"]]), link), /is not a directory/);
    assert.deepEqual(readdirSync(real), [], "nothing written through the symlink");
  });

  test("saving twice is idempotent; a different transcript or sidecar under the ID is a collision, untouched", async () => {
    const root = join(tempDir("pcs-store-"), "out");
    const cap = capture([["stdout", "same\n"]]);
    const ref = await saveOutputArtifact(cap, root);
    assert.deepEqual(await saveOutputArtifact(cap, root), ref);
    // Each repeated save closes the saved transcript it compared.
    const fds = () => readdirSync("/proc/self/fd").length;
    const before = fds();
    for (let i = 0; i < 10; i++) await saveOutputArtifact(cap, root);
    assert.equal(fds(), before);
    assert.deepEqual(readdirSync(root).sort(), [`${ref.outputId}.json`, `${ref.outputId}.out`], "no temp files left");
    // A damaged sidecar: the transcript matches, the sidecar does not.
    const json = join(root, `${ref.outputId}.json`);
    writeFileSync(json, "{}");
    await assert.rejects(saveOutputArtifact(cap, root), OutputArtifactCollisionError);
    assert.equal(readFileSync(json, "utf8"), "{}", "the sidecar was not overwritten");
    assert.deepEqual(readdirSync(root).sort(), [`${ref.outputId}.json`, `${ref.outputId}.out`]);
    // A damaged transcript.
    const other = join(tempDir("pcs-store-"), "out");
    const ref2 = await saveOutputArtifact(cap, other);
    writeFileSync(join(other, `${ref2.outputId}.out`), "SAME\n");
    await assert.rejects(saveOutputArtifact(cap, other), (e: Error) => {
      assert.ok(e instanceof OutputArtifactCollisionError);
      assert.equal(e.name, "OutputArtifactCollisionError");
      assert.match(e.message, new RegExp(`already saved as ${ref2.outputId}; it was not overwritten`));
      return true;
    });
    assert.equal(readFileSync(join(other, `${ref2.outputId}.out`), "utf8"), "SAME\n");
  });

  test("the comparison follows a part across a read chunk's end and into the next part", async () => {
    // Parts of 100 bytes, 1 MiB, 100 bytes: the 1 MiB part starts 100 bytes into the first read chunk and ends 100
    // bytes into the second, where the next part begins.
    const writes: ["stdout", Buffer][] = [
      ["stdout", Buffer.alloc(100, "a")],
      ["stdout", Buffer.alloc(1 << 20, "b")],
      ["stdout", Buffer.alloc(100, "c")],
    ];
    const root = join(tempDir("pcs-store-"), "out");
    const ref = await saveOutputArtifact(capture(writes), root);
    assert.deepEqual(await saveOutputArtifact(capture(writes), root), ref, "the same transcript, no collision");
  });

  test("a transcript already saved is compared with the one in memory, not written again; one byte off is a collision", async () => {
    const root = join(tempDir("pcs-store-"), "out");
    // Over one read chunk (1 MiB), in 64 KiB parts, with stderr: the comparison walks parts across reads.
    const writes: ["stdout" | "stderr", Buffer][] = [
      ...Array.from({ length: 24 }, (_, i): ["stdout", Buffer] => ["stdout", Buffer.alloc(64 * 1024, `${i % 10}`)]),
      ["stderr", Buffer.from("tail\n")],
    ];
    const ref = await saveOutputArtifact(capture(writes), root);
    const dirBefore = statSync(root, { bigint: true }).mtimeNs;
    const fileBefore = statSync(join(root, `${ref.outputId}.out`), { bigint: true });
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(await saveOutputArtifact(capture(writes), root), ref);
    assert.equal(statSync(root, { bigint: true }).mtimeNs, dirBefore, "no temporary file was created in the directory");
    const fileAfter = statSync(join(root, `${ref.outputId}.out`), { bigint: true });
    assert.deepEqual([fileAfter.ino, fileAfter.mtimeNs], [fileBefore.ino, fileBefore.mtimeNs]);
    // The same size, one byte changed past the first read chunk: not this transcript.
    const path = join(root, `${ref.outputId}.out`);
    const damaged = readFileSync(path);
    damaged[(1 << 20) + 70_000] ^= 1;
    writeFileSync(path, damaged);
    const dirDamaged = statSync(root, { bigint: true }).mtimeNs;
    await new Promise((r) => setTimeout(r, 20));
    await assert.rejects(saveOutputArtifact(capture(writes), root), OutputArtifactCollisionError);
    assert.deepEqual(readFileSync(path), damaged, "left as it was");
    assert.equal(statSync(root, { bigint: true }).mtimeNs, dirDamaged, "refused before any temporary file");
  });

  test("an existing transcript that is a prefix of this one, or a symlink to it, is a collision found before writing", async () => {
    const root = join(tempDir("pcs-store-"), "out");
    const cap = capture([["stdout", "0123456789\n"]]);
    const ref = await saveOutputArtifact(cap, root);
    const path = join(root, `${ref.outputId}.out`);
    const refused = async () => {
      const dir = statSync(root, { bigint: true }).mtimeNs;
      await new Promise((r) => setTimeout(r, 20));
      await assert.rejects(saveOutputArtifact(cap, root), OutputArtifactCollisionError);
      assert.equal(statSync(root, { bigint: true }).mtimeNs, dir, "no temporary file was written");
    };
    // The first 5 bytes only (the sidecar still matches): not this transcript, though every byte it has agrees.
    writeFileSync(path, "01234");
    await refused();
    assert.equal(readFileSync(path, "utf8"), "01234", "left as it was");
    // A symlink to an identical copy: not a file of ours to trust.
    const copy = join(tempDir("pcs-store-"), "copy.out");
    writeFileSync(copy, "0123456789\n", { mode: 0o600 });
    unlinkSync(path);
    symlinkSync(copy, path);
    await refused();
    assert.ok(lstatSync(path).isSymbolicLink(), "left as it was");
  });

  test("the default root is the agent directory's code-execution-output", () => {
    const saved = process.env.PI_CODING_AGENT_DIR;
    process.env.PI_CODING_AGENT_DIR = "/x/agent";
    try {
      assert.equal(outputRoot(), "/x/agent/code-execution-output");
    } finally {
      if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR;
      else process.env.PI_CODING_AGENT_DIR = saved;
    }
  });
});

describe("reading the sidecar", () => {
  /** A saved artifact whose sidecar is then replaced by `m` (JSON), under the ID `m` hashes to when valid. */
  async function withSidecar(edit: (m: Record<string, unknown>) => void | { replace: unknown }) {
    const root = join(tempDir("pcs-store-"), "out");
    const ref = await saveOutputArtifact(capture([["stdout", "hello\nworld\n"]]), root);
    const { outputId, ...meta } = ref;
    const m = { format: "pi-code-execution-output/1", ...meta } as Record<string, unknown>;
    const edited = edit(m);
    const json = JSON.stringify(edited ? edited.replace : m);
    const path = join(root, `${outputId}.json`);
    chmodSync(path, 0o600);
    writeFileSync(path, json);
    return { root, outputId };
  }

  const malformed: [string, (m: Record<string, unknown>) => void | { replace: unknown }][] = [
    ["another format", (m) => void (m.format = "pi-code-execution-output/2")],
    ["no format", (m) => void delete m.format],
    ["a short digest", (m) => void (m.sha256 = "ab")],
    ["an uppercase digest", (m) => void (m.sha256 = String(m.sha256).toUpperCase())],
    ["a numeric digest", (m) => void (m.sha256 = 5)],
    // Its text is a valid digest: only the type check refuses it.
    ["a digest in an array", (m) => void (m.sha256 = [m.sha256])],
    ["a negative count", (m) => void (m.lines = -1)],
    ["a fractional count", (m) => void (m.emittedBytes = 12.5)],
    ["a string count", (m) => void (m.retainedLines = "2")],
    ["a missing count", (m) => void delete m.retainedBytes],
    ["truncated as a string", (m) => void (m.truncated = "false")],
    ["retained bytes far beyond emitted", (m) => void Object.assign(m, { retainedBytes: 100, truncated: true })],
    ["not truncated but fewer bytes kept", (m) => void (m.retainedBytes = 11)],
    ["not truncated but fewer lines kept", (m) => void (m.retainedLines = 1)],
    ["null", () => ({ replace: null })],
    ["an array", () => ({ replace: [] })],
    ["a number", () => ({ replace: 7 })],
  ];
  for (const [name, edit] of malformed)
    test(`${name}: malformed`, async () => {
      const { root, outputId } = await withSidecar(edit);
      await assert.rejects(readSidecar(root, outputId), unavailable(/is malformed/));
    });

  test("bad counts or digest under the ID they hash to (truncated, so no consistency check hides them): malformed", async () => {
    const root = join(tempDir("pcs-store-"), "out");
    const { outputId: _, ...good } = await saveOutputArtifact(capture([["stdout", "hello\nworld\n"]]), root);
    for (const bad of [
      { lines: -1 },
      { retainedLines: 1.5 },
      { emittedBytes: "12" },
      { sha256: `${good.sha256}0` },
      { sha256: `0${good.sha256}` },
    ]) {
      const meta = { ...good, truncated: true, ...bad } as unknown as OutputMetadata;
      const id = outputIdOf(meta);
      writeFileSync(join(root, `${id}.json`), JSON.stringify({ format: "pi-code-execution-output/1", ...meta }), {
        mode: 0o600,
      });
      await assert.rejects(readSidecar(root, id), unavailable(/is malformed/), JSON.stringify(bad));
    }
  });

  test("the boundary's slack: retained may exceed emitted by the boundary line, if truncated", async () => {
    // Truncation can cut stdout after its newline, then the boundary line is counted in retained only.
    const { root, outputId } = await withSidecar(
      (m) => void Object.assign(m, { retainedBytes: 12 + 10, truncated: true }),
    );
    await assert.rejects(readSidecar(root, outputId), unavailable(/does not match its ID/), "valid shape, wrong ID");
    const { root: r2, outputId: id2 } = await withSidecar(
      (m) => void Object.assign(m, { retainedBytes: 12 + 11, truncated: true }),
    );
    await assert.rejects(readSidecar(r2, id2), unavailable(/is malformed/));
  });

  test("not JSON, too large, changed counts, a bad ID, a missing directory", async () => {
    const { root, outputId } = await withSidecar(() => undefined);
    const path = join(root, `${outputId}.json`);
    writeFileSync(path, "{not json");
    await assert.rejects(
      readSidecar(root, outputId),
      unavailable(new RegExp(`^the metadata of output ${outputId} is not valid JSON$`)),
    );
    writeFileSync(path, " ".repeat(64 * 1024 + 1));
    await assert.rejects(readSidecar(root, outputId), unavailable(/65537 bytes, more than 65536/));
    const m = await withSidecar((x) => void (x.sha256 = "0".repeat(64)));
    await assert.rejects(readSidecar(m.root, m.outputId), unavailable(/does not match its ID \(tampered\)/));
    for (const bad of ["", "0123456789a", "0123456789abc", "0123456789AB", "../../etc/pa", "0123456789ag"])
      await assert.rejects(readSidecar(root, bad), unavailable(/is not an outputId/));
    await assert.rejects(
      readSidecar(join(root, "nope"), outputId),
      unavailable(/^the output artifact directory does not exist$/, true),
    );
    await assert.rejects(readSidecar(root, "0123456789ab"), unavailable(/is missing/, true));
  });
});

describe("reading pages", () => {
  /** 1-, 2-, 3- and 4-byte characters, 10 bytes a cycle. */
  const MIXED = "aé€𝄞".repeat(5000);

  async function saved(text: string) {
    const root = join(tempDir("pcs-store-"), "out");
    const ref = await saveOutputArtifact(capture([["stdout", text]]), root);
    return { root, ref };
  }

  test("every page starts and ends on a character boundary and the pages rebuild the transcript", async () => {
    const { root, ref } = await saved(MIXED);
    for (const limit of [undefined, 1, 2, 3, 5, 9, PAGE_BYTES - 1]) {
      let offset = 0;
      let text = "";
      let pages = 0;
      while (offset < ref.retainedBytes && pages < 40) {
        const page = await readOutputPage(ref.outputId, { offset, ...(limit ? { limit } : {}) }, root);
        assert.equal(page.offset, offset);
        assert.ok(page.end > page.offset, "at least one character");
        assert.ok(page.end - page.offset <= Math.max(limit ?? PAGE_BYTES, 4));
        assert.equal(Buffer.byteLength(page.text), page.end - page.offset);
        assert.ok(!page.text.includes("\ufffd"));
        text += page.text;
        offset = page.end;
        pages += 1;
      }
      assert.ok(MIXED.startsWith(text), `limit ${limit}`);
      if (limit === undefined) assert.equal(text, MIXED);
    }
  });

  test("an offset inside a character moves back to its start; a limit shorter than a character still gets it", async () => {
    const { root, ref } = await saved("a𝄞b");
    for (const [offset, start] of [
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 1],
      [5, 5],
    ]) {
      const page = await readOutputPage(ref.outputId, { offset, limit: 1 }, root);
      assert.equal(page.offset, start, `offset ${offset}`);
      assert.equal(page.text, start === 1 ? "𝄞" : "b");
    }
    const last = await readOutputPage(ref.outputId, { offset: 5, limit: 100 }, root);
    assert.deepEqual([last.text, last.end], ["b", 6]);
    const end = await readOutputPage(ref.outputId, { offset: 6 }, root);
    assert.deepEqual([end.offset, end.end, end.text], [6, 6, ""]);
  });

  test("a page ends before a character that does not fit", async () => {
    const { root, ref } = await saved("ab€€");
    const page = await readOutputPage(ref.outputId, { offset: 0, limit: 4 }, root);
    assert.deepEqual([page.text, page.end], ["ab", 2]);
    const next = await readOutputPage(ref.outputId, { offset: 2, limit: 4 }, root);
    assert.deepEqual([next.text, next.end], ["€", 5]);
  });

  test("a page near the end of a large transcript (several read chunks) holds the right bytes", async () => {
    const text = Array.from({ length: 200000 }, (_, i) => `${i}\n`).join("");
    const { root, ref } = await saved(text);
    assert.ok(ref.retainedBytes > 1 << 20);
    const offset = ref.retainedBytes - 20;
    const page = await readOutputPage(ref.outputId, { offset }, root);
    assert.equal(page.text, text.slice(offset));
    const mid = await readOutputPage(ref.outputId, { offset: (1 << 20) - 3, limit: 6 }, root);
    assert.equal(mid.text, text.slice((1 << 20) - 3, (1 << 20) + 3));
  });

  test("parameters are checked with errors that name them", async () => {
    const { root, ref } = await saved("hello");
    for (const offset of [-1, 1.5, Number.NaN])
      await assert.rejects(
        readOutputPage(ref.outputId, { offset }, root),
        /`offset` must be a whole number of bytes >= 0/,
      );
    for (const limit of [0, -3, 2.5])
      await assert.rejects(
        readOutputPage(ref.outputId, { limit }, root),
        /`limit` must be a whole number of bytes from 1 to 20480/,
      );
    await assert.rejects(readOutputPage(ref.outputId, { offset: 6 }, root), /`offset` 6 is past the end \(5 bytes\)/);
    assert.equal((await readOutputPage(ref.outputId, { limit: 10 ** 9 }, root)).text, "hello", "limits are capped");
  });

  test("a transcript changed at rest: size, digest and line count are each checked", async () => {
    const { root, ref } = await saved("one\ntwo\n");
    const out = join(root, `${ref.outputId}.out`);
    writeFileSync(out, "one\ntwo\nthree\n");
    await assert.rejects(readOutputPage(ref.outputId, {}, root), unavailable(/is 14 bytes, its metadata says 8/));
    writeFileSync(out, "one\ntwO\n");
    await assert.rejects(readOutputPage(ref.outputId, {}, root), unavailable(/does not match its digest/));
    // A sidecar that is self-consistent but states a wrong line count for the same bytes.
    const lines = join(tempDir("pcs-store-"), "out");
    const good = await saveOutputArtifact(capture([["stdout", "one\ntwo\n"]]), lines);
    const meta: OutputMetadata = { ...good, retainedLines: 3, lines: 3 };
    delete (meta as { outputId?: string }).outputId;
    const id = outputIdOf(meta);
    writeFileSync(join(lines, `${id}.out`), "one\ntwo\n", { mode: 0o600 });
    writeFileSync(join(lines, `${id}.json`), JSON.stringify({ format: "pi-code-execution-output/1", ...meta }), {
      mode: 0o600,
    });
    await assert.rejects(readOutputPage(id, {}, lines), unavailable(/does not match its line count/));
  });

  test("an empty transcript reads as one empty page", async () => {
    const { root, ref } = await saved("");
    assert.deepEqual(ref.retainedBytes, 0);
    const page = await readOutputPage(ref.outputId, {}, root);
    assert.deepEqual([page.offset, page.end, page.text], [0, 0, ""]);
  });
});

describe("file rules (artifact-fs)", () => {
  test("ensurePrivateDir creates nested 0700 directories and tightens a loose one", async () => {
    const dir = join(tempDir("pcs-store-"), "a", "b");
    await ensurePrivateDir(dir);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    chmodSync(dir, 0o750);
    await ensurePrivateDir(dir);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
  });

  test("checkDir: missing (marked missing), a file, a symlink to a directory", async () => {
    const base = tempDir("pcs-store-");
    await assert.rejects(
      checkDir(join(base, "none"), "thing"),
      unavailable(/^the thing directory does not exist$/, true),
    );
    writeFileSync(join(base, "f"), "");
    await assert.rejects(checkDir(join(base, "f"), "thing"), unavailable(/^the thing directory is not a directory/));
    symlinkSync(tempDir("pcs-store-"), join(base, "l"));
    await assert.rejects(checkDir(join(base, "l"), "thing"), unavailable(/not a directory \(symlink\?\)/));
    await checkDir(base, "thing");
  });

  test("openVerified and readVerified: missing, symlink, not regular, loose modes, size limit", async () => {
    const base = tempDir("pcs-store-");
    const file = join(base, "f");
    writeFileSync(file, "12345", { mode: 0o600 });
    const { handle, size } = await openVerified(file, "the file");
    assert.equal(size, 5);
    await handle.close();
    assert.equal((await readVerified(file, "the file", 5)).toString(), "12345");
    await assert.rejects(readVerified(file, "the file", 4), unavailable(/^the file is 5 bytes, more than 4$/));
    await assert.rejects(openVerified(join(base, "none"), "x"), unavailable(/^x is missing$/, true));
    symlinkSync(file, join(base, "l"));
    await assert.rejects(openVerified(join(base, "l"), "x"), unavailable(/^x is a symlink, refused$/));
    mkdirSync(join(base, "d"));
    await assert.rejects(openVerified(join(base, "d"), "x"), unavailable(/^x is not a regular file$/));
    for (const mode of [0o604, 0o640, 0o601, 0o610]) {
      chmodSync(file, mode);
      await assert.rejects(
        openVerified(file, "x"),
        unavailable(new RegExp(`^x is readable or writable by others \\(mode ${mode.toString(8)}\\), refused$`)),
      );
    }
    chmodSync(file, 0o400);
    await (await openVerified(file, "x")).handle.close();
    writeFileSync(join(base, "empty"), "", { mode: 0o600 });
    assert.equal((await readVerified(join(base, "empty"), "x", 0)).length, 0);
  });

  // Root can give files away; other users cannot, and then there is nothing of another user's to refuse.
  const asRoot = process.getuid?.() === 0 ? false : "needs root to chown";
  test("a directory or file of another user is refused", { skip: asRoot }, async () => {
    const base = tempDir("pcs-store-");
    const dir = join(base, "theirs");
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, 65534, 65534);
    await assert.rejects(ensurePrivateDir(dir), unavailable(/^\/.*\/theirs belongs to another user$/));
    const file = join(base, "f");
    writeFileSync(file, "12345", { mode: 0o600 });
    chownSync(file, 65534, 65534);
    await assert.rejects(openVerified(file, "the file"), unavailable(/^the file belongs to another user$/));
    await assert.rejects(readVerified(file, "the file", 5), unavailable(/^the file belongs to another user$/));
  });

  test("readVerified closes its file whether it reads or refuses it", async () => {
    const file = join(tempDir("pcs-store-"), "f");
    writeFileSync(file, "12345", { mode: 0o600 });
    const fds = () => readdirSync("/proc/self/fd").length;
    const before = fds();
    for (let i = 0; i < 20; i++) {
      await readVerified(file, "f", 5);
      await assert.rejects(readVerified(file, "f", 4));
    }
    assert.equal(fds(), before);
  });

  test("openVerified closes the file it opened when it refuses it (loose mode)", async () => {
    const file = join(tempDir("pcs-store-"), "f");
    writeFileSync(file, "12345", { mode: 0o600 });
    chmodSync(file, 0o644);
    const fds = () => readdirSync("/proc/self/fd").length;
    const before = fds();
    for (let i = 0; i < 20; i++) await assert.rejects(openVerified(file, "f"), unavailable(/readable or writable/));
    assert.equal(fds(), before);
  });

  test("writeTemp: a private hidden file, removed when filling fails; placeOnce never replaces", async () => {
    const dir = tempDir("pcs-store-");
    const path = await writeTemp(dir, async (h) => void (await h.write(Buffer.from("data"))));
    assert.match(path, /\/\.tmp-\d+-[0-9a-f]{12}$/);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(readFileSync(path, "utf8"), "data");
    await assert.rejects(
      writeTemp(dir, async () => {
        throw new Error("fill failed");
      }),
      /fill failed/,
    );
    assert.deepEqual(readdirSync(dir), [path.slice(dir.length + 1)], "the failed temp file is gone");
    const fds = () => readdirSync("/proc/self/fd").length;
    const before = fds();
    for (let i = 0; i < 20; i++)
      await assert.rejects(
        writeTemp(dir, async () => {
          throw new Error("fill failed");
        }),
      );
    assert.equal(fds(), before, "and closed");
    assert.equal(await placeOnce(path, join(dir, "final")), true);
    assert.ok(!existsSync(path), "the temporary name is removed");
    const second = await writeTemp(dir, async (h) => void (await h.write(Buffer.from("other"))));
    assert.equal(await placeOnce(second, join(dir, "final")), false);
    assert.equal(readFileSync(join(dir, "final"), "utf8"), "data");
    assert.ok(!existsSync(second));
    const third = await writeTemp(dir, async () => {});
    await assert.rejects(placeOnce(third, join(dir, "no-such-dir", "final")), /ENOENT/);
    assert.ok(!existsSync(third));
    assert.ok(lstatSync(join(dir, "final")).isFile());
  });

  test("character boundaries: continuation bytes, starts, ends, invalid sequences", () => {
    assert.deepEqual(
      [0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xff].map((b) => isContinuation(b)),
      [false, false, true, true, false, false],
    );
    const b = Buffer.from("a€𝄞é");
    // a(0) €(1-3) 𝄞(4-7) é(8-9)
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((p) => charStart(b, p)),
      [0, 1, 1, 1, 4, 4, 4, 4, 8, 8, 10],
    );
    assert.deepEqual(
      [0, 1, 4, 8].map((p) => charEnd(b, p)),
      [1, 4, 8, 10],
    );
    assert.equal(charStart(b, -1), -1);
    // Stray continuation bytes are characters of their own; a truncated sequence ends where the bytes do.
    const stray = Buffer.from([0x61, 0x80, 0x80, 0x80, 0x80, 0x62]);
    assert.deepEqual(
      [1, 2, 3, 4].map((p) => charStart(stray, p)),
      [1, 2, 3, 4],
    );
    const cut = Buffer.from([0xe2, 0x82]);
    assert.equal(charEnd(cut, 0), 2);
    assert.equal(charStart(cut, 1), 0);
    // A lead byte says how long its character is.
    assert.equal(charEnd(Buffer.from([0xc3, 0xa9, 0x80]), 0), 2);
    assert.equal(charStart(Buffer.from([0xc3, 0x80, 0x80]), 2), 2, "a 2-byte lead does not own a third byte");
    assert.equal(charStart(Buffer.from([0xe2, 0x82, 0xac, 0x80]), 3), 3);
    assert.equal(charStart(Buffer.from([0xf0, 0x9d, 0x84, 0x9e]), 3), 0);
    assert.equal(charStart(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80]), 4), 4, "no lead within 3 bytes");
    // The lowest lead of each length: U+0800 (e0 a0 80) is one character; c0 leads two bytes (overlong, invalid,
    // but one unit all the same); f8 and above lead nothing.
    assert.equal(charStart(Buffer.from("\u0800"), 2), 0);
    assert.equal(charStart(Buffer.from([0xc0, 0x80]), 1), 0);
    assert.equal(charStart(Buffer.from([0xf8, 0x80, 0x80, 0x80]), 3), 3);
    assert.equal(charStart(Buffer.from([0xf7, 0x80, 0x80, 0x80]), 3), 0);
    // A byte that is not a continuation starts its own character, even after a truncated sequence.
    assert.equal(charStart(Buffer.from([0xe2, 0x82, 0x41]), 2), 2);
  });

  test("checkPage and pageBounds", () => {
    assert.deepEqual(checkPage({}, 10), { offset: 0, limit: PAGE_BYTES });
    assert.deepEqual(checkPage({ offset: 10, limit: PAGE_BYTES + 1 }, 10), { offset: 10, limit: PAGE_BYTES });
    assert.deepEqual(checkPage({ offset: 3, limit: 1 }, 10), { offset: 3, limit: 1 });
    assert.throws(() => checkPage({ offset: 11 }, 10), /`offset` 11 is past the end \(10 bytes\)/);
    assert.throws(() => checkPage({ offset: 2 ** 53 }, 10), /`offset` must be/);
    assert.throws(() => checkPage({ limit: 0 }, 10), /`limit` must be .* \(got 0\)/);
    const bytes = Buffer.from("ab€cd");
    assert.deepEqual(pageBounds(bytes, 0, 7, 0, 3), { start: 0, end: 2 });
    assert.deepEqual(pageBounds(bytes, 0, 7, 3, 1), { start: 2, end: 5 });
    assert.deepEqual(pageBounds(bytes, 0, 7, 5, 10), { start: 5, end: 7 });
    assert.deepEqual(pageBounds(bytes, 0, 7, 7, 10), { start: 7, end: 7 });
    // A window that starts later in the file: bounds are absolute.
    assert.deepEqual(pageBounds(bytes.subarray(2), 2, 7, 3, 3), { start: 2, end: 5 });
  });
});

// Two survivors of the 2026-12-03 (third session) mutation run of the group `artifacts` (docs/reliability.md).
describe("reading pages: what the model is told, and what stays open", () => {
  test("a page of a tampered transcript is refused naming the output", async () => {
    const root = join(tempDir("pcs-store-"), "out");
    const ref = await saveOutputArtifact(capture([["stdout", "one\ntwo\n"]]), root);
    writeFileSync(join(root, `${ref.outputId}.out`), "one\ntwX\n");
    await assert.rejects(
      readOutputPage(ref.outputId, { offset: 4 }, root),
      unavailable(new RegExp(`^output ${ref.outputId} does not match its digest`)),
    );
  });

  test("each page read closes the transcript it opened", async () => {
    const root = join(tempDir("pcs-store-"), "out");
    const ref = await saveOutputArtifact(capture([["stdout", "x".repeat(5000)]]), root);
    const fds = () => readdirSync("/proc/self/fd").length;
    await readOutputPage(ref.outputId, { offset: 0, limit: 10 }, root);
    const before = fds();
    for (let i = 0; i < 40; i++) await readOutputPage(ref.outputId, { offset: i * 100, limit: 10 }, root);
    assert.ok(fds() <= before + 2, `${fds()} fds open after 40 page reads, ${before} before`);
  });
});
