// Output artifacts: a run's retained output saved as one canonical transcript (stdout, then stderr after a
// `[stderr]` line) under `<agent dir>/code-execution-output/`, as `<outputId>.out` plus a `<outputId>.json`
// sidecar. The outputId is the first 48 bits of a digest over the sidecar's metadata, so the sidecar verifies
// itself; the metadata holds the content digest, so the transcript verifies too. Files are created once and
// never overwritten.
import { createHash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { lstat } from "node:fs/promises";
import { join } from "node:path";
import { agentDir } from "./agent-dir.ts";
import {
  ArtifactUnavailableError,
  checkDir,
  checkPage,
  ensurePrivateDir,
  openVerified,
  pageBounds,
  placeOnce,
  readVerified,
  writeAll,
  writeTemp,
  type PageRequest,
} from "./artifact-fs.ts";
import { countNewlines, retainedDigest, type ChannelCapture } from "../lib/run-output.ts";
import { savedBeforeRead } from "./artifact-saves.ts";

export const OUTPUT_DIR = "code-execution-output";
const FORMAT = "pi-code-execution-output/1";
const ID_PATTERN = /^[0-9a-f]{12}$/;
const STDERR_LINE = Buffer.from("[stderr]\n");
const NEWLINE_STDERR_LINE = Buffer.from("\n[stderr]\n");
const READ_CHUNK = 1 << 20;

/** What the run's details carry (`output`) and what the sidecar holds; portable, no paths. */
export interface OutputRef {
  outputId: string;
  /** SHA-256 of the saved transcript (the retained bytes). */
  sha256: string;
  /** Bytes and lines of the whole transcript as emitted. */
  emittedBytes: number;
  lines: number;
  /** Bytes and lines saved: equal to the emitted ones unless `truncated`. */
  retainedBytes: number;
  retainedLines: number;
  /** Output past the per-run retention was drained and counted but not saved. */
  truncated: boolean;
}

export type OutputMetadata = Omit<OutputRef, "outputId">;

export class OutputArtifactCollisionError extends Error {
  constructor(outputId: string) {
    super(
      `A different output artifact is already saved as ${outputId}; it was not overwritten. Remove ${OUTPUT_DIR}/${outputId}.* if it is damaged.`,
    );
    this.name = "OutputArtifactCollisionError";
  }
}

export function outputRoot(): string {
  return join(agentDir(), OUTPUT_DIR);
}

export function outputIdOf(m: OutputMetadata): string {
  const canonical = JSON.stringify([
    FORMAT,
    m.sha256,
    m.emittedBytes,
    m.lines,
    m.retainedBytes,
    m.retainedLines,
    m.truncated,
  ]);
  return createHash("sha256").update(canonical).digest("hex").slice(0, 12);
}

/** Emitted size of the transcript of two channels: stdout, then (if stderr) the boundary line and stderr. */
export function emittedTranscript(out: ChannelCapture, err: ChannelCapture): { bytes: number; lines: number } {
  if (err.emittedBytes === 0) return { bytes: out.emittedBytes, lines: out.emittedLines };
  const boundary = out.emittedBytes > 0 && !out.endsWithNewline ? NEWLINE_STDERR_LINE : STDERR_LINE;
  return {
    bytes: out.emittedBytes + boundary.length + err.emittedBytes,
    lines: out.emittedLines + 1 + err.emittedLines,
  };
}

/** The line between the retained channels (the same rule as the emitted one, applied to what was kept); none when
 * no stderr was kept. */
function retainedBoundary(out: ChannelCapture, err: ChannelCapture): Buffer | undefined {
  if (err.retainedBytes === 0) return undefined;
  const last = out.chunks.at(-1);
  const endsWithNewline = last !== undefined && last[last.length - 1] === 0x0a;
  return out.retainedBytes > 0 && !endsWithNewline ? NEWLINE_STDERR_LINE : STDERR_LINE;
}

/** The retained transcript as a list of buffers (no copy): each channel's retained prefix, same boundary rule. */
export function retainedTranscript(out: ChannelCapture, err: ChannelCapture): Buffer[] {
  const boundary = retainedBoundary(out, err);
  const parts: Buffer[] = boundary ? [...out.chunks, boundary, ...err.chunks] : [...out.chunks];
  return parts.filter((b) => b.length > 0);
}

/** A transcript ready to save: its reference (digest and metadata, computed in memory, so a result can name its
 * outputId before the file exists) and the parts to write. */
export interface OutputArtifact {
  ref: OutputRef;
  parts: Buffer[];
}

/** The reference of the run's retained transcript, without touching the disk. The digest continues the one of
 * stdout's retained bytes hashed while they arrived (lib/run-output.ts); stderr and the line counts are
 * added here, so the result path does not read a long stdout again. */
export function outputArtifact(capture: { stdout: ChannelCapture; stderr: ChannelCapture }): OutputArtifact {
  const { stdout, stderr } = capture;
  const parts = retainedTranscript(stdout, stderr);
  const emitted = emittedTranscript(stdout, stderr);
  const hash = retainedDigest(stdout);
  let retainedBytes = stdout.retainedBytes;
  let newlines = stdout.retainedNewlines;
  const boundary = retainedBoundary(stdout, stderr);
  if (boundary) {
    hash.update(boundary);
    for (const chunk of stderr.chunks) hash.update(chunk);
    retainedBytes += boundary.length + stderr.retainedBytes;
    newlines += countNewlines(boundary) + stderr.retainedNewlines;
  }
  const lastPart = parts.at(-1);
  const last = lastPart ? lastPart[lastPart.length - 1]! : -1;
  const meta: OutputMetadata = {
    sha256: hash.digest("hex"),
    emittedBytes: emitted.bytes,
    lines: emitted.lines,
    retainedBytes,
    retainedLines: newlines + (retainedBytes > 0 && last !== 0x0a ? 1 : 0),
    truncated: stdout.retainedBytes < stdout.emittedBytes || stderr.retainedBytes < stderr.emittedBytes,
  };
  return { ref: { outputId: outputIdOf(meta), ...meta }, parts };
}

/**
 * Saves the run's retained transcript and returns its reference. Identical concurrent saves produce one file;
 * a different artifact under an existing ID throws OutputArtifactCollisionError.
 */
export async function saveOutputArtifact(
  capture: { stdout: ChannelCapture; stderr: ChannelCapture },
  root = outputRoot(),
): Promise<OutputRef> {
  return writeOutputArtifact(outputArtifact(capture), root);
}

/** Writes a transcript whose reference is known: the file and then its sidecar, each created once. A transcript
 * already saved (a rerun, a loop printing the same) is compared with the one in memory and not written again. */
export async function writeOutputArtifact(artifact: OutputArtifact, root = outputRoot()): Promise<OutputRef> {
  const { ref, parts } = artifact;
  const { outputId, ...meta } = ref;
  await ensurePrivateDir(root);
  const label = `output ${outputId}`;
  // Already there: fine only if it is this very transcript (a concurrent or repeated identical save).
  const same = () =>
    sameTranscript(root, ref, parts, label).then(
      (found) => found,
      () => false,
    );
  if (!(await existingTranscript(root, ref, parts, label))) {
    const temp = await writeTemp(root, async (handle) => {
      for (const part of parts) await writeAll(handle, part);
    });
    if (!(await placeOnce(temp, join(root, `${outputId}.out`))) && !(await same()))
      throw new OutputArtifactCollisionError(outputId);
  }
  const sidecar = Buffer.from(JSON.stringify({ format: FORMAT, ...meta }, null, 2) + "\n");
  const sameSidecar = () =>
    readSidecar(root, outputId).then(
      (existing) => JSON.stringify(existing) === JSON.stringify(ref),
      () => false,
    );
  if (await sidecarPresent(root, outputId)) {
    if (!(await sameSidecar())) throw new OutputArtifactCollisionError(outputId);
    return ref;
  }
  const sidecarTemp = await writeTemp(root, (h) => writeAll(h, sidecar));
  if (!(await placeOnce(sidecarTemp, join(root, `${outputId}.json`))) && !(await sameSidecar()))
    throw new OutputArtifactCollisionError(outputId);
  return ref;
}

/** Whether the transcript is saved already: false when there is no file; a file that is not this very transcript
 * is a collision. */
async function existingTranscript(root: string, ref: OutputRef, parts: Buffer[], label: string): Promise<boolean> {
  const found = await sameTranscript(root, ref, parts, label).catch(() => {
    throw new OutputArtifactCollisionError(ref.outputId);
  });
  return found;
}

async function sidecarPresent(root: string, outputId: string): Promise<boolean> {
  return lstat(join(root, `${outputId}.json`)).then(
    () => true,
    () => false,
  );
}

/** Compares the saved transcript with the bytes in memory (what its digest was computed from): byte for byte, not
 * by hashing it again. False if it is missing; throws if it differs or is not a file of ours. */
async function sameTranscript(root: string, ref: OutputRef, parts: Buffer[], label: string): Promise<boolean> {
  let opened: { handle: FileHandle; size: number };
  try {
    opened = await openVerified(join(root, `${ref.outputId}.out`), label);
  } catch (e) {
    if (e instanceof ArtifactUnavailableError && e.missing) return false;
    throw e;
  }
  const { handle, size } = opened;
  try {
    if (size !== ref.retainedBytes) throw new ArtifactUnavailableError(`${label} has another size`);
    const buf = Buffer.allocUnsafe(Math.min(READ_CHUNK, Math.max(1, size)));
    let at = 0;
    let part = 0;
    let inPart = 0;
    while (at < size) {
      const { bytesRead } = await handle.read(buf, 0, Math.min(buf.length, size - at), at);
      if (bytesRead === 0) throw new ArtifactUnavailableError(`${label} changed while it was read`);
      for (let i = 0; i < bytesRead; ) {
        const p = parts[part]!;
        const n = Math.min(bytesRead - i, p.length - inPart);
        if (buf.compare(p, inPart, inPart + n, i, i + n) !== 0) throw new ArtifactUnavailableError(`${label} differs`);
        i += n;
        inPart += n;
        if (inPart === p.length) {
          part += 1;
          inPart = 0;
        }
      }
      at += bytesRead;
    }
    return true;
  } finally {
    await handle.close();
  }
}

/** Reads and checks `<id>.json`: well-formed, and its metadata hashes to its own ID. */
export async function readSidecar(root: string, outputId: string): Promise<OutputRef> {
  if (!ID_PATTERN.test(outputId))
    throw new ArtifactUnavailableError(`"${outputId}" is not an outputId (12 lowercase hex characters)`);
  await checkDir(root, "output artifact");
  const label = `the metadata of output ${outputId}`;
  const raw = await readVerified(join(root, `${outputId}.json`), label, 64 * 1024);
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(raw.toString("utf8"));
  } catch {
    throw new ArtifactUnavailableError(`${label} is not valid JSON`);
  }
  const counts = ["emittedBytes", "lines", "retainedBytes", "retainedLines"] as const;
  const valid =
    m !== null &&
    typeof m === "object" &&
    m.format === FORMAT &&
    typeof m.sha256 === "string" &&
    /^[0-9a-f]{64}$/.test(m.sha256) &&
    counts.every((k) => Number.isSafeInteger(m[k]) && (m[k] as number) >= 0) &&
    typeof m.truncated === "boolean" &&
    (m.retainedBytes as number) <= (m.emittedBytes as number) + NEWLINE_STDERR_LINE.length &&
    (m.truncated || (m.retainedBytes === m.emittedBytes && m.retainedLines === m.lines));
  if (!valid) throw new ArtifactUnavailableError(`${label} is malformed`);
  const meta: OutputMetadata = {
    sha256: m.sha256 as string,
    emittedBytes: m.emittedBytes as number,
    lines: m.lines as number,
    retainedBytes: m.retainedBytes as number,
    retainedLines: m.retainedLines as number,
    truncated: m.truncated as boolean,
  };
  if (outputIdOf(meta) !== outputId) throw new ArtifactUnavailableError(`${label} does not match its ID (tampered)`);
  return { outputId, ...meta };
}

