// The extension's one door into the supervisor. Everything the Pi adapter (extension/) uses of the system comes
// from here: the composition root that builds the host and its companions (create.ts), the host (commands in;
// selectors and change events out), its observability (event log, inspector), the journal link, every write the
// tools ask of the store (artifacts.ts, displays.ts, settings-files.ts), and the types and small helpers of its
// commands' inputs and outputs. The root actor is never exported.
export { createSupervisorRoot, type RootOptions, type SupervisorRoot } from "./create.ts";
export type { CellPart } from "./requests.ts";
export {
  SupervisorHost,
  type HostOptions,
  type RunCallbacks,
  type RunRequestInput,
  type RunResult,
  type SessionInfo,
  type SessionsListener,
} from "./host.ts";
export { Observability, type ObservabilitySettings, type RecorderOptions } from "./observability.ts";
export { JournalLink, type CallContext, type JournalSettings } from "./journal-link.ts";
// What the tools keep on disk, decided behind the host (the extension reads the store, never writes it).
export {
  artifactsLanded,
  evalDirs,
  keepEvalOutput,
  keepOutput,
  keepScript,
  prepareEvalDirs,
  restoreScript,
  saveScript,
  type ArtifactOutcome,
  type EvalDirs,
} from "./artifacts.ts";
export { keepImage } from "./displays.ts";
export { runNotebookCall, type NotebookCallResult, type NotebookCallSpec } from "./notebook-call.ts";
export { moveLegacySettings } from "./settings-files.ts";
export { brokenBackend, chooseOperations, type BackendChoice } from "./backend.ts";
export type { BackendInfo, ProcessOperations } from "../actors/process/operations.ts";
export { SESSION_NAME_PATTERN } from "../actors/prepare/prepare.ts";

// Interpreters: the resolver the host is given, and what the interpreter tool and /code-status say of one.
export {
  describeSource,
  InterpreterResolver,
  validateInterpreter,
  type Interpreter,
  type InterpreterSource,
  type VenvDiscovery,
} from "../actors/interpreter/interpreter.ts";

// A run's output and installation progress, as the live updates and the result text read them.
export type { ChannelCapture, CollectedOutput, OutputMark, RunOutput } from "../lib/run-output.ts";
export type { RunShown, ShownDisplay } from "../actors/runner/display-frames.ts";
export type { InstallProgress } from "../actors/deps/dependencies.ts";
// Where a host keeps what it installs (/code-status lists the folders).
export { defaultSessionRoot, sessionPackagesDir } from "../actors/deps/install-targets.ts";
export { defaultEnvRoot } from "./backend.ts";

// Nested tool calls: what a run's caller provides (the Pi tools and how they run) and what other extensions see.
export {
  LEGACY_TOOL_CALL_EVENT,
  NESTED_TOOL_FINISH_EVENT,
  NESTED_TOOL_START_EVENT,
  type RunTool,
  type DispatchOutcome,
  type LegacyToolCallEvent,
  type NestedCall,
  type NestedCallHooks,
  type NestedCallOutcome,
  type RunTools,
} from "../actors/calls/contract.ts";
export type { ToolResultLike } from "../actors/calls/tool-results.ts";

// Shell sessions (the exec tools): reports of the host's exec side, and the log folder it writes.
export {
  execLogDir,
  type ExecSessionInfo,
  type KillReport,
  type ProcessReport,
  type SetOnExitReport,
  type StartRequest,
  type WriteRequest,
} from "./exec.ts";
export type { SessionIO } from "../actors/shell/session-io.ts";
