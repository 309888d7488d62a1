// The `python_set_interpreter` tool: selects the interpreter code_execution uses (ahead of --python, PI_PYTHON and
// virtual-environment discovery), or clears the selection. It is validated first (a directory is refused with the
// interpreter inside it named). Sessions running another interpreter are stopped at once: their namespaces are
// gone, and the result says so. The selection is kept in the result's details, so it follows the session branch.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { describeSource, type SupervisorHost } from "../../host/index.ts";
import { SET_INTERPRETER_TOOL, type CodeEnvironment } from "../environment.ts";
import { setInterpreterRenderers } from "../shared/render-pages.ts";

export interface SetInterpreterDetails {
  /** The executable now selected; absent when the selection was cleared. */
  selected?: string;
  version?: string;
  /** Sessions stopped because they ran another interpreter. */
  stoppedSessions: string[];
}

export function registerSetInterpreterTool(
  pi: ExtensionAPI,
  environment: CodeEnvironment,
  peekHost: () => SupervisorHost | undefined,
  /** The notebook session when the python surface is active: a selection always replaces its kernel (pi-python). */
  notebook: () => string | undefined = () => undefined,
): void {
  pi.registerTool({
    ...setInterpreterRenderers,
    name: SET_INTERPRETER_TOOL,
    label: "Python interpreter",
    description:
      "Choose the Python interpreter code_execution uses: `path` is an absolute path to a Python executable, a path " +
      "relative to the working directory (or starting with ~), or a bare command on PATH such as python3.12; a " +
      "directory is refused (name the python inside it, e.g. .venv/bin/python). Omit `path` to go back to automatic " +
      "discovery (--python, PI_PYTHON, $VIRTUAL_ENV, .venv/venv, python3). Running sessions on another interpreter " +
      "are stopped: their variables are gone and their next run starts an empty namespace.",
    promptSnippet: "Select the Python interpreter for code_execution",
    // pi-python's parameter name and type; omitting it clears the selection.
    parameters: Type.Object(
      {
        path: Type.Optional(
          Type.String({
            description:
              "Path to a Python 3.9+ interpreter binary, or a bare command name resolvable on PATH. Directories are " +
              "rejected. Omit to clear the selection.",
          }),
        ),
      },
      { additionalProperties: false },
    ),
    // `interpreter` was this parameter's name in our previous version: calls written for it still work.
    prepareArguments: (args: unknown) => {
      if (!args || typeof args !== "object" || !("interpreter" in args)) return args as { path?: string };
      const { interpreter, ...rest } = args as { interpreter?: unknown; path?: unknown };
      if (rest.path !== undefined && rest.path !== interpreter) {
        throw new Error("python_set_interpreter: give `path` only (`interpreter` is its old name).");
      }
      return { ...rest, ...(interpreter !== undefined ? { path: interpreter } : {}) } as { path?: string };
    },
    executionMode: "sequential",
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      const wanted = params.path?.trim();
      let selected: string | undefined;
      let version: string | undefined;
      if (wanted) {
        // Probed where code runs (inside the sandbox, on the remote side), never on this machine for them.
        const probe = await environment.interpreter.validate(wanted, ctx.cwd);
        if (!probe.ok) throw new Error(`${probe.error}. The selection is unchanged.`);
        selected = probe.value.executable;
        version = probe.value.version;
      }
      environment.interpreter.select(selected);
      const now = await environment.interpreter.resolve(ctx.cwd);
      const host = peekHost();
      const target = now.ok ? now.value.executable : undefined;
      const kernel = wanted ? notebook() : undefined;
      const stale = (host?.sessions() ?? []).filter((s) => s.python !== target || s.name === kernel);
      await Promise.all(stale.map((s) => host!.stopSession(s.name)));
      const lines: string[] = [];
      if (now.ok) {
        const v = now.value;
        lines.push(
          selected
            ? `code_execution now uses Python ${v.version} at ${v.executable} (selected here; ahead of --python, PI_PYTHON and virtual environments).`
            : `Selection cleared: code_execution uses Python ${v.version} at ${v.executable} (${describeSource(v.source)}).`,
        );
      } else lines.push(`Selection cleared, but discovery finds no usable interpreter: ${now.error}`);
      if (kernel && stale.some((s) => s.name === kernel))
        lines.push(`The python kernel (session "${kernel}") was replaced: its namespace is empty now.`);
      if (stale.length) {
        const names = stale.map((s) => `"${s.name}"`).join(", ");
        lines.push(
          `Stopped session${stale.length === 1 ? "" : "s"} ${names}: ${stale.length === 1 ? "its" : "their"} namespace is gone; the next run in ${stale.length === 1 ? "it" : "each"} starts empty on the new interpreter.`,
        );
      } else lines.push("No session was running another interpreter; fresh runs and new sessions use it from now on.");
      const details: SetInterpreterDetails = {
        ...(selected ? { selected } : {}),
        ...((version ?? (now.ok ? now.value.version : undefined))
          ? { version: version ?? (now.ok ? now.value.version : "") }
          : {}),
        stoppedSessions: stale.map((s) => s.name),
      };
      return { content: [{ type: "text" as const, text: lines.join("\n") }], details };
    },
  });
}
