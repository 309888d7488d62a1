// How a notebook cell's run is read (extension/shared/notebook/python-cells.ts, extension/eval/js-backend.ts), on
// every shape of outcome the supervisor gives: whether the cell completed, what text the model is told, which grace
// applies, and the request each cell becomes. The through-Pi files (cell-endings, notebook-*, eval-*) show these
// outcomes happen; this one pins each word and each field for all of them, in milliseconds.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { RunCallbacks, RunRequestInput, RunResult, SupervisorHost } from "../../../host/index.ts";
import type { RunOutcome } from "../../../machines/events.ts";
import { loadSettings } from "../../../store/settings.ts";
import {
  batchEnd,
  cellEnding,
  EVAL_GRACE_MS,
  graceFor,
  lastCellPart,
  PYTHON_GRACE_MS,
  runPyCell,
  verdictOf,
  type PyCellContext,
} from "../../../extension/shared/notebook/python-cells.ts";
import { JS_SESSION, jsBackend, outcomeOf } from "../../../extension/eval/js-backend.ts";
import { pythonBackend } from "../../../extension/eval/python-backend.ts";
import { RunOutput } from "../../../lib/run-output.ts";
import type { EvalCallContext } from "../../../extension/eval/backend.ts";
import type { CodeEnvironment } from "../../../extension/environment.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

function result(outcome: Partial<RunOutcome> = {}, extra: Partial<RunResult> = {}): RunResult {
  return {
    stdout: "",
    stderr: "",
    stdoutBytes: 0,
    stderrBytes: 0,
    stdoutTruncated: false,
    stderrTruncated: false,
    capture: {} as RunResult["capture"],
    outcome: {
      runId: "run-1",
      status: "success",
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 40,
      durationMs: 40,
      killed: false,
      ...outcome,
    },
    ...extra,
  };
}

const session = (isLost: boolean) => ({ name: "notebook", ordinal: 2, incarnation: 1, started: false, isLost });

describe("cellEnding", () => {
  const ending = (o: Partial<RunOutcome>) => cellEnding(result(o).outcome);

  test("a run that succeeded completed; nothing else is said of it", () => {
    assert.deepEqual(ending({}), { ok: true, lost: false, timedOut: false, cancelled: false });
    assert.deepEqual(ending({ session: session(false) }), { ok: true, lost: false, timedOut: false, cancelled: false });
  });

  test("a cell that caught the timeout's or the cancel's interrupt and ended by itself (exit 0) completed", () => {
    const caught = { status: "timeout" as const, stopReason: "timeout" as const, exitCode: 0 };
    assert.deepEqual(ending(caught), { ok: true, lost: false, timedOut: true, cancelled: false });
    const cancel = { status: "cancelled" as const, stopReason: "cancelled" as const, exitCode: 0 };
    assert.deepEqual(ending(cancel), { ok: true, lost: false, timedOut: false, cancelled: true });
    assert.deepEqual(ending({ ...caught, session: session(false) }).ok, true);
  });

  test("not completed: killed, its session lost, an exit code other than 0 or none, or no stop at all", () => {
    const stopped = { status: "timeout" as const, stopReason: "timeout" as const };
    assert.equal(ending({ ...stopped, exitCode: 0, killed: true }).ok, false);
    assert.deepEqual(ending({ ...stopped, exitCode: 0, session: session(true) }), {
      ok: false,
      lost: true,
      timedOut: true,
      cancelled: false,
    });
    assert.equal(ending({ ...stopped, exitCode: 1 }).ok, false);
    assert.equal(ending(stopped).ok, false);
    assert.equal(ending({ status: "cancelled", stopReason: "cancelled", exitCode: 2 }).ok, false);
    // An exit code of 0 is not a caught interrupt when nothing interrupted the cell.
    assert.deepEqual(ending({ status: "runtime_error", exitCode: 0 }), {
      ok: false,
      lost: false,
      timedOut: false,
      cancelled: false,
    });
    assert.deepEqual(ending({ status: "runtime_error", session: session(true) }).lost, true);
  });
});

