// `/code-status`: the interpreter (version, path, where it came from), each live session with its state, pid,
// working directory, age and last run, the settings with their sources, and warnings.
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { SupervisorHost } from "../../host/host.ts";
import { describeSource } from "../../actors/interpreter/interpreter.ts";
import { SETTING_KEYS, type ResolvedSettings } from "../../store/settings.ts";
import type { CodeEnvironment } from "../environment.ts";
import { sessionLines } from "../status.ts";
import { show } from "./show.ts";

function valueAt(values: unknown, dotted: string): unknown {
  let v = values;
  for (const p of dotted.split(".")) v = (v as Record<string, unknown> | undefined)?.[p];
  return v;
}

export function settingsLines(s: ResolvedSettings): string[] {
  const width = Math.max(...SETTING_KEYS.map((k) => k.key.length));
  return SETTING_KEYS.map(({ key }) => {
    const v = valueAt(s.values, key);
    const o = s.sources[key];
    const from = o.source === "default" ? "default" : o.source === "env" ? `env ${o.where}` : `${o.source} ${o.where}`;
    return `  ${key.padEnd(width)}  ${(v === undefined ? "(default)" : JSON.stringify(v)).padEnd(18)}  ${from}`;
  });
}

export async function statusReport(
  cwd: string,
  environment: CodeEnvironment,
  host: SupervisorHost | undefined,
  now = Date.now(),
): Promise<string> {
  const lines: string[] = [];
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
    health.ok ? `  healthy: ${health.value}` : `  unhealthy: ${health.error.message}${"hint" in health.error && health.error.hint ? ` [${health.error.hint}]` : ""}`,
  );
  const sessions = host?.sessions() ?? [];
  lines.push("", sessions.length ? `Live sessions (${sessions.length}):` : "Live sessions: none");
  for (const [i, line] of sessionLines(sessions, now).entries()) {
    const s = sessions[i];
    lines.push(
      `  ${line}`,
      `    cwd ${s.cwd}${s.python && interp.ok && s.python !== interp.value.executable ? `  (runs ${s.python})` : ""}`,
    );
  }
  const settings = environment.settings();
  lines.push("", "Settings (value, source):", ...settingsLines(settings));
  const warnings = [...settings.warnings, ...environment.interpreter.notes, ...(host ? [...host.warnings] : [])];
  lines.push("", warnings.length ? "Warnings:" : "Warnings: none", ...warnings.map((w) => `  - ${w}`));
  return lines.join("\n");
}

export function registerCodeStatusCommand(
  pi: ExtensionAPI,
  environment: CodeEnvironment,
  peekHost: () => SupervisorHost | undefined,
): void {
  pi.registerCommand("code-status", {
    description: "Python interpreter, live code_execution sessions, settings with their sources, warnings",
    handler: async (_args: string, ctx: ExtensionCommandContext) => {
      show(ctx, await statusReport(ctx.cwd, environment, peekHost()));
    },
  });
}
