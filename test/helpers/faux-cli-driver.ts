// A driver extension for running the real `pi` CLI offline: registers pi-ai's scripted faux provider, whose model
// answers every prompt with "ok" (no API key, no network).
import "./agent-dir.ts";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { fauxAssistantMessage, fauxProvider } from "@earendil-works/pi-ai";

export default function driver(pi: ExtensionAPI): void {
  const faux = fauxProvider({ provider: "faux" });
  faux.setResponses([fauxAssistantMessage("ok"), fauxAssistantMessage("ok")]);
  pi.registerProvider(faux.provider as never);
}
