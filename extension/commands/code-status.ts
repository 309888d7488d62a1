// `/code-status`: the interpreter (version, path, where it came from), each live session with its state, pid,
// working directory, age and last run, the settings with their sources (and whether the project's are trusted),
// every file and folder the extension uses, and warnings (among them each project value that was ignored, and why).
import { existsSync } from "node:fs";
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import {
  defaultEnvRoot,
  defaultSessionRoot,
  describeSource,
  execLogDir,
  sessionPackagesDir,
  type SupervisorHost,
} from "../../host/index.ts";
import {
  globalSettingsPath,
  projectSettingsPath,
  SETTING_KEYS,
  TRUST_HINT,
  type ResolvedSettings,
} from "../../store/settings.ts";
import { sourceRoot } from "../../store/sources.ts";
import { outputRoot } from "../../store/artifacts.ts";
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import type { CodeEnvironment } from "../environment.ts";
import { sessionLines } from "../session-status.ts";
import { show } from "./show.ts";

function valueAt(values: unknown, dotted: string): unknown {
  let v = values;
  for (const p of dotted.split(".")) v = (v as Record<string, unknown> | undefined)?.[p];
  return v;
}

export function settingsLines(s: ResolvedSettings): string[] {
  const width = Math.max(...SETTING_KEYS.map((k) => k.key.length));
  // A key whose project value was not applied says so on its row; the warnings say why.
  const overruled = new Set(s.ignored.flatMap((i) => (i.key ? [i.key] : [])));
  return SETTING_KEYS.map(({ key }) => {
    const v = valueAt(s.values, key);
    const o = s.sources[key];
    const from = o.source === "default" ? "default" : o.source === "env" ? `env ${o.where}` : `${o.source} ${o.where}`;
    const note = overruled.has(key) ? " (project value ignored)" : "";
    return `  ${key.padEnd(width)}  ${(v === undefined ? "(default)" : JSON.stringify(v)).padEnd(18)}  ${from}${note}`;
  });
}

/** One line: whether the project's settings files are read, and what they may set. */
export function trustLine(s: ResolvedSettings): string {
  return s.trusted
    ? "Project trusted: its settings apply but for boundary keys (only from the global file, flags, environment)"
    : `Project not trusted: its settings files are ignored (${TRUST_HINT})`;
}

/** What /code-status says about the tool surfaces: the active ones (and where that came from), and warnings. */
export interface SurfaceReport {
  line: string;
  warnings: string[];
}

/** Where the journal and the event logs are (the extension knows; the host does not). */
export interface StatusPlaces {
  /** The journal's file; undefined when it is off. */
  journal?: string;
  /** The event logs' directory; undefined when recording is off. */
  eventLogDir?: string;
  /** This Pi session's log, once the supervisor started. */
  eventLog?: string;
}

export function placesLines(cwd: string, places: StatusPlaces, host: SupervisorHost | undefined): string[] {
  const file = (path: string) => `${path} (${existsSync(path) ? "exists" : "absent"})`;
  const rows: [string, string][] = [
    ["journal", places.journal ?? "off (PI_CODE_EXECUTION_JOURNAL=off or the journal setting)"],
    [
      "event logs",
      places.eventLogDir === undefined
        ? "off (PI_CODE_EXECUTION_LOG=0)"
        : `${places.eventLogDir} (${places.eventLog ? `this session: ${places.eventLog}` : "this session's log starts with its first run"})`,
    ],
    ["global settings", file(globalSettingsPath())],
    ["project settings", file(projectSettingsPath(cwd))],
    ["saved scripts", sourceRoot()],
    ["saved outputs", outputRoot()],
    ["dependency environments", defaultEnvRoot()],
    ["shell session logs", execLogDir(getAgentDir())],
    [
      "session packages",
      host
        ? sessionPackagesDir(defaultSessionRoot(), host.id)
        : `${defaultSessionRoot()} (a folder in it per Pi session, from its first run)`,
    ],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, where]) => `  ${label.padEnd(width)}  ${where}`);
}

export async function statusReport(
  cwd: string,
  environment: CodeEnvironment,
  host: SupervisorHost | undefined,
  now = Date.now(),
  places: StatusPlaces = {},
  surfaces?: () => SurfaceReport,
): Promise<string> {
  const lines: string[] = [];
  const report = surfaces?.();
  const interp = await environment.interpreter.resolve(cwd);
  if (interp.ok) {
    const i = interp.value;
    lines.push(`Python ${i.version}: ${i.executable}`);
    lines.push(`  from ${describeSource(i.source)}${i.requested !== i.executable ? ` (${i.requested})` : ""}`);
    if (i.venv) lines.push(`  virtual environment ${i.venv}`);
  } else lines.push(`Python: not available: ${interp.error}`);
  const ops = host?.ops ?? environment.operations();
  const health = await ops.health().catch((e: Error) => ({ ok: false as const, error: { message: e.message } }));
  lines.push(
    `Backend: ${ops.backend.label}`,
    health.ok
      ? `  healthy: ${health.value}`
      : `  unhealthy: ${health.error.message}${"hint" in health.error && health.error.hint ? ` [${health.error.hint}]` : ""}`,
  );
  if (report) lines.push("", report.line);
  const sessions = host?.sessions() ?? [];
  lines.push("", sessions.length ? `Live sessions (${sessions.length}):` : "Live sessions: none");
  for (const [i, line] of sessionLines(sessions, environment.settings().values.notebookSession, now).entries()) {
    const s = sessions[i];
    lines.push(
      `  ${line}`,
      `    cwd ${s.cwd}${s.python && interp.ok && s.python !== interp.value.executable ? `  (runs ${s.python})` : ""}`,
    );
  }
  const settings = environment.settings();
  lines.push("", "Settings (value, source):", ...settingsLines(settings), trustLine(settings));
  lines.push("", "Files:", ...placesLines(cwd, places, host));
  const warnings = [
    ...(report?.warnings ?? []),
    ...settings.warnings,
    ...(environment.flagWarning ? [environment.flagWarning] : []),
    ...environment.interpreter.notes,
    ...(host ? [...host.warnings] : []),
  ];
  lines.push("", warnings.length ? "Warnings:" : "Warnings: none", ...warnings.map((w) => `  - ${w}`));
  return lines.join("\n");
}

export function registerCodeStatusCommand(
  pi: ExtensionAPI,
  environment: CodeEnvironment,
  peekHost: () => SupervisorHost | undefined,
  places: () => StatusPlaces = () => ({}),
  surfaces?: () => SurfaceReport,
  name = "code-status",
): void {
  pi.registerCommand(name, {
    description: "Tool surfaces, Python interpreter, live sessions, settings with their sources, files, warnings",
    handler: async (_args: string, ctx: ExtensionCommandContext) => {
      show(ctx, await statusReport(ctx.cwd, environment, peekHost(), Date.now(), places(), surfaces));
    },
  });
}
