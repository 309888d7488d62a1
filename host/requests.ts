// What the host's door takes and gives (host/host.ts): the options a host is built with, a run request and its
// callbacks, a run's result, and the listener of session changes.
import type { AnyActorRef, InspectionEvent, Observer } from "xstate";
import type { CellRef, CommandEvent, Language, Limits, RunnerFact, RunOutcome, Surface } from "../machines/events.ts";
import type { ShownDisplay } from "../actors/runner/display-frames.ts";
import type { SessionEntry } from "../machines/supervisor.ts";
import type { RunTools } from "../actors/calls/contract.ts";
import type { InstallProgress } from "../actors/deps/dependencies.ts";
import type { InterpreterResolver, Probe } from "../actors/interpreter/interpreter.ts";
import type { ResourceLimits } from "../lib/setting-types.ts";
import type { ProcessOperations } from "../actors/process/operations.ts";
import type { CollectedOutput, OutputMark, RunOutput } from "../lib/run-output.ts";
import type { Clock } from "../record/observe.ts";
import type { Result } from "../lib/result.ts";
import type { ExecHostOptions } from "./exec.ts";

export interface HostOptions {
  limits?: Partial<Limits>;
  /** Where runners start (host/backend.ts). Default: local, unless PI_CODE_EXECUTION_BACKEND says otherwise (then
   * the environment's backend settings). The host closes it at shutdown. */
  ops?: ProcessOperations;
  /** Resource limits of new runners (settings `limits`); read when each process starts. */
  resourceLimits?: () => ResourceLimits;
  /** Environment for new processes; read when each process starts. */
  env?: () => NodeJS.ProcessEnv;
  /** The interpreter of every run, instead of discovery (default: discovery from the run's working directory). */
  python?: (cwd: string) => Promise<Result<Probe>>;
  now?: () => number;
  /** A synchronous observer of every inspection event of the actor system. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /** The clock of the actor system's timers (the recorder numbers them; see record/observe.ts). */
  clock?: Clock;
  /** Taps on the machines' inputs from outside, called just before delivery (facts from boundary actors are
   * seen through `inspect`, see record/observe.ts). */
  /** A command from outside the machines, before its receiver gets it: the root, or (`to`, an actor's system id) a
   * session a direct run goes to. */
  onCommand?: (event: CommandEvent, to?: string) => void;
  onStop?: () => void;
  /** A fact a session's runner sends straight to a run (not to its parent), before the run gets it. */
  onFact?: (from: AnyActorRef, to: AnyActorRef, fact: RunnerFact) => void;
  onOutput?: (runId: string, channel: string, chunk: Uint8Array) => void;
  /** Interpreter discovery and the python_set_interpreter selection (default: discovery with default settings). */
  interpreter?: InterpreterResolver;
  /** Where PEP 723 environments (fresh runs) and session package directories go (defaults: actors/deps/). */
  packages?: { envRoot?: string; sessionRoot?: string };
  /** Whether sessions watch and reload their local modules (read when each session starts; default on). */
  moduleReload?: () => boolean;
  /** Whether fresh runs use pre-started spare runners (read at each fresh run; default on). */
  spareRunners?: () => boolean;
  /** A spare runner unused this long retires (default 60 s). */
  spareIdleMs?: number;
  /** Shell sessions (host/exec.ts): log folder and quotas, process operations. */
  exec?: Partial<Omit<ExecHostOptions, "hostId" | "env" | "now">>;
}

export interface RunRequestInput {
  code: string;
  cwd: string;
  timeoutMs: number;
  session?: string;
  reset?: boolean;
  /** The tool surface asking (the inspector and event log show it in the run's input). */
  surface?: Surface;
  /** A notebook cell's place in its call. */
  cell?: CellRef;
  /** Change to this directory before the code runs; it goes first on sys.path (notebook `cwd`). */
  chdir?: string;
  /** `value`: the trailing value's repr and the error text come back as `value` and `exception`, not as output. */
  result?: "print" | "value";
  /** `work`: the timeout pauses while a nested call is open. */
  budget?: "wall" | "work";
  /** This surface's escalation: its grace period, pi-python's second SIGINT halfway through it, and pi-python's
   * `interruptGraceMs: 0` (`noKill`: the interrupt, then no automatic kill). */
  escalation?: { graceMs?: number; secondInterrupt?: boolean; noKill?: boolean };
  /** Absent: Python. JavaScript runs only in a session (`eval`'s js cells, docs/protocol-js.md). */
  language?: Language;
  /** Python sessions: the code of further cells run in this run after `code`, each only when the cells before it
   * completed (one round trip for a notebook call's cells; docs/protocol.md "Notebook cells"). The result's `cells`
   * says what each one ran. */
  batch?: string[];
  /** With `batch`, each further cell's own timeout (eval's per-cell budget): the deadline starts again from it when
   * that cell starts. Absent: `timeoutMs` bounds the run with its whole batch. */
  cellTimeoutsMs?: number[];
}

/** One cell of a batch run: what it wrote and showed, and how it ended. */
export interface CellPart {
  stdout: string;
  stderr: string;
  /** The trailing value's repr (`result: "value"`). */
  value?: string;
  /** The error text of a failed cell (`result: "value"`). */
  exception?: string;
  /** How the runner saw it end: `null` when it completed (every cell but the last one run did). */
  error: string | null;
  exitCode: number;
  durationMs: number;
}

export interface RunCallbacks {
  signal?: AbortSignal;
  /** Called (throttled by the caller) whenever the run writes output. */
  onOutput?: (output: RunOutput) => void;
  /** Dependency installation progress (each installer line). */
  onProgress?: (progress: InstallProgress) => void;
  /** The Pi tools the code may call, and how (actors/calls/dispatch.ts); without it no tool is exposed. */
  tools?: RunTools;
  /** A display (image, markdown, HTML, JSON, text) of this run; the text returned goes into its stdout at that
   * point of the output (the runner drained its output before the display). */
  onDisplay?: (item: ShownDisplay) => string | undefined;
  /** A batch's cell `index` (0-based) completed and the next one starts; its output starts at `next` (for a live
   * preview of it: `output.previewSince(next)`). */
  onCell?: (index: number, part: CellPart, next: OutputMark) => void;
}

export interface RunResult extends CollectedOutput {
  outcome: RunOutcome;
  /** `result: "value"`: the trailing expression's repr (absent when there was none, or it was None). */
  value?: string;
  /** `result: "value"`: the traceback or error text of a failed run. */
  exception?: string;
  /** A batch: every cell the run ran, in order; the last one's end is the outcome's. Absent for other runs. */
  cells?: CellPart[];
}

/** A change of the supervisor's session table: every session by name, now and before. */
export type SessionsListener = (
  sessions: Readonly<Record<string, SessionEntry>>,
  previous: Readonly<Record<string, SessionEntry>>,
) => void;
