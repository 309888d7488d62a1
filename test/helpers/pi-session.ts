// A real Pi agent session, driven offline by pi-ai's scripted faux model (no API key, no network), with this
// extension loaded the way Pi loads it (from its path, through the resource loader).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fauxAssistantMessage, fauxProvider, fauxToolCall, type FauxResponseStep } from "@earendil-works/pi-ai";
import {
  createAgentSession,
  DefaultResourceLoader,
  getAgentDir,
  ModelRuntime,
  SessionManager,
  SettingsManager,
} from "@earendil-works/pi-coding-agent";

/** The entry Pi loads (package.json `pi.extensions`). */
export const EXTENSION_PATH = resolve(import.meta.dirname, "../../extension/pi-code-supervisor/index.ts");

export interface ToolResultMessage {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: { type: string; text?: string }[];
  details: any;
  isError: boolean;
}

export interface PiHarness {
  session: Awaited<ReturnType<typeof createAgentSession>>["session"];
  faux: ReturnType<typeof fauxProvider>;
  cwd: string;
  agentDir: string;
  events: any[];
  /** Runs one prompt where the scripted model calls code_execution with each of `calls` in turn (one per turn). */
  callTools(calls: Record<string, any>[], opts?: { batch?: boolean }): Promise<ToolResultMessage[]>;
  toolResults(): ToolResultMessage[];
  dispose(): Promise<void>;
}

export function textOf(m: ToolResultMessage): string {
  return m.content.map((c) => c.text ?? "").join("");
}

export async function startPi(
  options: {
    cwd?: string;
    extensionPaths?: string[];
    /** A scripted UI (every ExtensionUIContext method) bound in `rpc` mode, so commands and statuses can be seen. */
    uiContext?: Record<string, unknown>;
    /** PI_CODING_AGENT_DIR as given (e.g. `~/.pi/agent`), instead of a fresh directory; Pi resolves it. */
    agentDirEnv?: string;
    /** Pi flags (`--name`) as the CLI would set them, before session_start. */
    flags?: Record<string, boolean | string>;
    /** Extensions given as factories (Pi's built-ins such as `createCodemodeExtension()`). */
    extensionFactories?: unknown[];
    /** Pi's trust decision for the project (`ctx.isProjectTrusted()`); the SDK's default, as here, is trusted. */
    projectTrusted?: boolean;
    /** Tokens (4 characters each) per streamed delta of the faux model's messages; pi-ai's default is 3 to 5. A
     * session that sends megabytes of arguments sets it large: every delta is an event Pi handles, and 8 MiB of
     * arguments at the default are about 175 000 of them. */
    fauxTokenSize?: number;
  } = {},
): Promise<PiHarness> {
  // These two are not temp-dir.ts's, which removes its folders at exit: the demo, the fixture recorder and the
  // benchmarks start Pi here too, and what they keep (`bash scripts/demo.sh --keep`, event logs) outlives them.
  const root = mkdtempSync(join(tmpdir(), "pcs-pi-"));
  const cwd = options.cwd ?? mkdtempSync(join(tmpdir(), "pcs-cwd-"));
  process.env.PI_CODING_AGENT_DIR = options.agentDirEnv ?? join(root, "agent");
  const agentDir = getAgentDir();
  // Tests never write to the user's journal; a test that checks the journal sets its own path first.
  process.env.PI_CODE_EXECUTION_JOURNAL ??= join(root, "journal.sqlite");
  process.env.PI_OFFLINE = "1";
  process.env.PI_SKIP_VERSION_CHECK = "1";
  process.env.PI_TELEMETRY = "0";
  const faux = fauxProvider({
    provider: "faux",
    ...(options.fauxTokenSize ? { tokenSize: { min: options.fauxTokenSize, max: options.fauxTokenSize } } : {}),
  });
  const modelRuntime = await ModelRuntime.create({
    authPath: join(root, "auth.json"),
    modelsPath: null,
    refreshOnCreate: false,
  });
  modelRuntime.registerNativeProvider(faux.provider);
  const settingsManager = SettingsManager.inMemory(
    { compaction: { enabled: false }, retry: { enabled: false } },
    { projectTrusted: options.projectTrusted ?? true },
  );
  const resourceLoader = new DefaultResourceLoader({
    cwd,
    agentDir,
    settingsManager,
    noExtensions: true,
    additionalExtensionPaths: options.extensionPaths ?? [EXTENSION_PATH],
    ...(options.extensionFactories ? { extensionFactories: options.extensionFactories as never } : {}),
    noSkills: true,
    noPromptTemplates: true,
    noThemes: true,
    noContextFiles: true,
  });
  await resourceLoader.reload();
  const errors = resourceLoader.getExtensions().errors;
  if (errors.length) throw new Error(`extension failed to load: ${JSON.stringify(errors)}`);
  const { session } = await createAgentSession({
    cwd,
    agentDir,
    model: faux.getModel(),
    thinkingLevel: "off",
    modelRuntime,
    resourceLoader,
    sessionManager: SessionManager.inMemory(cwd),
    settingsManager,
  });
  for (const [name, value] of Object.entries(options.flags ?? {}))
    (session as any).extensionRunner?.setFlagValue(name, value);
  await session.bindExtensions(
    options.uiContext ? { mode: "rpc", uiContext: options.uiContext as never } : { mode: "print" },
  );
  const events: any[] = [];
  session.subscribe((e: any) => events.push(e));

  const toolResults = () => (session.messages as any[]).filter((m) => m.role === "toolResult") as ToolResultMessage[];

  return {
    session,
    faux,
    cwd,
    agentDir,
    events,
    toolResults,
    async callTools(calls, opts = {}) {
      const before = toolResults().length;
      const steps: FauxResponseStep[] = opts.batch
        ? [
            fauxAssistantMessage(
              calls.map((c) => fauxToolCall("code_execution", c)),
              { stopReason: "toolUse" },
            ),
          ]
        : calls.map((c) => fauxAssistantMessage([fauxToolCall("code_execution", c)], { stopReason: "toolUse" }));
      steps.push(fauxAssistantMessage("done"));
      faux.setResponses(steps);
      await session.prompt("run it");
      return toolResults().slice(before);
    },
    async dispose() {
      await (session as any).extensionRunner?.emit?.({ type: "session_shutdown", reason: "quit" });
      session.dispose();
    },
  };
}