/**
 * One pass over the opened transcript: checks size, digest and line count against the reference, and keeps the
 * bytes in [from, to) for the caller. Reading the page in the same pass as the digest means the bytes returned
 * are the bytes verified.
 */
export async function verifyTranscript(root: string, ref: OutputRef, label: string, from = 0, to = 0): Promise<Buffer> {
  const { handle, size } = await openVerified(join(root, `${ref.outputId}.out`), label);
  try {
    if (size !== ref.retainedBytes)
      throw new ArtifactUnavailableError(`${label} is ${size} bytes, its metadata says ${ref.retainedBytes}`);
    const hash = createHash("sha256");
    const window = Buffer.alloc(Math.max(0, Math.min(to, size) - from));
    const buf = Buffer.allocUnsafe(Math.min(READ_CHUNK, Math.max(1, size)));
    let at = 0;
    let newlines = 0;
    let last = -1;
    while (at < size) {
      const { bytesRead } = await handle.read(buf, 0, Math.min(buf.length, size - at), at);
      if (bytesRead === 0) break;
      const chunk = buf.subarray(0, bytesRead);
      hash.update(chunk);
      newlines += countNewlines(chunk);
      last = chunk[bytesRead - 1];
      const lo = Math.max(from, at);
      const hi = Math.min(from + window.length, at + bytesRead);
      if (lo < hi) chunk.copy(window, lo - from, lo - at, hi - at);
      at += bytesRead;
    }
    if (at !== size) throw new ArtifactUnavailableError(`${label} changed while it was read`);
    if (hash.digest("hex") !== ref.sha256)
      throw new ArtifactUnavailableError(`${label} does not match its digest (corrupt or tampered)`);
    if (newlines + (size > 0 && last !== 0x0a ? 1 : 0) !== ref.retainedLines)
      throw new ArtifactUnavailableError(`${label} does not match its line count`);
    return window;
  } finally {
    await handle.close();
  }
}

export interface OutputPage {
  ref: OutputRef;
  /** The first byte of the page (the requested offset, moved back to a character start if it was inside one). */
  offset: number;
  /** The byte after the page: the next stable offset, or `ref.retainedBytes` at the end. */
  end: number;
  text: string;
}

/** Reads one page (at most 20 KiB, whole characters) after verifying the sidecar and the whole transcript. */
export async function readOutputPage(
  outputId: string,
  req: PageRequest = {},
  root = outputRoot(),
): Promise<OutputPage> {
  await savedBeforeRead(root, outputId);
  const ref = await readSidecar(root, outputId);
  const { offset, limit } = checkPage(req, ref.retainedBytes);
  // Three bytes of context on each side are enough to find character boundaries.
  const from = Math.max(0, offset - 3);
  const to = Math.min(ref.retainedBytes, offset + limit + 4);
  const window = await verifyTranscript(root, ref, `output ${outputId}`, from, to);
  const { start, end } = pageBounds(window, from, ref.retainedBytes, offset, limit);
  return { ref, offset: start, end, text: window.subarray(start - from, end - from).toString("utf8") };
}