describe("verdictOf (python and eval's Python cells)", () => {
  const verdict = (o: Partial<RunOutcome>, extra: Partial<RunResult> = {}) => verdictOf(result(o, extra));

  test("a completed cell has no error field at all", () => {
    assert.deepEqual(verdict({}), { ok: true, cancelled: false, timedOut: false, killed: false });
    const caught = verdict({ status: "timeout", stopReason: "timeout", exitCode: 0 });
    assert.deepEqual(caught, { ok: true, cancelled: false, timedOut: true, killed: false });
    assert.equal("error" in caught, false);
  });

  test("the traceback is the error when there is one, whatever else happened", () => {
    const tb = "Traceback (most recent call last):\nValueError: no\n";
    assert.deepEqual(verdict({ status: "runtime_error", exitCode: 1 }, { exception: tb }), {
      ok: false,
      cancelled: false,
      timedOut: false,
      killed: false,
      error: tb,
    });
    assert.equal(verdict({ status: "setup_error", message: "no interpreter" }, { exception: tb }).error, tb);
    const lost = verdict({ status: "runtime_error", session: session(true), signal: "SIGKILL" }, { exception: tb });
    assert.deepEqual([lost.error, lost.killed], [tb, true]);
  });

  test("a cell that never ran says why, or that it could not be run", () => {
    assert.equal(verdict({ status: "setup_error", message: "uv failed: no network" }).error, "uv failed: no network");
    assert.equal(verdict({ status: "setup_error" }).error, "the cell could not be run");
  });

  test("a lost kernel: killed after the interrupts, or died by a signal, an exit code, a failure, or unknown", () => {
    const lost = { status: "timeout" as const, stopReason: "timeout" as const, session: session(true) };
    assert.deepEqual(verdict({ ...lost, killed: true, signal: "SIGKILL" }), {
      ok: false,
      cancelled: false,
      timedOut: true,
      killed: true,
      error: "the kernel did not stop after the interrupts and was killed; its namespace is gone",
    });
    const died = { status: "runtime_error" as const, session: session(true) };
    const said = (o: Partial<RunOutcome>) => verdict({ ...died, ...o }).error;
    assert.equal(said({ signal: "SIGSEGV", exitCode: 139 }), "the kernel died (SIGSEGV); its namespace is gone");
    assert.equal(said({ exitCode: 3 }), "the kernel died (exit code 3); its namespace is gone");
    assert.equal(said({ exitCode: 0 }), "the kernel died (exit code 0); its namespace is gone");
    assert.equal(said({ message: "pipe closed" }), "the kernel died (pipe closed); its namespace is gone");
    assert.equal(said({}), "the kernel died (unknown cause); its namespace is gone");
    assert.equal(verdict({ ...died, message: "pipe closed" }).killed, true);
  });

  test("a blocked nested call: said alone, or after the traceback the cell raised", () => {
    assert.equal(verdict({ status: "policy_error" }).error, "a nested tool call was blocked by a policy");
    assert.equal(
      verdict({ status: "policy_error" }, { exception: "Traceback ...\nPermissionError: blocked\n\n" }).error,
      "Traceback ...\nPermissionError: blocked\n[a nested tool call was blocked by a policy]",
    );
    // The cell caught the refusal and completed: the call is still an error, said once.
    assert.equal(verdict({ status: "policy_error", exitCode: 0 }).ok, false);
  });

  test("any other end says the supervisor's message, or nothing it does not know", () => {
    const timedOut = verdict({ status: "timeout", stopReason: "timeout", message: "the deadline passed" });
    assert.deepEqual(timedOut, {
      ok: false,
      cancelled: false,
      timedOut: true,
      killed: false,
      error: "the deadline passed",
    });
    const cancelled = verdict({ status: "cancelled", stopReason: "cancelled" });
    assert.deepEqual(cancelled, { ok: false, cancelled: true, timedOut: false, killed: false });
  });
});

