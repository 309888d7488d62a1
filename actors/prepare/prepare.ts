// Preparation of a request, before the supervisor routes it: the limits a request must respect (timeout, session
// name, control-frame size), the script's PEP 723 metadata (dependencies to install; requires-python checked for
// fresh runs, noted as without effect in a session), the interpreter (discovered and validated, so the request
// names an executable and a session never mixes interpreters) and, for a fresh run, the key a spare runner must
// match (a JavaScript request needs neither: Node runs it). The `prepare` actor the supervisor spawns for each
// request, one at a time (machines/supervisor.ts).
import { fromCallback, type EventObject } from "xstate";
import type { Hint, PrepareFact, Prepared, RunStartEvent } from "../../machines/events.ts";
import { MAX_FRAME_BYTES } from "../process/framing.ts";
import { describeSource, type Interpreter, type InterpreterFailure } from "../interpreter/interpreter.ts";
import { parseScriptMetadata, satisfiesRequiresPython, type ScriptMetadata } from "../../lib/pep723.ts";
import { fail, ok, type Result } from "../../lib/result.ts";
import { errorMessage } from "../../lib/errors.ts";
import { backendHint } from "../process/backend-hints.ts";

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
 * directory), so the host checks it too, not only the tool's parameters (extension/code-execution/params.ts uses this pattern). */
export const SESSION_NAME_PATTERN = "^(?!\\.+$)[A-Za-z0-9._-]{1,64}$";

type PrepareRequest = { code: string; cwd: string; session?: string; timeoutMs: number; language?: "python" | "js" };
type Found = Result<Interpreter, string | InterpreterFailure> | undefined;

export async function prepareRun(
  request: PrepareRequest,
  interpreter: ((cwd: string) => Promise<Result<Interpreter, string | InterpreterFailure>>) | undefined,
): Promise<Result<PreparedRun, PrepareFailure>> {
  const checked = checkRequest(request);
  if (!checked.ok || checked.value === "js") return checked.ok ? ok({ notes: [] }) : checked;
  return prepareWith(request, checked.value, interpreter ? await interpreter(request.cwd) : undefined);
}

/** Preparation without waiting, when the interpreter is already known (`interpreterNow` answers from its cache;
 * undefined from it: not known yet). Undefined when it cannot be settled at once: the prepare actor does it. */
export function prepareNow(
  request: PrepareRequest,
  interpreterNow: ((cwd: string) => Found | "pending") | undefined,
): Result<PreparedRun, PrepareFailure> | undefined {
  const checked = checkRequest(request);
  if (!checked.ok || checked.value === "js") return checked.ok ? ok({ notes: [] }) : checked;
  const found = interpreterNow ? interpreterNow(request.cwd) : undefined;
  return found === "pending" ? undefined : prepareWith(request, checked.value, found);
}

/** What needs no interpreter: the request's bounds and its PEP 723 block (a JavaScript request has none). */
function checkRequest(request: PrepareRequest): Result<ScriptMetadata | undefined | "js", PrepareFailure> {
  // A timer cannot wait longer than 2^31-1 ms: a longer deadline would fire at once and report a false timeout.
  if (!(request.timeoutMs > 0 && request.timeoutMs <= MAX_TIMER_MS)) {
    return fail({
      message: `timeoutMs must be more than 0 and at most ${MAX_TIMER_MS} ms (got ${request.timeoutMs}); the code did not run`,
    });
  }
  if (request.session !== undefined && !SESSION_NAME.test(request.session)) {
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
  if (request.language === "js") return ok("js"); // no interpreter, no PEP 723
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
  return ok(meta.value);
}

/** The rest, once the interpreter is known: requires-python, and notices about keys without effect. */
function prepareWith(
  request: PrepareRequest,
  m: ScriptMetadata | undefined,
  found: Found,
): Result<PreparedRun, PrepareFailure> {
  if (found && !found.ok) {
    const { message, hint } = typeof found.error === "string" ? { message: found.error, hint: undefined } : found.error;
    return fail({ message, ...(hint ? { hints: [backendHint(hint, message)] } : {}) });
  }
  const py = found?.ok ? found.value : undefined;
  const notes: string[] = [];
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

const SESSION_NAME = new RegExp(SESSION_NAME_PATTERN);
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Room in a run frame for everything but the code (ids, file name, tools, paths). */
const FRAME_ROOM = 1 << 20;

/** The code's size as JSON in a run frame (escaping can make it up to 6 bytes per UTF-16 unit); exact only when
 * that bound could reach the frame limit. */
function runFrameBytes(code: string): number {
  if (6 * code.length <= MAX_FRAME_BYTES - FRAME_ROOM) return code.length;
  return Buffer.byteLength(JSON.stringify(code), "utf8");
}

export interface PrepareDeps {
  /** Interpreter discovery for a working directory; absent: the runner starts the host's default interpreter. */
  interpreter?: (cwd: string) => Promise<Result<Interpreter, string | InterpreterFailure>>;
  /** The same, answered at once from what is already known ("pending": it is not). */
  interpreterNow?: (cwd: string) => Result<Interpreter, string | InterpreterFailure> | "pending";
  /** The key a spare runner must match to serve a fresh run (interpreter, cwd, environment); absent: spares off. */
  spareKey?: (python: string | undefined, cwd: string) => string | undefined;
  now: () => number;
}

/** A request's prepared fields (machines/events.ts `Prepared`) from its preparation. */
function preparedFields(deps: PrepareDeps, input: PrepareRequest, p: PreparedRun): Prepared {
  const python = p.interpreter?.executable;
  const spareKey = input.session === undefined ? deps.spareKey?.(python, input.cwd) : undefined;
  return {
    ...(python ? { python } : {}),
    ...(p.dependencies ? { dependencies: p.dependencies } : {}),
    ...(spareKey !== undefined ? { spareKey } : {}),
    ...(p.notes.length ? { notes: p.notes } : {}),
  };
}

/** Preparation at the door: when nothing needs waiting for (the interpreter is known), the host settles a request
 * before it sends it, and the supervisor routes it without a prepare actor (RunRequest `prepared`). Undefined: the
 * prepare actor does it. */
export function prepareAtDoor(
  deps: PrepareDeps,
  input: PrepareRequest,
): ({ prepared: { failed?: PrepareFailure } } & Prepared) | undefined {
  const interpreterNow = deps.interpreterNow;
  const p = prepareNow(input, deps.interpreter ? (cwd) => (interpreterNow ? interpreterNow(cwd) : "pending") : undefined);
  if (!p) return undefined;
  return p.ok ? { prepared: {}, ...preparedFields(deps, input, p.value) } : { prepared: { failed: p.error } };
}

/** The `prepare` actor: one request in, one `prepare.done` or `prepare.failed` fact out. Stopped early (the request
 * was cancelled, Pi shut down), it reports nothing. */
export function createPrepareLogic(deps: PrepareDeps) {
  return fromCallback<EventObject, RunStartEvent>(({ input, sendBack }) => {
    let stopped = false;
    const send = (fact: PrepareFact) => {
      if (!stopped) sendBack(fact);
    };
    prepareRun(input, deps.interpreter).then(
      (p) => {
        const at = deps.now();
        if (!p.ok) return send({ type: "prepare.failed", at, runId: input.runId, ...p.error });
        send({ type: "prepare.done", at, runId: input.runId, ...preparedFields(deps, input, p.value) });
      },
      (e: unknown) => send({ type: "prepare.failed", at: deps.now(), runId: input.runId, message: errorMessage(e) }),
    );
    return () => {
      stopped = true;
    };
  });
}
