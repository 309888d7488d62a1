// pi-code-execution's earlier artifact references, still found in resumed sessions: a structured `sourceRef`
// (`{artifactId: "<16 or 64 hex>.py", lines, sha256, toolCallId?}`) naming a script saved as `code-execution/<artifactId>`,
// and an `outputRef` (`{artifactId: "<64 hex>.out", ...counts, sha256, toolCallId, truncated}`) naming a transcript
// saved as `code-execution-output/<artifactId>` with no sidecar: the reference itself is the metadata, and its
// artifactId is the digest of that metadata. Both are verified as strictly as our own artifacts before use.
import { createHash } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import {
  ArtifactUnavailableError,
  checkDir,
  checkPage,
  pageBounds,
  readVerified,
  type PageRequest,
} from "./artifact-fs.ts";
import { outputRoot, verifyTranscript, type OutputPage } from "./artifacts.ts";
import { sha256Hex, sourceRoot } from "./sources.ts";

export interface LegacySourceRef {
  artifactId: string;
  lines: number;
  /** The full digest, or a prefix of it (12+ hex) in the oldest references. */
  sha256: string;
  /** The code_execution call that ran it: its branch copy is the first tried when the file is missing. */
  toolCallId?: string;
}

export interface LegacyOutputRef {
  artifactId: string;
  emittedBytes: number;
  lines: number;
  retainedBytes: number;
  retainedLines: number;
  sha256: string;
  toolCallId: string;
  truncated: boolean;
}

export const LEGACY_SOURCE_ARTIFACT = /^(?:[0-9a-f]{16}|[0-9a-f]{64})\.py$/;
export const LEGACY_OUTPUT_ARTIFACT = /^[0-9a-f]{64}\.out$/;
const MAX_SOURCE_BYTES = 16 * 1024 * 1024;

/** Lines as pi-code-execution counted them for a source (`split(/\r?\n/)`). */
export const legacyLineCount = (code: string): number => code.split(/\r?\n/).length;

/** Whether `code` is the script `ref` names: digest, artifact name and line count all agree. */
export function matchesLegacySource(code: string, ref: LegacySourceRef): boolean {
  const digest = sha256Hex(Buffer.from(code, "utf8"));
  return (
    digest.startsWith(ref.sha256) &&
    (ref.artifactId === `${digest}.py` || ref.artifactId === `${digest.slice(0, 16)}.py`) &&
    legacyLineCount(code) === ref.lines
  );
}

/** Loads the script a legacy sourceRef names and verifies it. Throws ArtifactUnavailableError (`missing` when the
 * file or its directory is not there). */
export async function loadLegacySource(ref: LegacySourceRef, root = sourceRoot()): Promise<string> {
  if (!LEGACY_SOURCE_ARTIFACT.test(ref.artifactId))
    throw new ArtifactUnavailableError(`"${ref.artifactId}" is not a saved script's name`);
  await checkDir(root, "saved source");
  const label = `source ${ref.artifactId}`;
  const code = (await readVerified(join(root, ref.artifactId), label, MAX_SOURCE_BYTES)).toString("utf8");
  if (!matchesLegacySource(code, ref))
    throw new ArtifactUnavailableError(`${label} does not match its reference (corrupt or tampered)`);
  return code;
}

/** The artifactId a legacy outputRef must have: the digest of its metadata, as pi-code-execution named it. */
export function legacyOutputArtifactId(ref: Omit<LegacyOutputRef, "artifactId" | "toolCallId">): string {
  const canonical = JSON.stringify([
    "pi-code-execution-output-v1",
    ref.sha256,
    ref.emittedBytes,
    ref.lines,
    ref.retainedBytes,
    ref.retainedLines,
    ref.truncated,
  ]);
  return `${createHash("sha256").update(canonical).digest("hex")}.out`;
}

/** Why a legacy outputRef cannot be what it says, or undefined when it is consistent. */
function refProblem(ref: LegacyOutputRef): string | undefined {
  if (!LEGACY_OUTPUT_ARTIFACT.test(ref.artifactId) || !/^[0-9a-f]{64}$/.test(ref.sha256))
    return "it is not content-addressed";
  const counts = [ref.emittedBytes, ref.lines, ref.retainedBytes, ref.retainedLines];
  if (
    !counts.every((n) => Number.isSafeInteger(n) && n >= 0) ||
    ref.retainedBytes <= 0 ||
    ref.emittedBytes < ref.retainedBytes ||
    ref.lines < ref.retainedLines ||
    ref.truncated !== ref.retainedBytes < ref.emittedBytes
  )
    return "its counts are inconsistent";
  if (legacyOutputArtifactId(ref) !== ref.artifactId) return "its artifactId does not match its metadata (tampered)";
  return undefined;
}

/** One page (at most 20 KiB, whole characters) of the transcript a legacy outputRef names, after verifying the
 * reference, then the file's size, digest, line count, owner and mode. */
export async function readLegacyOutputPage(
  ref: LegacyOutputRef,
  req: PageRequest = {},
  root = outputRoot(),
): Promise<OutputPage> {
  const problem = refProblem(ref);
  if (problem) throw new ArtifactUnavailableError(`the outputRef cannot be used: ${problem}`);
  await checkDir(root, "output artifact");
  const id = ref.artifactId.slice(0, -".out".length);
  const asRef = {
    outputId: id,
    sha256: ref.sha256,
    emittedBytes: ref.emittedBytes,
    lines: ref.lines,
    retainedBytes: ref.retainedBytes,
    retainedLines: ref.retainedLines,
    truncated: ref.truncated,
  };
  const { offset, limit } = checkPage(req, ref.retainedBytes);
  const from = Math.max(0, offset - 3);
  const to = Math.min(ref.retainedBytes, offset + limit + 4);
  const window = await verifyTranscript(root, asRef, `output ${ref.artifactId}`, from, to);
  const { start, end } = pageBounds(window, from, ref.retainedBytes, offset, limit);
  return { ref: asRef, offset: start, end, text: window.subarray(start - from, end - from).toString("utf8") };
}

/** The distinct verified scripts saved under legacy names that start with `sourceId` (`<16 or 64 hex>.py`): a short
 * ID also finds an earlier session's script; two different ones make it ambiguous (the caller says so). */
export async function legacySourcesWithId(sourceId: string, root = sourceRoot()): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  const found = new Set<string>();
  for (const name of names) {
    if (!name.startsWith(sourceId) || !LEGACY_SOURCE_ARTIFACT.test(name)) continue;
    const bytes = await readVerified(join(root, name), `source ${name}`, MAX_SOURCE_BYTES).catch(() => undefined);
    if (bytes && sha256Hex(bytes).startsWith(name.slice(0, -".py".length))) found.add(bytes.toString("utf8"));
  }
  return [...found];
}
