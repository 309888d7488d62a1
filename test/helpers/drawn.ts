// A tool result as Pi draws it: the renderer of the tool's definition in the running session, themeless, at a width.
import { stripTerminalSequences } from "@earendil-works/pi-tui";
import type { PiHarness } from "./pi-session.ts";

export function drawnResult(
  pi: PiHarness,
  tool: string,
  r: unknown,
  options: { expanded?: boolean; width?: number } = {},
): string {
  const expanded = options.expanded ?? false;
  const theme = { fg: (_c: string, t: string) => t, bold: (t: string) => t } as never;
  const ctx = { state: {}, executionStarted: true, expanded, invalidate: () => {}, lastComponent: undefined };
  const c = pi.session.getToolDefinition(tool)!.renderResult!(
    r as never,
    { expanded, isPartial: false },
    theme,
    ctx as never,
  );
  return c
    .render(options.width ?? 120)
    .map((l: string) => stripTerminalSequences(l).trimEnd())
    .join("\n");
}
