// `pi-code-supervisor inspect [<log.jsonl>]`: the inspector page without a live Pi, for reading a recorded log
// (a bug report) and stepping through it. Runs until interrupted (Ctrl-C).
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { startInspector } from "./server.ts";

export async function inspectLogCommand(log: string | undefined, port?: number): Promise<number> {
  const path = log ? resolve(log) : undefined;
  if (path && !existsSync(path)) {
    console.error(`no such file: ${path}`);
    return 2;
  }
  const started = await startInspector({
    ...(port ? { port } : {}),
    ...(path ? { logPath: () => path } : {}),
    replayLimitBytes: 256 * 1024 * 1024,
  });
  if (!started.ok) {
    console.error(started.error);
    return 1;
  }
  // The handlers come first: whoever reads the URL may stop us right after it.
  const stopped = new Promise<void>((done) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      done();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  console.log(`Inspector: ${started.value.url}`);
  console.log(path ? `Showing ${path}; press Ctrl-C to stop.` : "Open a log from the page; press Ctrl-C to stop.");
  await stopped;
  await started.value.close();
  return 0;
}