describe("lastCellPart", () => {
  test("a batch: the last cell it ran, as the run reported it", () => {
    const cells = [
      { stdout: "1", stderr: "", error: null, exitCode: 0, durationMs: 3 },
      { stdout: "2", stderr: "w", value: "42", error: "boom", exitCode: 1, durationMs: 5 },
    ];
    assert.equal(lastCellPart(result({}, { stdout: "12", cells })), cells[1]);
  });

  test("one cell: the run's own output, duration and value (no value field when it returned none)", () => {
    const r = result({ durationMs: 17 }, { stdout: "out", stderr: "err", value: "'v'" });
    assert.deepEqual(lastCellPart(r), { stdout: "out", stderr: "err", durationMs: 17, value: "'v'" });
    const none = lastCellPart(result({ durationMs: 2 }, { stdout: "o" }));
    assert.deepEqual(none, { stdout: "o", stderr: "", durationMs: 2 });
    assert.equal("value" in none, false);
  });
});

describe("batchEnd", () => {
  const cells = (...codes: string[]) => codes.map((code) => ({ code }));
  const pep723 = "# /// script\n# dependencies = []\n# ///\nprint(1)";

  test("every following cell joins by default, to the last", () => {
    assert.equal(batchEnd(cells("a", "b", "c"), 0), 2);
    assert.equal(batchEnd(cells("a", "b", "c"), 1), 2);
    assert.equal(batchEnd(cells("a", "b", "c"), 2), 2, "the last cell is a batch of one");
    assert.equal(batchEnd(cells("a"), 0), 0);
  });

  test("a cell with a PEP 723 block starts a run of its own, even first in line", () => {
    assert.equal(batchEnd(cells("a", "b", pep723, "d"), 0), 1);
    assert.equal(batchEnd(cells("a", pep723, "c"), 0), 0);
    assert.equal(batchEnd(cells(pep723, "b", "c"), 0), 2, "its own block is read as the run's first code");
  });

  test("a cell `joins` refuses ends the batch before it", () => {
    const py = [
      { code: "a", lang: "py" },
      { code: "b", lang: "py" },
      { code: "c", lang: "js" },
      { code: "d", lang: "py" },
    ];
    assert.equal(
      batchEnd(py, 0, (c) => c.lang === "py"),
      1,
    );
    assert.equal(
      batchEnd(py, 3, (c) => c.lang === "py"),
      3,
    );
  });
});

describe("graceFor", () => {
  const settings = freshSettings;

  test("nobody set interruptGraceMs: the surface's own default (pi-python's 30 s, oh-my-pi's 5 s)", () => {
    assert.equal(graceFor(settings(), PYTHON_GRACE_MS), 30_000);
    assert.equal(graceFor(settings(), EVAL_GRACE_MS), 5_000);
  });

  test("set anywhere (here, the environment): that value, for every surface", () => {
    const s = settings({ PI_CODE_EXECUTION_INTERRUPT_GRACE_MS: "750" });
    assert.notEqual(s.sources.interruptGraceMs?.source, "default");
    assert.equal(graceFor(s, PYTHON_GRACE_MS), 750);
    assert.equal(graceFor(s, EVAL_GRACE_MS), 750);
  });
});

/** Settings as loaded with no settings file (a fresh agent directory) and `env`. */
function freshSettings(env: NodeJS.ProcessEnv = {}) {
  const agent = join(tempDir("pcs-cell-verdicts-"), "agent");
  process.env.PI_CODING_AGENT_DIR = agent;
  return loadSettings(undefined, { PI_CODING_AGENT_DIR: agent, ...env });
}

/** The extension's environment with `env`'s settings, and an interpreter lookup that answers `resolve` (counted). */
function environmentWith(env: NodeJS.ProcessEnv = {}, resolve: () => unknown = () => ({ ok: true })) {
  const settings = freshSettings(env);
  let resolved = 0;
  const environment = {
    settings: () => settings,
    interpreter: {
      resolve: async () => {
        resolved += 1;
        return resolve();
      },
    },
  } as unknown as CodeEnvironment;
  return { environment, resolved: () => resolved };
}

/** What an eval call gives its backends, in Pi's working directory `/pi/cwd`. */
const evalCallContext = (over: Partial<EvalCallContext> = {}) =>
  ({ ctx: { cwd: "/pi/cwd" }, toolCallId: "t1", display: {}, ...over }) as unknown as EvalCallContext;

