// What the host settles before a run is requested: the interpreter (discovered and validated, so the request names
// an executable and a session never mixes interpreters) and the script's PEP 723 metadata (dependencies to
// install; requires-python checked for fresh runs, noted as without effect in a session). Also the bookkeeping the
// machines do not keep because it needs a clock: when each session started and how its last run went.
import type { Hint, RunOutcome } from "../machines/events.ts";
import { runHints } from "../actors/deps/hints.ts";
import { MAX_FRAME_BYTES } from "../actors/process/frames.ts";
import { describeSource, type Interpreter } from "../actors/interpreter/interpreter.ts";
import { parseScriptMetadata, satisfiesRequiresPython } from "../actors/deps/pep723.ts";
import { fail, ok, type Result } from "../lib/result.ts";

export interface PreparedRun {
  interpreter?: Interpreter;
  dependencies?: string[];
  /** Notices about the script's metadata for the result. */
  notes: string[];
}

export interface PrepareFailure {
  message: string;
  hints?: Hint[];
}

/** Session names: 1-64 of A-Z a-z 0-9 . _ -, not only dots. A name becomes part of a path (the session's package
 * directory), so the host checks it too, not only the tool's parameters (extension/params.ts uses this pattern). */
export const SESSION_NAME_PATTERN = "^(?!\\.+$)[A-Za-z0-9._-]{1,64}$";

