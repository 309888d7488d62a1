// File rules shared by the source and output artifact stores: private directories and files, atomic
// create-once placement (never overwrite), and opening that refuses symlinks, non-regular files, foreign owners
// and modes readable by others. Also the UTF-8-safe page bounds both readers use.
import { randomBytes } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { chmod, link, lstat, mkdir, open, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";

/** Thrown when an artifact cannot be used: missing, unsafe, corrupt or tampered. `missing` tells those apart. */
export class ArtifactUnavailableError extends Error {
  readonly missing: boolean;
  constructor(message: string, missing = false) {
    super(message);
    this.name = "ArtifactUnavailableError";
    this.missing = missing;
  }
}

/** Creates `dir` (0700) if needed and makes sure it is a private directory of ours, not a symlink. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await lstat(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  checkOwner(st, dir);
  if ((st.mode & 0o077) !== 0) await chmod(dir, 0o700);
}

/** Checks an existing artifact directory before reading from it. */
export async function checkDir(dir: string, what: string): Promise<void> {
  let st: Stats;
  try {
    st = await lstat(dir);
  } catch {
    throw new ArtifactUnavailableError(`the ${what} directory does not exist`, true);
  }
  if (!st.isDirectory()) throw new ArtifactUnavailableError(`the ${what} directory is not a directory (symlink?)`);
}

function checkOwner(st: Stats, name: string): void {
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw new ArtifactUnavailableError(`${name} belongs to another user`);
}

/**
 * Opens an artifact file for reading with O_NOFOLLOW and checks the opened file itself: a regular file of ours,
 * no group or other permission bits. `label` names it in errors (never an absolute path).
 */
export async function openVerified(path: string, label: string): Promise<{ handle: FileHandle; size: number }> {
  let st: Stats;
  try {
    st = await lstat(path);
  } catch {
    throw new ArtifactUnavailableError(`${label} is missing`, true);
  }
  if (st.isSymbolicLink()) throw new ArtifactUnavailableError(`${label} is a symlink, refused`);
  if (!st.isFile()) throw new ArtifactUnavailableError(`${label} is not a regular file`);
  let handle: FileHandle;
  try {
    // O_NONBLOCK: a FIFO swapped in after the lstat would otherwise block this open (and a libuv worker) forever;
    // it has no effect on the regular file that fstat must then find.
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    throw new ArtifactUnavailableError(`${label} cannot be opened (${(e as NodeJS.ErrnoException).code ?? e})`);
  }
  try {
    const fst = await handle.stat();
    if (!fst.isFile() || fst.ino !== st.ino || fst.dev !== st.dev)
      throw new ArtifactUnavailableError(`${label} changed while it was opened`);
    checkOwner(fst, label);
    if ((fst.mode & 0o077) !== 0)
      throw new ArtifactUnavailableError(
        `${label} is readable or writable by others (mode ${(fst.mode & 0o777).toString(8)}), refused`,
      );
    return { handle, size: fst.size };
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/** Reads a whole verified file (small files: sidecars and sources). */
export async function readVerified(path: string, label: string, maxBytes: number): Promise<Buffer> {
  const { handle, size } = await openVerified(path, label);
  try {
    if (size > maxBytes) throw new ArtifactUnavailableError(`${label} is ${size} bytes, more than ${maxBytes}`);
    const buf = Buffer.alloc(size);
    let at = 0;
    while (at < size) {
      const { bytesRead } = await handle.read(buf, at, size - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    if (at !== size) throw new ArtifactUnavailableError(`${label} changed while it was read`);
    return buf;
  } finally {
    await handle.close();
  }
}

/** A private (0600) temporary file in `dir`, written by `fill`, fsynced; returns its path. */
export async function writeTemp(dir: string, fill: (handle: FileHandle) => Promise<void>): Promise<string> {
  const path = join(dir, `.tmp-${process.pid}-${randomBytes(6).toString("hex")}`);
  const handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  try {
    await handle.chmod(0o600);
    await fill(handle);
    await handle.sync();
  } catch (e) {
    await handle.close();
    await unlink(path).catch(() => {});
    throw e;
  }
  await handle.close();
  return path;
}

/** Writes all of `data` at the handle's current position. */
export async function writeAll(handle: FileHandle, data: Uint8Array): Promise<void> {
  let at = 0;
  while (at < data.length) {
    const { bytesWritten } = await handle.write(data, at, data.length - at);
    at += bytesWritten;
  }
}

/**
 * Gives the temporary file its final name without ever replacing an existing file (link(2) fails with EEXIST),
 * then removes the temporary name. Returns false when `path` already existed.
 */
export async function placeOnce(temp: string, path: string): Promise<boolean> {
  try {
    await link(temp, path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  } finally {
    await unlink(temp).catch(() => {});
  }
}

export function isContinuation(b: number): boolean {
  return (b & 0xc0) === 0x80;
}

function sequenceLength(lead: number): number {
  return lead >= 0xf0 && lead < 0xf8 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
}

/** The start of the character that contains byte `pos` (pos itself unless it is inside a multi-byte character). */
export function charStart(bytes: Uint8Array, pos: number): number {
  if (pos <= 0 || pos >= bytes.length || !isContinuation(bytes[pos])) return pos;
  for (let k = 1; k <= 3 && pos - k >= 0; k++) {
    const b = bytes[pos - k];
    if (isContinuation(b)) continue;
    return sequenceLength(b) > k ? pos - k : pos;
  }
  return pos;
}

/** The end of the character that starts at `pos`. */
export function charEnd(bytes: Uint8Array, pos: number): number {
  let end = pos + 1;
  const want = pos + sequenceLength(bytes[pos]);
  while (end < want && end < bytes.length && isContinuation(bytes[end])) end++;
  return end;
}

export const PAGE_BYTES = 20 * 1024;

export interface PageRequest {
  offset?: number;
  limit?: number;
}

/** Validates paging parameters; the error names the parameter. */
export function checkPage(req: PageRequest, size: number): { offset: number; limit: number } {
  const offset = req.offset ?? 0;
  const limit = Math.min(req.limit ?? PAGE_BYTES, PAGE_BYTES);
  if (!Number.isSafeInteger(offset) || offset < 0)
    throw new Error(`\`offset\` must be a whole number of bytes >= 0 (got ${JSON.stringify(req.offset)}).`);
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new Error(
      `\`limit\` must be a whole number of bytes from 1 to ${PAGE_BYTES} (got ${JSON.stringify(req.limit)}).`,
    );
  if (offset > size) throw new Error(`\`offset\` ${offset} is past the end (${size} bytes).`);
  return { offset, limit };
}

/**
 * The byte range of one page of `bytes` (a window of the artifact that starts at `base`): starts on a character
 * boundary (moved back if `offset` is inside a character), ends before a character that would not fit, and holds
 * at least one character.
 */
export function pageBounds(
  bytes: Uint8Array,
  base: number,
  size: number,
  offset: number,
  limit: number,
): { start: number; end: number } {
  const start = base + charStart(bytes, offset - base);
  if (start >= size) return { start: size, end: size };
  let end = Math.min(size, start + limit);
  if (end < size) end = base + charStart(bytes, end - base);
  if (end <= start) end = base + charEnd(bytes, start - base);
  return { start, end };
}