/** A host that records the request and callbacks each cell became, and answers with `answer`. */
function recordingHost(answer: RunResult) {
  const seen: { req: RunRequestInput; callbacks: RunCallbacks }[] = [];
  const host = {
    run: async (req: RunRequestInput, callbacks: RunCallbacks = {}) => {
      seen.push({ req, callbacks });
      return answer;
    },
  } as unknown as SupervisorHost;
  return { host, seen };
}

describe("runPyCell: the run each Python cell becomes", () => {
  const base = (host: SupervisorHost): PyCellContext => ({
    host,
    session: "notebook",
    cwd: "/pi/cwd",
    chdir: "/call/cwd",
    surface: "python",
    graceMs: 30_000,
    secondInterrupt: true,
    budget: "wall",
  });
  const cell = { index: 1, count: 1 };

  test("one cell: its code, places, session, surface, budget and escalation; timeouts rounded to whole ms (at least 1)", async () => {
    const { host, seen } = recordingHost(result());
    const answer = await runPyCell({ code: "x = 1", cell, timeoutMs: 2500.6, reset: true }, base(host));
    assert.equal(answer.outcome.runId, "run-1");
    assert.deepEqual(seen[0]!.req, {
      code: "x = 1",
      cwd: "/pi/cwd",
      timeoutMs: 2501,
      session: "notebook",
      reset: true,
      surface: "python",
      cell,
      chdir: "/call/cwd",
      result: "value",
      budget: "wall",
      escalation: { graceMs: 30_000, secondInterrupt: true },
    });
    assert.deepEqual(seen[0]!.callbacks, {});
    await runPyCell({ code: "y", cell, timeoutMs: 0.2, reset: false }, base(host));
    assert.equal(seen[1]!.req.timeoutMs, 1);
    assert.equal(seen[1]!.req.reset, false);
  });

  test("a batch carries its further cells and their own timeouts (rounded, at least 1); an empty batch is none", async () => {
    const { host, seen } = recordingHost(result());
    const req = { code: "a", cell, timeoutMs: 1000, reset: false };
    await runPyCell({ ...req, batch: ["b", "c"], cellTimeoutsMs: [0.3, 1999.5] }, base(host));
    assert.deepEqual(seen[0]!.req.batch, ["b", "c"]);
    assert.deepEqual(seen[0]!.req.cellTimeoutsMs, [1, 2000]);
    await runPyCell({ ...req, batch: ["b"] }, base(host));
    assert.deepEqual(seen[1]!.req.batch, ["b"]);
    assert.equal("cellTimeoutsMs" in seen[1]!.req, false);
    await runPyCell({ ...req, batch: [], cellTimeoutsMs: [5] }, base(host));
    assert.equal("batch" in seen[2]!.req, false);
    assert.equal("cellTimeoutsMs" in seen[2]!.req, false);
  });

  test("no kill (pi-python's interruptGraceMs 0) and the call's tools, signal and listeners go through as given", async () => {
    const { host, seen } = recordingHost(result());
    const signal = new AbortController().signal;
    const onOutput = () => {};
    const onDisplay = () => undefined;
    const onCell = () => {};
    const tools = {} as PyCellContext["tools"];
    const ctx = { ...base(host), noKill: true, secondInterrupt: false, tools, signal, onOutput, onDisplay, onCell };
    await runPyCell({ code: "a", cell, timeoutMs: 10, reset: false }, { ...ctx, budget: "work", surface: "eval" });
    const { req, callbacks } = seen[0]!;
    assert.deepEqual(req.escalation, { graceMs: 30_000, secondInterrupt: false, noKill: true });
    assert.deepEqual([req.budget, req.surface], ["work", "eval"]);
    assert.deepEqual(callbacks, { tools, signal, onOutput, onDisplay, onCell });
    await runPyCell({ code: "a", cell, timeoutMs: 10, reset: false }, { ...base(host), noKill: false });
    assert.deepEqual(seen[1]!.req.escalation, { graceMs: 30_000, secondInterrupt: true });
  });
});

