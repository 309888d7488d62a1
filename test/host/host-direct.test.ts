// The warm path through the real host (docs/design.md, "A warm session run"): a settled request for an idle session
// goes straight to the session, the runner tells the run its facts, and everything the supervisor's table used to
// show of a busy session (the footer, /code-status, /python-restart) still shows, read from the session itself.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { SupervisorHost } from "../../host/host.ts";
import type { CommandEvent } from "../../machines/events.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { startRequest } from "../helpers/exec-driver.ts";

let host: SupervisorHost;
let cwd: string;
const commands: { event: CommandEvent; to?: string }[] = [];

before(() => {
  cwd = tempDir("pcs-direct-");
  host = new SupervisorHost({ onCommand: (event, to) => commands.push({ event, ...(to ? { to } : {}) }) });
});
after(async () => {
  await host.shutdown();
});

const run = (code: string, session = "d", extra: Record<string, unknown> = {}) =>
  host.run({ code, cwd, timeoutMs: 20_000, session, ...extra });
const toOf = (runId: string) => commands.find((c) => "runId" in c.event && c.event.runId === runId)?.to;

/** Starts runs of `code` until one goes straight to the session (a request is settled at the door only while the
 * interpreter resolver's answer is fresh); a run that went through the root is aborted and awaited. */
async function directRun(code: string, signal?: AbortSignal): Promise<{ result: ReturnType<SupervisorHost["run"]> }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const before = commands.length;
    const abort = new AbortController();
    signal?.addEventListener("abort", () => abort.abort(), { once: true });
    const pending = host.run({ code, cwd, timeoutMs: 60_000, session: "d" }, { signal: abort.signal });
    if (commands.slice(before).some((c) => c.to === "session:d")) return { result: pending };
    abort.abort();
    await pending;
  }
  throw new Error("no run went straight to its session in 50 attempts");
}

test("a warm run goes straight to its idle session; a first run and a reset go through the root", async () => {
  const first = await run("x = 1");
  assert.equal(first.outcome.status, "success");
  assert.equal(toOf(first.outcome.runId), undefined, "a session's first run starts it: the supervisor's");
  const warm = await (await directRun("x += 1\nx")).result;
  assert.equal(warm.outcome.status, "success");
  assert.match(warm.stdout, /^\d+\n$/);
  assert.equal(warm.outcome.session?.incarnation, 1);
  const reset = await run("y = 1", "d", { reset: true });
  assert.equal(reset.outcome.status, "success");
  assert.equal(toOf(reset.outcome.runId), undefined, "a reset is the supervisor's");
  assert.equal(reset.outcome.session?.incarnation, 2);
});

test("a direct run's session shows busy (sessions(), listeners told), and the supervisor refuses to reset it", async () => {
  await run("import time");
  let told = 0;
  const off = host.onSessionsChange(() => told++);
  const slow = (await directRun("time.sleep(1)")).result;
  assert.ok(told >= 1, "the listeners heard the session become busy");
  assert.ok(host.sessions().find((s) => s.name === "d")?.busyRunId);
  assert.equal(host.stats().activeRuns, 1);
  const refused = await run("z = 1", "d", { reset: true });
  assert.equal(refused.outcome.status, "setup_error");
  assert.equal(refused.outcome.message, 'Session "d" is busy with another run; wait for it to finish.');
  const done = await slow;
  assert.equal(done.outcome.status, "success");
  assert.equal(host.sessions().find((s) => s.name === "d")?.busyRunId, undefined);
  assert.equal(host.stats().activeRuns, 0);
  const heard = told;
  assert.ok(heard >= 2, "and idle again");
  off();
  await run("pass");
  assert.equal(told, heard, "an unsubscribed listener hears nothing more");
});

test("a session run through the supervisor tells the listeners busy, then idle; a fresh run tells them nothing", async () => {
  // Fixed: once the supervisor kept no copy of a session's busy run, a run it started on a live session changed no
  // session entry, and the footer stayed "busy" after the run (the listeners heard only the session table).
  await run("import time");
  const seen: (string | undefined)[] = [];
  const off = host.onSessionsChange(() => seen.push(host.sessions().find((s) => s.name === "d")?.busyRunId));
  const previous = process.env.PI_CODE_EXECUTION_DIRECT;
  process.env.PI_CODE_EXECUTION_DIRECT = "off"; // every run through the supervisor, read at each run
  try {
    const r = await run("time.sleep(0.2)");
    assert.equal(r.outcome.status, "success");
    assert.equal(toOf(r.outcome.runId), undefined, "through the supervisor");
    assert.deepEqual(seen, [r.outcome.runId, undefined], "busy with that run, then idle");
    const fresh = await host.run({ code: "pass", cwd, timeoutMs: 20_000 });
    assert.equal(fresh.outcome.status, "success");
    assert.deepEqual(seen, [r.outcome.runId, undefined], "a fresh run changes no session");
  } finally {
    if (previous === undefined) delete process.env.PI_CODE_EXECUTION_DIRECT;
    else process.env.PI_CODE_EXECUTION_DIRECT = previous;
    off();
  }
});

test("a direct run is cancelled by the caller's abort like any other; the session keeps its state", async () => {
  await run("import time\nkept = 7");
  const controller = new AbortController();
  const pending = (await directRun("time.sleep(30)", controller.signal)).result;
  controller.abort();
  const r = await pending;
  assert.equal(r.outcome.status, "cancelled");
  assert.equal(r.outcome.session?.isLost, false, "an interruptible sleep ends at the interrupt; the session lives");
  assert.equal((await run("kept")).stdout, "7\n");
});

test("shell-session commands: exec.open goes to the root, the rest straight to the pool (recorded with it)", async () => {
  const before = commands.length;
  const r = await host.exec.start(startRequest("echo hi", { cwd, yieldMs: 5000, callId: "direct-exec" }));
  assert.ok(r.ok, r.ok ? "" : r.error);
  // The tap types its events as run commands; the exec ones pass through it too.
  const mine = commands
    .slice(before)
    .map((c) => ({ type: String(c.event.type), to: c.to }))
    .filter((c) => c.type.startsWith("exec."));
  const open = mine.find((c) => c.type === "exec.open");
  assert.ok(open, "the pool was opened");
  assert.equal(open.to, undefined, "exec.open is the root's: it creates the pool");
  const rest = mine.filter((c) => c.type !== "exec.open");
  assert.ok(
    rest.some((c) => c.type === "exec.start"),
    JSON.stringify(mine),
  );
  assert.deepEqual([...new Set(rest.map((c) => c.to))], ["exec:pool"]);
});
