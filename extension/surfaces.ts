// Which tool surfaces are registered: the `tools` setting (settings files, PI_CODE_EXECUTION_TOOLS) or the
// `--code-tools` flag, from `code_execution` (with its output and source tools), `python`, `eval` and `exec`.
// `python_set_interpreter` comes with code_execution or python. All surfaces share one supervisor per Pi session.
// Pi cannot unregister a tool: one that is no longer chosen is registered again hidden.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { didYouMean } from "../lib/closest.ts";
import { SURFACES, type ResolvedSettings } from "../store/settings.ts";

export { SURFACES };
export type SurfaceName = (typeof SURFACES)[number];
export const CODE_TOOLS_FLAG = "code-tools";

export interface SurfaceChoice {
  active: SurfaceName[];
  /** Where the list came from: the flag, or the setting's source. */
  from: string;
  /** Names that are no surface, and surfaces this version does not have: warnings in /code-status, and said once at
   * start-up (extension/lifecycle.ts). */
  warnings: string[];
}

/** Registers one surface's tools through `pi` (hidden ones go through a wrapper that hides them). */
export type Registrar = (pi: ExtensionAPI) => void;

/** The surfaces a flag value or the settings choose. Unknown names are warnings, never errors. */
export function chooseSurfaces(
  flag: string | undefined,
  settings: ResolvedSettings,
  available: ReadonlySet<SurfaceName>,
): SurfaceChoice {
  const names = flag !== undefined ? splitNames(flag) : [...settings.values.tools];
  // `exec: true` is the settings' shorthand for `exec` in `tools`.
  if (flag === undefined && settings.values.exec && !names.includes("exec")) names.push("exec");
  const o = settings.sources.tools;
  const from =
    flag !== undefined
      ? `--${CODE_TOOLS_FLAG}`
      : o?.source === "default"
        ? "default"
        : `${o?.source === "env" ? "env" : `${o?.source} settings`} ${o?.where ?? ""}`.trim();
  const warnings: string[] = [];
  const active: SurfaceName[] = [];
  for (const name of names) {
    if (!(SURFACES as readonly string[]).includes(name)) {
      // Names from the settings are warned about where the settings are read (store/settings.ts).
      if (flag !== undefined)
        warnings.push(
          `tools (${from}): "${name}" is not a surface (known: ${SURFACES.join(", ")}); ignored${didYouMean(name, SURFACES)}`,
        );
    } else if (!available.has(name as SurfaceName)) {
      warnings.push(`tools (${from}): the "${name}" surface is not available in this version; ignored`);
    } else if (!active.includes(name as SurfaceName)) active.push(name as SurfaceName);
  }
  if (names.length > 0 && active.length === 0) warnings.push(`tools (${from}): no usable surface is chosen`);
  return { active, from, warnings };
}

function splitNames(value: string): string[] {
  return [
    ...new Set(
      value
        .split(",")
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
}

/** Keeps Pi's tool registrations in step with the chosen surfaces. */
export class Surfaces {
  private readonly pi: ExtensionAPI;
  private readonly registrars: Partial<Record<SurfaceName | "python_set_interpreter", Registrar>>;
  /** Per registrar: registered visible (true) or hidden (false); absent: never registered. */
  private readonly state = new Map<string, boolean>();
  private choice: SurfaceChoice = { active: [], from: "default", warnings: [] };

  constructor(pi: ExtensionAPI, registrars: Partial<Record<SurfaceName | "python_set_interpreter", Registrar>>) {
    this.pi = pi;
    this.registrars = registrars;
  }

  available(): Set<SurfaceName> {
    return new Set(SURFACES.filter((s) => this.registrars[s]));
  }

  current(): SurfaceChoice {
    return this.choice;
  }

  isActive(name: SurfaceName): boolean {
    return this.choice.active.includes(name);
  }

  /** Registers the chosen surfaces, hides the others that were registered before. */
  apply(choice: SurfaceChoice): void {
    this.choice = choice;
    const wanted = new Set<string>(choice.active);
    if (wanted.has("code_execution") || wanted.has("python")) wanted.add("python_set_interpreter");
    for (const [name, register] of Object.entries(this.registrars)) {
      if (!register) continue;
      const visible = wanted.has(name);
      const before = this.state.get(name);
      if (before === visible || (before === undefined && !visible)) continue;
      register(visible ? this.pi : hiding(this.pi));
      this.state.set(name, visible);
    }
  }

  /** Registers the visible surfaces again (their schemas state settings such as timeouts). */
  refresh(): void {
    for (const [name, visible] of this.state) if (visible) this.registrars[name as SurfaceName]?.(this.pi);
  }
}

/** `pi` whose registerTool registers hidden tools: not declared to the model, not callable. */
function hiding(pi: ExtensionAPI): ExtensionAPI {
  return new Proxy(pi, {
    get(target, prop, receiver) {
      if (prop === "registerTool")
        return (def: Parameters<ExtensionAPI["registerTool"]>[0]) =>
          target.registerTool({ ...def, exposure: "hidden" });
      return Reflect.get(target, prop, receiver);
    },
  });
}
