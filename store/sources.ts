// Saved sources: every script is stored once under `<agent dir>/code-execution/<sourceId>.py`, where the
// sourceId is the first 12 hex characters of the source's SHA-256, so a loaded source verifies itself. A
// different source under an existing ID is a collision and is never written over.
import { createHash } from "node:crypto";
import { lstat } from "node:fs/promises";
import { join } from "node:path";
import { agentDir } from "./agent-dir.ts";
import {
  ArtifactUnavailableError,
  checkDir,
  checkPage,
  ensurePrivateDir,
  pageBounds,
  placeOnce,
  readVerified,
  writeAll,
  writeTemp,
  type PageRequest,
} from "./artifact-fs.ts";

export const SOURCE_DIR = "code-execution";
export const SOURCE_ID_PATTERN = /^[0-9a-f]{12}$/;
/** Larger than any accepted script (extension/code-execution/params.ts allows 8 MiB). */
const MAX_SOURCE_BYTES = 16 * 1024 * 1024;

export class CodeArtifactCollisionError extends Error {
  constructor(sourceId: string) {
    super(
      `A different source is already saved as ${sourceId}; it was not overwritten. Remove ${SOURCE_DIR}/${sourceId}.py if it is damaged.`,
    );
    this.name = "CodeArtifactCollisionError";
  }
}

export function sourceRoot(): string {
  return join(agentDir(), SOURCE_DIR);
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Recent short sources' IDs: the same script is hashed on every run of it and, for redaction, on every model
 * call that shows it (extension/code-execution/context-hook.ts). Bounded in entries and size; the oldest goes first. */
const recentIds = new Map<string, string>();
const RECENT_IDS = 512;
const RECENT_ID_CHARS = 4096;

export function sourceIdOf(code: string): string {
  const seen = recentIds.get(code);
  if (seen !== undefined) return seen;
  const id = sha256Hex(Buffer.from(code, "utf8")).slice(0, 12);
  if (code.length <= RECENT_ID_CHARS) {
    if (recentIds.size >= RECENT_IDS) recentIds.delete(recentIds.keys().next().value!);
    recentIds.set(code, id);
  }
  return id;
}

/** Sources this process saved or verified, by path: a repeated script is not written or read again. */
const known = new Set<string>();
/** Directories this process checked (created, owned, private). */
const checkedDirs = new Set<string>();

/** The sourceId of `code` when this process already saved it (no disk access), else undefined. */
export function knownSourceId(code: string, root = sourceRoot()): string | undefined {
  const sourceId = sourceIdOf(code);
  return known.has(join(root, `${sourceId}.py`)) ? sourceId : undefined;
}

/** Saves `code` (idempotent) and returns its sourceId. A source already on disk is verified, not written again;
 * one this process saved before costs one asynchronous lstat (no temp file, no directory check), and is saved
 * again when it was removed meanwhile. */
export async function saveSource(code: string, root = sourceRoot()): Promise<string> {
  const sourceId = sourceIdOf(code);
  const path = join(root, `${sourceId}.py`);
  if (known.has(path)) {
    const st = await lstat(path).catch(() => undefined);
    if (st?.isFile()) return sourceId;
    known.delete(path);
    checkedDirs.delete(root);
  }
  const bytes = Buffer.from(code, "utf8");
  if (!checkedDirs.has(root)) {
    await ensurePrivateDir(root);
    checkedDirs.add(root);
  }
  const existing = await readVerified(path, `source ${sourceId}`, MAX_SOURCE_BYTES).catch(() => undefined);
  if (!existing) {
    const temp = await writeTemp(root, (h) => writeAll(h, bytes));
    if (!(await placeOnce(temp, path))) {
      const placed = await readVerified(path, `source ${sourceId}`, MAX_SOURCE_BYTES).catch(() => undefined);
      if (!placed || !placed.equals(bytes)) throw new CodeArtifactCollisionError(sourceId);
    }
  } else if (!existing.equals(bytes)) throw new CodeArtifactCollisionError(sourceId);
  known.add(path);
  return sourceId;
}

/**
 * Loads a saved source and checks that its digest starts with its ID. Throws ArtifactUnavailableError
 * (`missing` when there is no such file).
 */
export async function loadSource(sourceId: string, root = sourceRoot()): Promise<string> {
  if (!SOURCE_ID_PATTERN.test(sourceId))
    throw new ArtifactUnavailableError(`"${sourceId}" is not a sourceId (12 lowercase hex characters)`);
  await checkDir(root, "saved source");
  const label = `source ${sourceId}`;
  const bytes = await readVerified(join(root, `${sourceId}.py`), label, MAX_SOURCE_BYTES);
  if (!sha256Hex(bytes).startsWith(sourceId))
    throw new ArtifactUnavailableError(`${label} does not match its ID (corrupt or tampered)`);
  return bytes.toString("utf8");
}

export interface SourcePage {
  sourceId: string;
  offset: number;
  end: number;
  totalBytes: number;
  lines: number;
  text: string;
}

/** One page (at most 20 KiB, whole characters) of a verified saved source. */
export async function readSourcePage(
  sourceId: string,
  req: PageRequest = {},
  root = sourceRoot(),
): Promise<SourcePage> {
  return pageOf(sourceId, await loadSource(sourceId, root), req);
}

/** One page of a source already verified (loaded, or recovered from the session branch). */
export function pageOf(sourceId: string, code: string, req: PageRequest = {}): SourcePage {
  const bytes = Buffer.from(code, "utf8");
  const { offset, limit } = checkPage(req, bytes.length);
  const { start, end } = pageBounds(bytes, 0, bytes.length, offset, limit);
  const lines = code === "" ? 0 : code.split("\n").length - (code.endsWith("\n") ? 1 : 0);
  return {
    sourceId,
    offset: start,
    end,
    totalBytes: bytes.length,
    lines,
    text: bytes.subarray(start, end).toString("utf8"),
  };
}
