// Pi entry point. Thin: creates the supervisor host lazily, registers the tools, and ties the host's life to Pi's
// session, so every Python process ends at session_shutdown (quit, reload, new, resume, fork).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { SupervisorHost, type HostOptions } from "../actors/host.ts";
import { registerCodeExecutionTool } from "./tools/code-execution.ts";

export interface CodeExecutionOptions {
  host?: HostOptions;
}

export function createCodeExecutionExtension(options: CodeExecutionOptions = {}) {
  return function codeExecution(pi: ExtensionAPI): void {
    let host: SupervisorHost | undefined;
    const getHost = () => (host ??= new SupervisorHost(options.host));

    registerCodeExecutionTool(pi, getHost);

    pi.on("session_shutdown", async () => {
      const h = host;
      host = undefined;
      await h?.shutdown();
    });
  };
}

export default createCodeExecutionExtension();
