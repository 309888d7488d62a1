// How a command's report reaches the user: Pi's UI (a notice in the chat, never sent to the model), or stdout when
// Pi runs without one (print mode).
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";

export function show(ctx: ExtensionContext, text: string, level: "info" | "warning" | "error" = "info"): void {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stdout.write(`${text}\n`);
}