describe("the JavaScript backend", () => {
  const environment = (env: NodeJS.ProcessEnv = {}) => environmentWith(env).environment;
  const call = evalCallContext;
  const jsCell = { index: 2, count: 4, code: "1 + 1", title: "sum", timeoutMs: 1500.4, reset: true };

  test("one cell a run, in the `js` session: its code, the work budget, eval's 5 s grace unless one is set", async () => {
    const { host, seen } = recordingHost(result({}, { value: "2" }));
    const backend = jsBackend({ getHost: () => host, environment: environment() });
    assert.equal(backend.batches, false);
    const out = await backend.runCells([jsCell], call(), () => assert.fail("one cell: nothing ends before it"));
    assert.deepEqual(seen[0]!.req, {
      code: "1 + 1",
      cwd: "/pi/cwd",
      timeoutMs: 1500,
      session: JS_SESSION,
      language: "js",
      reset: true,
      surface: "eval",
      cell: { index: 3, count: 4, language: "js", title: "sum" },
      chdir: "/pi/cwd",
      result: "value",
      budget: "work",
      escalation: { graceMs: EVAL_GRACE_MS },
    });
    assert.equal(JS_SESSION, "js");
    assert.deepEqual([out.index, out.status, out.output, out.exitCode], [2, "complete", "2", 0]);
    const tiny = jsBackend({
      getHost: () => host,
      environment: environment({ PI_CODE_EXECUTION_INTERRUPT_GRACE_MS: "40" }),
    });
    await tiny.runCells([{ ...jsCell, timeoutMs: 0.1 }], call(), () => {});
    assert.deepEqual([seen[1]!.req.timeoutMs, seen[1]!.req.escalation], [1, { graceMs: 40 }]);
  });

  test("enabled by default; PI_JS turns it off, or is refused when it is not a boolean", async () => {
    const backend = jsBackend({ getHost: () => recordingHost(result()).host, environment: environment() });
    const saved = process.env.PI_JS;
    try {
      delete process.env.PI_JS;
      assert.equal(await backend.unavailable("/pi/cwd"), undefined);
      process.env.PI_JS = "0";
      assert.match((await backend.unavailable("/pi/cwd")) ?? "", /disabled \(PI_JS=0\)/);
      process.env.PI_JS = "maybe";
      assert.match((await backend.unavailable("/pi/cwd")) ?? "", /PI_JS="maybe" is not a boolean/);
    } finally {
      if (saved === undefined) delete process.env.PI_JS;
      else process.env.PI_JS = saved;
    }
  });
});