export async function prepareRun(
  request: { code: string; cwd: string; session?: string; timeoutMs: number },
  interpreter: (() => Promise<Result<Interpreter>>) | undefined,
): Promise<Result<PreparedRun, PrepareFailure>> {
  // A timer cannot wait longer than 2^31-1 ms: a longer deadline would fire at once and report a false timeout.
  if (!(request.timeoutMs > 0 && request.timeoutMs <= MAX_TIMER_MS)) {
    return fail({
      message: `timeoutMs must be more than 0 and at most ${MAX_TIMER_MS} ms (got ${request.timeoutMs}); the code did not run`,
    });
  }
  if (request.session !== undefined && !new RegExp(SESSION_NAME_PATTERN).test(request.session)) {
    return fail({
      message: `session name ${JSON.stringify(request.session)} is not valid (1-64 of A-Z a-z 0-9 . _ -, not only dots); the code did not run`,
    });
  }
  const frameBytes = runFrameBytes(request.code);
  if (frameBytes > MAX_FRAME_BYTES - FRAME_ROOM) {
    // It could never be sent: refused here rather than left waiting for its deadline.
    return fail({
      message: `the code is ${frameBytes} bytes as a run frame, more than the runner's control channel takes (${MAX_FRAME_BYTES >> 20} MiB); the code did not run`,
    });
  }
  const meta = parseScriptMetadata(request.code);
  if (!meta.ok) {
    return fail({
      message: `invalid PEP 723 metadata: ${meta.error}; the code did not run`,
      hints: [
        {
          id: "pep723_syntax",
          text: 'A PEP 723 block looks like:\n# /// script\n# dependencies = ["requests<3", "rich"]\n# ///',
        },
      ],
    });
  }
  const found = interpreter ? await interpreter() : undefined;
  if (found && !found.ok) return fail({ message: found.error });
  const py = found?.ok ? found.value : undefined;
  const notes: string[] = [];
  const m = meta.value;
  if (m?.requiresPython !== undefined) {
    if (request.session !== undefined) {
      notes.push(
        `[PEP 723: requires-python (${m.requiresPython}) has no effect in a session; session "${request.session}" runs Python ${py?.version ?? "as started"}]`,
      );
    } else if (py && satisfiesRequiresPython(py.version, m.requiresPython) === false) {
      return fail({
        message:
          `the script requires Python ${m.requiresPython} (PEP 723 requires-python), but the interpreter is Python ` +
          `${py.version} at ${py.executable} (${describeSource(py.source)}); the code did not run`,
        hints: [
          {
            id: "requires_python",
            text: "Choose a matching interpreter with the python_set_interpreter tool (or Pi's --python flag, or PI_PYTHON).",
          },
        ],
      });
    }
  }
  const others = (m?.otherKeys ?? []).filter((k) => k !== "tool");
  if (others.length && request.session !== undefined) {
    notes.push(`[PEP 723: ${others.join(", ")} has no effect in a session]`);
  }
  return ok({
    ...(py ? { interpreter: py } : {}),
    ...(m && m.dependencies.length ? { dependencies: m.dependencies } : {}),
    notes,
  });
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Room in a run frame for everything but the code (ids, file name, tools, paths). */
const FRAME_ROOM = 1 << 20;

/** The code's size as JSON in a run frame (escaping can make it up to 6 bytes per UTF-16 unit); exact only when
 * that bound could reach the frame limit. */
function runFrameBytes(code: string): number {
  if (6 * code.length <= MAX_FRAME_BYTES - FRAME_ROOM) return code.length;
  return Buffer.byteLength(JSON.stringify(code), "utf8");
}

export interface SessionHistory {
  incarnation: number;
  startedAt: number;
  lastRun?: { at: number; status: RunOutcome["status"]; durationMs: number };
}

/** Session start times and last runs, from the outcomes the host sees. */
export class SessionBook {
  private readonly book = new Map<string, SessionHistory>();

  record(outcome: RunOutcome): void {
    const s = outcome.session;
    if (!s) return;
    const prev = this.book.get(s.name);
    const entry: SessionHistory =
      s.started || !prev || prev.incarnation !== s.incarnation
        ? { incarnation: s.incarnation, startedAt: outcome.requestedAt }
        : prev;
    // A run refused before it reached the session (busy, closing) is not the session's last run.
    if (!(outcome.status === "setup_error" && !outcome.kernel && !s.started)) {
      entry.lastRun = { at: outcome.finishedAt, status: outcome.status, durationMs: outcome.durationMs };
    }
    this.book.set(s.name, entry);
  }

  get(name: string, incarnation: number): SessionHistory | undefined {
    const h = this.book.get(name);
    return h && h.incarnation === incarnation ? h : undefined;
  }
}

/** The outcome of a request refused before it reached the supervisor (bad metadata, no interpreter, shut down). */
export function refusedOutcome(
  runId: string,
  request: { session?: string },
  requestedAt: number,
  at: number,
  failure: PrepareFailure | undefined,
  /** The session's current process, when it has one (the run never reached it: its ordinal is 0). */
  incarnation = 0,
): RunOutcome {
  return {
    runId,
    status: "setup_error",
    displayedValue: false,
    requestedAt,
    finishedAt: at,
    durationMs: Math.max(0, at - requestedAt),
    killed: false,
    message: failure ? failure.message : "The code_execution supervisor has shut down.",
    ...(failure?.hints ? { hints: failure.hints } : {}),
    ...(request.session !== undefined
      ? { session: { name: request.session, ordinal: 0, incarnation, started: false, isLost: false } }
      : {}),
  };
}

/** The outcome with the run-time hints read from its stderr tail, and the metadata notices. */
export function finishOutcome(outcome: RunOutcome, stderrTail: Buffer, notes: string[]): RunOutcome {
  const hints = runHints(stderrTail.toString("utf8"), {
    ...(outcome.session ? { session: outcome.session.name } : {}),
    ...(outcome.kernel ? { python: `Python ${outcome.kernel.python} (${outcome.kernel.executable})` } : {}),
  }).filter((h) => h.id !== "module_not_found" || outcome.status === "runtime_error");
  if (!hints.length && !notes.length) return outcome;
  return {
    ...outcome,
    ...(hints.length ? { hints: [...(outcome.hints ?? []), ...hints] } : {}),
    ...(notes.length ? { notes } : {}),
  };
}
