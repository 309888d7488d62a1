// What a run shows besides its output bytes: the trailing value and error text of a notebook cell (from `done`) and
// rich displays (`display` frames, docs/protocol.md "Rich display"). They go to the host's record of the run, never
// through the machines: like output, they are data, not facts that change a run's state.
import type { Frame } from "../process/framing.ts";

export type RunShown =
  /** A notebook cell's trailing value, as repr(). */
  | { kind: "value"; text: string }
  /** A notebook cell's traceback (or syntax error, or exit message), kept apart from stderr. */
  | { kind: "exception"; text: string }
  /** An image: base64 PNG or JPEG, or SVG text. */
  | { kind: "image"; mime: "image/png" | "image/jpeg" | "image/svg+xml"; data: string }
  | { kind: "markdown" | "html" | "text"; text: string }
  /** JSON text (parsed by whoever collects it). */
  | { kind: "json"; text: string }
  /** A status event of eval's helpers (log(), phase()): JSON text of `{op, ...}`, never part of the output. */
  | { kind: "status"; text: string }
  /** A cell of a batch ended and the next one starts (docs/protocol.md, "Notebook cells"): output and displays
   * before it are this cell's. */
  | CellShown;

/** How a batch's cell ended: what `done` says of a run, for one of its cells. */
export interface CellShown {
  kind: "cell";
  exitCode: number;
  error: string | null;
  displayed: boolean;
  value?: string;
  exception?: string;
}

/** What a run shows in its output: displays (not a cell's value, error text or end). */
export type ShownDisplay = Exclude<RunShown, { kind: "value" | "exception" | "cell" }>;

const IMAGE_MIMES = new Set(["image/png", "image/jpeg", "image/svg+xml"]);

/** A `display` frame as a RunShown, or undefined when it is malformed (then it is ignored). */
export function displayOf(frame: Frame): RunShown | undefined {
  const kind = frame.kind;
  if (kind === "image") {
    const mime = frame.mime;
    if (typeof mime !== "string" || !IMAGE_MIMES.has(mime) || typeof frame.data !== "string") return undefined;
    return { kind, mime: mime as "image/png", data: frame.data };
  }
  if (kind === "markdown" || kind === "html" || kind === "text" || kind === "json" || kind === "status") {
    return typeof frame.text === "string" ? { kind, text: frame.text } : undefined;
  }
  return undefined;
}

/** A `cell` frame as a RunShown. */
export function cellOf(frame: Frame): CellShown {
  return {
    kind: "cell",
    exitCode: Number(frame.exitCode ?? 1),
    error: typeof frame.error === "string" ? frame.error : null,
    displayed: frame.displayedValue === true,
    ...(typeof frame.value === "string" ? { value: frame.value } : {}),
    ...(typeof frame.exception === "string" && frame.exception ? { exception: frame.exception } : {}),
  };
}

/** The value and error text a notebook cell's `done` carries. */
export function doneShown(frame: Frame): RunShown[] {
  const out: RunShown[] = [];
  if (typeof frame.value === "string") out.push({ kind: "value", text: frame.value });
  if (typeof frame.exception === "string" && frame.exception) out.push({ kind: "exception", text: frame.exception });
  return out;
}