describe("outcomeOf (eval's JavaScript cells)", () => {
  const fresh = "the JavaScript state is gone and the next js cell starts a fresh runtime";
  const of = (o: Partial<RunOutcome>, extra: Partial<RunResult> = {}, timeoutMs = 2000) =>
    outcomeOf(result(o, extra), 5, timeoutMs);

  test("a completed cell: its output (stdout, then stderr on its own line, one trailing newline dropped) and value", () => {
    const r = result({ durationMs: 12 }, { stdout: "a\nb", stderr: "warn\n", value: "42" });
    const out = outcomeOf(r, 5, 2000);
    assert.deepEqual(out, {
      index: 5,
      status: "complete",
      output: "a\nb\nwarn\n42",
      exitCode: 0,
      durationMs: 12,
      cancelled: false,
      timedOut: false,
      lost: false,
      runs: [r],
    });
    assert.equal(of({}, { stdout: "\n\n  x  \n" }).output, "x", "blank edges are trimmed");
    assert.equal(of({}).output, "", "no output, no value: nothing, not a blank line");
  });

  test("an error: the exception trimmed after the output; the exit code the run had, else 1", () => {
    const thrown = of(
      { status: "runtime_error", exitCode: 3 },
      { stdout: "before\n", exception: "Error: x\n  at y\n\n" },
    );
    assert.deepEqual([thrown.status, thrown.output, thrown.exitCode], ["error", "before\nError: x\n  at y", 3]);
    assert.equal(of({ status: "runtime_error" }).exitCode, 1);
    assert.equal(of({ status: "runtime_error", exitCode: 0 }).exitCode, 1, "an error never reports exit code 0");
  });

  test("a cell that could not be run says why, or that it could not", () => {
    assert.equal(of({ status: "setup_error", message: "node not found" }).output, "node not found");
    assert.equal(of({ status: "setup_error" }).output, "the JavaScript cell could not be run");
  });

  test("a blocked tool call makes the call an error even though the cell went on", () => {
    const out = of({ status: "policy_error", exitCode: 0 }, { stdout: "went on\n" });
    assert.equal(out.status, "error");
    assert.equal(
      out.output,
      "went on\n[a tool call of this cell was blocked by a policy: the eval call is an error even though the cell went on]",
    );
  });

  test("timed out: its awaits rejected and the state kept, or the runtime killed (in seconds of work)", () => {
    const kept = of({ status: "timeout", stopReason: "timeout", exitCode: 1 }, {}, 1500);
    assert.equal(
      kept.output,
      "[timed out after 1.5 s of work (time spent awaiting tools and completion() not counted); its pending awaits were rejected with an AbortError; the JavaScript state is kept]",
    );
    assert.deepEqual([kept.timedOut, kept.lost, kept.cancelled, kept.status], [true, false, false, "error"]);
    const thrown = of(
      { status: "timeout", stopReason: "timeout", exitCode: 1 },
      { exception: "  AbortError: late\n" },
      1000,
    );
    assert.match(
      thrown.output,
      /^AbortError: late\n\[timed out after 1 s of work \(/,
      "the error's end trimmed, not its start",
    );
    const killed = of({ status: "timeout", stopReason: "timeout", killed: true, session: session(true) }, {}, 250);
    assert.equal(
      killed.output,
      `[timed out after 0.25 s of work; the cell did not end after its pending awaits were rejected, so the JavaScript runtime was killed: ${fresh}]`,
    );
    assert.deepEqual([killed.timedOut, killed.lost], [true, true]);
    // It caught the AbortError and ended by itself: it completed, and is still said to have timed out.
    const caught = of({ status: "timeout", stopReason: "timeout", exitCode: 0 }, { value: "'late'" });
    assert.equal(caught.status, "complete");
    assert.match(caught.output, /^'late'\n\[timed out after 2 s of work/);
  });

  test("cancelled: killed when the cell did not end; a cancel it answered says nothing more", () => {
    const killed = of({ status: "cancelled", stopReason: "cancelled", killed: true, session: session(true) });
    assert.equal(killed.output, `[cancelled; the cell did not end, so the JavaScript runtime was killed: ${fresh}]`);
    assert.deepEqual([killed.cancelled, killed.lost, killed.timedOut], [true, true, false]);
    const answered = of({ status: "cancelled", stopReason: "cancelled", exitCode: 1 }, { exception: "AbortError" });
    assert.deepEqual([answered.output, answered.lost, answered.status], ["AbortError", false, "error"]);
  });

  test("the runtime ended by itself: killed by a signal, an exit code, a failure, or an unknown cause", () => {
    const lost = { status: "runtime_error" as const, session: session(true) };
    const said = (o: Partial<RunOutcome>) => of({ ...lost, ...o }).output;
    assert.equal(
      said({ signal: "SIGKILL", exitCode: 137 }),
      `[the JavaScript runtime was killed by SIGKILL during this cell: ${fresh}]`,
    );
    assert.equal(said({ exitCode: 7 }), `[the JavaScript runtime exited with code 7 during this cell: ${fresh}]`);
    assert.equal(said({ exitCode: 0 }), `[the JavaScript runtime exited with code 0 during this cell: ${fresh}]`);
    assert.equal(said({ message: "EPIPE" }), `[the JavaScript runtime failed (EPIPE) during this cell: ${fresh}]`);
    assert.equal(said({}), `[the JavaScript runtime failed (unknown cause) during this cell: ${fresh}]`);
    assert.equal(of({ ...lost, exitCode: 7 }).exitCode, 7);
  });
});

describe("eval's Python backend", () => {
  const environment = environmentWith;
  const cells = (...codes: string[]) =>
    codes.map((code, i) => ({
      index: i + 1,
      count: codes.length + 1,
      code,
      timeoutMs: 1000 * (i + 1),
      reset: i === 0,
    }));
  const call = evalCallContext;
  const part = (stdout: string, value?: string) => ({
    stdout,
    stderr: "",
    error: null,
    exitCode: 0,
    durationMs: 4,
    ...(value !== undefined ? { value } : {}),
  });

  // A Python cell's parts keep the newline they end with and are joined by one more: printed output and the value or
  // error after it are a blank line apart (what eval-batch.test.ts and cell-endings.test.ts read through Pi).
  test("one cell: the notebook session, eval's surface, the work budget, one interrupt then the kill after 5 s", async () => {
    const answer = result({ durationMs: 9 }, { stdout: "hi\n", value: "3" });
    const { host, seen } = recordingHost(answer);
    const { environment: env } = environment();
    const backend = pythonBackend({ getHost: () => host, environment: env });
    assert.equal(backend.batches, true);
    const out = await backend.runCells(cells("1 + 2"), call(), () => assert.fail("nothing ends before the last cell"));
    assert.deepEqual(seen[0]!.req, {
      code: "1 + 2",
      cwd: "/pi/cwd",
      timeoutMs: 1000,
      session: "notebook",
      reset: true,
      surface: "eval",
      cell: { index: 2, count: 2, language: "py" },
      chdir: "/pi/cwd",
      result: "value",
      budget: "work",
      escalation: { graceMs: EVAL_GRACE_MS, secondInterrupt: false },
    });
    assert.deepEqual(out, {
      index: 1,
      status: "complete",
      output: "hi\n\n3",
      exitCode: 0,
      durationMs: 9,
      cancelled: false,
      timedOut: false,
      lost: false,
      runs: [answer],
    });
    const none = pythonBackend({
      getHost: () => recordingHost(result({}, { stdout: "x", value: "None" })).host,
      environment: env,
    });
    assert.equal((await none.runCells(cells("f()"), call(), () => {})).output, "x", "a None value is not shown");
  });

  test("a batch: one run; each cell ended as the next starts, live output for the cell running from its own start", async () => {
    const three = cells("a", "b", "c");
    const out = new RunOutput();
    const live: [number, string][] = [];
    const ended: unknown[] = [];
    const last = result({ status: "runtime_error", exitCode: 1 }, { exception: "NameError: c\n" });
    const host = {
      run: async (req: RunRequestInput, cb: RunCallbacks) => {
        assert.deepEqual([req.code, req.batch, req.cellTimeoutsMs], ["a", ["b", "c"], [2000, 3000]]);
        out.write("stdout", Buffer.from("from a\n"));
        cb.onOutput!(out);
        cb.onCell!(0, part("from a\n", "'A'"), out.mark());
        out.write("stdout", Buffer.from("from b\n"));
        cb.onOutput!(out);
        cb.onCell!(1, part("from b\n"), out.mark());
        cb.onOutput!(out);
        return { ...last, cells: [part("from a\n", "'A'"), part("from b\n"), part("")] };
      },
    } as unknown as SupervisorHost;
    const backend = pythonBackend({ getHost: () => host, environment: environment().environment });
    const outcome = await backend.runCells(three, call({ onOutput: (i, text) => live.push([i, text]) }), (o) =>
      ended.push([o.index, o.status, o.output, o.runs.length]),
    );
    assert.deepEqual(live, [
      [1, "from a\n"],
      [2, "from b\n"],
      [3, ""],
    ]);
    assert.deepEqual(ended, [
      [1, "complete", "from a\n\n'A'", 0],
      [2, "complete", "from b", 0],
    ]);
    assert.deepEqual(
      [outcome.index, outcome.status, outcome.output, outcome.exitCode],
      [3, "error", "NameError: c", 1],
    );
  });

  test("a timed-out cell: KeyboardInterrupt with the state kept, or the kernel killed; a dead kernel says so", async () => {
    const run = async (r: RunResult, timeoutMs = 2500) => {
      const backend = pythonBackend({ getHost: () => recordingHost(r).host, environment: environment().environment });
      return backend.runCells([{ ...cells("x")[0]!, timeoutMs }], call(), () => {});
    };
    const kept = await run(
      result({ status: "timeout", stopReason: "timeout", exitCode: 1 }, { exception: "KeyboardInterrupt\n" }),
    );
    assert.equal(
      kept.output,
      "KeyboardInterrupt\n\n[timed out after 2.5 s of work (time spent awaiting tools and completion() not counted); KeyboardInterrupt was raised, the Python state is kept]",
    );
    assert.deepEqual([kept.status, kept.timedOut, kept.lost, kept.exitCode], ["error", true, false, 1]);
    const killed = await run(
      result({ status: "timeout", stopReason: "timeout", killed: true, signal: "SIGKILL", session: session(true) }),
      500,
    );
    assert.equal(
      killed.output,
      "the kernel did not stop after the interrupts and was killed; its namespace is gone\n[timed out after 0.5 s of work; the cell did not stop, so the Python kernel was killed and its state is gone]",
    );
    assert.deepEqual([killed.lost, killed.exitCode], [true, 1]);
    const died = await run(
      result({ status: "runtime_error", signal: "SIGSEGV", session: session(true) }, { stdout: "last words\n" }),
    );
    assert.equal(
      died.output,
      "last words\n\nthe kernel died (SIGSEGV); its namespace is gone\n[the Python kernel died; its state is gone and the next cell starts empty]",
    );
    const caught = await run(result({ status: "timeout", stopReason: "timeout", exitCode: 0 }, { value: "'done'" }));
    assert.deepEqual([caught.status, caught.exitCode, caught.timedOut], ["complete", 0, true]);
    assert.match(caught.output, /^'done'\n\[timed out after 2\.5 s of work/);
    const exit3 = await run(result({ status: "runtime_error", exitCode: 3 }, { exception: "SystemExit: 3" }));
    assert.deepEqual([exit3.exitCode, exit3.output], [3, "SystemExit: 3"]);
    const exit0 = await run(result({ status: "policy_error", exitCode: 0 }));
    assert.deepEqual([exit0.exitCode, exit0.output], [1, "a nested tool call was blocked by a policy"]);
  });

  test("available unless turned off; a live notebook session needs no interpreter lookup; else one must be found", async () => {
    const alive = recordingHost(result()).host;
    (alive as unknown as { sessionTable: () => unknown }).sessionTable = () => ({ notebook: { status: "alive" } });
    const idle = recordingHost(result()).host;
    (idle as unknown as { sessionTable: () => unknown }).sessionTable = () => ({ notebook: { status: "closed" } });
    const saved = process.env.PI_PY;
    try {
      delete process.env.PI_PY;
      const found = environment();
      assert.equal(
        await pythonBackend({ getHost: () => alive, environment: found.environment }).unavailable("/c"),
        undefined,
      );
      assert.equal(found.resolved(), 0, "the live kernel's interpreter is used");
      assert.equal(
        await pythonBackend({ getHost: () => idle, environment: found.environment }).unavailable("/c"),
        undefined,
      );
      assert.equal(found.resolved(), 1);
      const missing = environment({}, () => ({ ok: false, error: "python3.12 was not found on PATH." }));
      assert.equal(
        await pythonBackend({ getHost: () => idle, environment: missing.environment }).unavailable("/c"),
        "no Python interpreter: python3.12 was not found on PATH",
      );
      const off = environment({ PI_CODE_EXECUTION_EVAL_PY: "0" });
      assert.match(
        (await pythonBackend({ getHost: () => alive, environment: off.environment }).unavailable("/c")) ?? "",
        /the Python backend is disabled \(setting eval\.py = false/,
      );
      process.env.PI_PY = "0";
      assert.match(
        (await pythonBackend({ getHost: () => alive, environment: found.environment }).unavailable("/c")) ?? "",
        /disabled \(PI_PY=0\)/,
      );
      assert.equal(found.resolved(), 1, "a disabled backend looks nothing up");
    } finally {
      if (saved === undefined) delete process.env.PI_PY;
      else process.env.PI_PY = saved;
    }
  });
});
