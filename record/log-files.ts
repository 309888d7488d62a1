// Where event logs live and how many are kept. One log per Pi session (per supervisor host), split into segments
// when it grows; old segments and old logs are deleted so the directory stays bounded.
import { readdirSync, statSync, unlinkSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { agentDir } from "../store/agent-dir.ts";

export interface LogLimits {
  /** A segment past this size is rotated at the next point where no timer is pending. */
  segmentBytes: number;
  /** Past this size a segment is rotated at once (its successor then starts mid-flight, see replay). */
  hardSegmentBytes: number;
  /** Segments kept per log; older ones are deleted. */
  segmentsPerLog: number;
  /** Files kept in the directory, newest first, and their total size. */
  maxFiles: number;
  maxTotalBytes: number;
}

export const DEFAULT_LOG_LIMITS: LogLimits = {
  segmentBytes: 8 * 1024 * 1024,
  hardSegmentBytes: 16 * 1024 * 1024,
  segmentsPerLog: 4,
  maxFiles: 200,
  maxTotalBytes: 256 * 1024 * 1024,
};

/** How to run this package's command line from wherever it is installed (it is not on PATH, nor on npm yet). */
export const CLI_COMMAND = `node ${fileURLToPath(new URL("../bin/pi-code-supervisor.js", import.meta.url))}`;

/** `PI_CODE_EXECUTION_LOG_DIR`, else `pi-code-supervisor/logs` in Pi's agent directory (as Pi names it, store/agent-dir.ts). */
export function defaultLogDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.PI_CODE_EXECUTION_LOG_DIR || join(agentDir(), "pi-code-supervisor", "logs");
}

/** `2025-01-31T12-00-00Z_<session>_<id>` + `.<segment>` for segments after the first + `.jsonl`. */
export function logBase(startedAt: number, piSession: string | undefined, id: string): string {
  const stamp = new Date(startedAt)
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replace(/:/g, "-");
  const session = (piSession ?? "nosession").replace(/[^A-Za-z0-9-]/g, "").slice(0, 36) || "nosession";
  return `${stamp}_${session}_${id}`;
}

export function segmentPath(dir: string, base: string, segment: number): string {
  return join(dir, segment === 0 ? `${base}.jsonl` : `${base}.${segment}.jsonl`);
}

/** Deletes the oldest log files until at most `maxFiles` remain within `maxTotalBytes`; `keep` is never deleted. */
export function pruneLogDir(dir: string, limits: LogLimits, keep: Set<string> = new Set()): string[] {
  let files: { path: string; mtime: number; size: number }[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith(".jsonl"))
      .map((f) => {
        const path = join(dir, f);
        const st = statSync(path);
        return { path, mtime: st.mtimeMs, size: st.size };
      })
      .sort((a, b) => b.mtime - a.mtime);
  } catch {
    return [];
  }
  const deleted: string[] = [];
  let total = 0;
  let count = 0;
  for (const f of files) {
    count += 1;
    total += f.size;
    if (keep.has(f.path) || keep.has(basename(f.path))) continue;
    if (count > limits.maxFiles || total > limits.maxTotalBytes) {
      try {
        unlinkSync(f.path);
        deleted.push(f.path);
        count -= 1;
        total -= f.size;
      } catch {
        // Already gone (another Pi pruned it): nothing to do.
      }
    }
  }
  return deleted;
}
