// What the model sees of a `python` call, in pi-python's layout: a header line of tags ([kernel reset], [timed out]
// or [cancelled], [killed]), then per cell `── cell i/N title ──` with its stdout, stderr, `=> value` or traceback,
// or `[not run]`; the whole text tail-truncated to Pi's limits (2000 lines, 50 KB) with a note saying so.
import type { ImageInfo } from "../shared/display/collector.ts";
import type { BackendMark } from "../shared/backend-mark.ts";
import { truncateForModel } from "../shared/notebook/truncate.ts";
import type { CellStatus } from "../../machines/notebook-call.ts";

/** A cell's status (machines/notebook-call.ts); `running` only in the live updates of a call in progress. */
export type PythonCellStatus = CellStatus;

export interface PythonCellDetails {
  index: number;
  title?: string;
  status: PythonCellStatus;
  stdout: string;
  stderr: string;
  value?: string;
  exception?: string;
  durationMs: number;
  images?: ImageInfo[];
  json?: unknown[];
}

export interface PythonDetails {
  cells: PythonCellDetails[];
  /** Where the cells ran, when not on this machine. */
  backend?: BackendMark;
  timedOut: boolean;
  cancelled: boolean;
  killed: boolean;
  reset: boolean;
  python?: { version: string; executable: string };
  session?: { name: string; ordinal: number; isLost: boolean };
}

function stream(label: "stdout" | "stderr", data: string): string {
  const trimmed = data.replace(/\n+$/, "");
  return trimmed.includes("\n") ? `${label}:\n${trimmed}` : `${label}: ${trimmed}`;
}

export function formatPythonResult(titles: (string | undefined)[], d: PythonDetails, partial: boolean): string {
  const total = titles.length;
  const sections: string[] = [];
  for (let i = 0; i < total; i++) {
    const cell = d.cells[i];
    const heading = `── cell ${i + 1}/${total}${titles[i] ? ` ${titles[i]}` : ""} ──`;
    const status = cell?.status;
    if (!cell || status === "not_run") {
      if (!partial) sections.push(`${heading}\n[not run]`);
      continue;
    }
    const parts = [heading];
    if (cell.stdout) parts.push(stream("stdout", cell.stdout));
    if (cell.stderr) parts.push(stream("stderr", cell.stderr));
    if (cell.status === "ok" && cell.value) parts.push(`=> ${cell.value}`);
    if (cell.status !== "ok" && cell.exception) parts.push(cell.exception.trimEnd());
    if (status === "running") parts.push("[running...]");
    sections.push(parts.join("\n"));
  }
  const tags: string[] = [];
  if (d.reset) tags.push("[kernel reset]");
  if (d.timedOut) tags.push("[timed out]");
  else if (d.cancelled) tags.push("[cancelled]");
  if (d.killed) tags.push("[killed]");
  if (tags.length) sections.unshift(tags.join(" "));
  if (d.killed && !partial)
    sections.push(
      `[the kernel was killed: its namespace is gone and the next call starts an empty one; every byte printed before the kill is above]`,
    );
  return truncateForModel(sections.join("\n\n").trimEnd() || "[no output]");
}
