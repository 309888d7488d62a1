// A live inspector in its own process, for tests that throw hostile clients at it: if a request could crash the
// inspector, it crashes this process (and the test sees the exit) instead of the test runner. It serves a real
// supervisor's frames and the recorded log given by `--log`, under `--token` when given; with `--stately <port>` it
// also feeds @statelyai/inspect's relay server on that port (the online mode). It prints `{"url": …}` once listening, and each line on stdin makes the
// supervisor handle one more event, so connected pages receive a live frame.
import "./agent-dir.ts";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { SupervisorHost } from "../../host/host.ts";
import { SystemObserver } from "../../record/observe.ts";
import { startInspector } from "../../inspector/server.ts";
import { startStatelyLink } from "../../inspector/stately.ts";

const { values: args } = parseArgs({
  options: { log: { type: "string" }, token: { type: "string" }, stately: { type: "string" } },
});
const { log, token } = args;
const observer = new SystemObserver();
const host = new SupervisorHost(observer.hostOptions());
const started = await startInspector({ observer, ...(log ? { logPath: () => log } : {}), ...(token ? { token } : {}) });
if (!started.ok) {
  console.error(started.error);
  process.exit(1);
}
const stately = args.stately ? await startStatelyLink({ observer, port: Number(args.stately) }) : undefined;
if (stately && !stately.ok) {
  console.error(stately.error);
  process.exit(1);
}
process.stdout.write(`${JSON.stringify({ url: started.value.url })}\n`);
let pokes = 0;
createInterface({ input: process.stdin }).on("line", () => {
  // A session that does not exist: the supervisor receives (and ignores) the event; the page sees it.
  // The observer saw the root actor (the host keeps it to itself).
  observer.root?.send({ type: "session.stop", at: Date.now(), name: `poke-${++pokes}` });
});
process.stdin.on("end", async () => {
  await stately?.value.close();
  await started.value.close();
  await host.shutdown();
  process.exit(0);
});
