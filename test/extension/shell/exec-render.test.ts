// The five exec tools' renderers (extension/shell/render.ts) as Pi's terminal draws them: the call's banner, the
// output's five newest lines behind an expand hint, the live elapsed counter while attached, the footer built from
// the result's details, and inert text only. A plain theme shows the words; a tagging theme shows the colours.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Text } from "@earendil-works/pi-tui";
import { execRenderers, PREVIEW_LINES, remainingLabel } from "../../../extension/shell/render.ts";
import type { RenderContext } from "../../../extension/shared/render-kit.ts";

const theme = { fg: (_c: string, t: string) => t, bold: (t: string) => t } as never;
function ctx(over: Partial<RenderContext> = {}): RenderContext {
  return {
    state: {},
    executionStarted: true,
    invalidate: () => {},
    keyHint: (_k: never, d: string) => `ctrl+o ${d}`,
    ...over,
  };
}
const render = (c: { render(w: number): readonly string[] }) =>
  c
    .render(200)
    .map((l) => l.trimEnd())
    .join("\n");

/** Each colour as `<colour>text</>`, bold as `*text*`. */
const tagged = { fg: (c: string, t: string) => `<${c}>${t}</>`, bold: (t: string) => `*${t}*` } as never;
const done = { expanded: false, isPartial: false };
const expanded = { expanded: true, isPartial: false };
const partial = { expanded: false, isPartial: true };
const result = (details: unknown, content: { type: string; text?: string }[] = []) => ({ content, details });
const execResult = (details: unknown, opts = done, c = ctx(), th = theme) =>
  render(execRenderers.exec_command.renderResult(result(details), opts, th, c));
const stdinCall = (args: Record<string, unknown>, th = theme) =>
  render(execRenderers.write_stdin.renderCall(args, th, ctx()));

describe("renderers", () => {
  test("exec_command: banner, five-line tail with the expand hint, footer", () => {
    const call = execRenderers.exec_command.renderCall(
      { cmd: "npm test", yield_time_ms: 2500, on_exit: "wake" },
      theme,
      ctx(),
    );
    assert.equal(render(call), "$ npm test (yield 2.5s · [wake])");
    const output = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
    const details = { running: false, exit_code: 0, output, log_path: "/l/x.log", wall_time_seconds: 4.2 };
    const collapsed = execResult(details);
    const lines = collapsed.split("\n");
    assert.equal(lines[0], "… (7 earlier lines, ctrl+o to expand)");
    assert.deepEqual(lines.slice(1, 1 + PREVIEW_LINES), ["line 8", "line 9", "line 10", "line 11", "line 12"]);
    assert.match(lines.at(-1)!, /^ {2}took \d+\.\ds · exit_code=0 · log: \/l\/x\.log$/);
    assert.ok(execResult(details, expanded).startsWith("line 1\nline 2"));
  });

  test("while attached: live elapsed counter; yielded: session id and [wake]", () => {
    const c = ctx();
    c.state.startedAt = Date.now() - 1300;
    const live = execResult({ running: true, session_id: 2, output: "round 2\n" }, partial, c);
    assert.match(live, /round 2\n {2}elapsed 1\.\ds · session_id=2/);
    clearInterval(c.state.interval);
    const yielded = execResult({
      running: true,
      session_id: 2,
      completion_notification: "armed",
      output: "",
      wall_time_seconds: 2.5,
    });
    assert.match(yielded, /yielded .* · session_id=2 · \[wake\]/);
  });

  test("write_stdin banners: poll, input with control bytes, base64", () => {
    assert.equal(stdinCall({ session_id: 2, yield_time_ms: 5000 }), "⟳ poll → session_id=2 (yield 5.0s)");
    assert.equal(stdinCall({ session_id: 1, chars: "\\x03" }), "» ^C → session_id=1 (until it answers)");
    assert.equal(
      stdinCall({ session_id: 1, chars: "print(7*6)\\r", yield_time_ms: 1000 }),
      "» print(7*6)\\r → session_id=1 (yield 1.0s)",
    );
    assert.equal(
      stdinCall({ session_id: 1, chars_b64: "G3s6wgo=" }),
      "» (base64, 5 bytes) → session_id=1 (until it answers)",
    );
    assert.match(
      stdinCall({ session_id: 2, yield_until: new Date(Date.now() + 9_660_000).toISOString() }),
      /⟳ poll → session_id=2 \(2h4\dm later\)/,
    );
  });

  test("kill_session, list_sessions, set_on_exit", () => {
    assert.equal(
      render(execRenderers.kill_session.renderCall({ session_id: 2 }, theme, ctx())),
      "kill_session session_id=2 signal=SIGTERM",
    );
    const killed = render(
      execRenderers.kill_session.renderResult(
        result({
          found: true,
          killed: true,
          session_id: 2,
          signal: "SIGTERM",
          wall_time_seconds: 0.3,
          output: "bye\n",
          log_path: "/l",
        }),
        done,
        theme,
        ctx(),
      ),
    );
    assert.equal(killed, "bye\n  killed session_id=2 · took 0.3s · signal=SIGTERM · log: /l");
    const sessions = Array.from({ length: 7 }, (_, i) => ({
      session_id: i + 1,
      running: true,
      state: "running",
      wake_armed: i === 0,
      command: `job ${i + 1}`,
      elapsed_ms: 2000,
    }));
    const list = render(execRenderers.list_sessions.renderResult(result({ sessions }), done, theme, ctx()));
    assert.match(list, /^ {2}#1 running 2\.0s \[wake\] job 1/);
    assert.match(list, /… 2 more \(ctrl\+o to expand\)$/);
    assert.equal(
      render(execRenderers.set_on_exit.renderCall({ session_id: 2, on_exit: "none" }, theme, ctx())),
      "set_on_exit session_id=2 → none",
    );
    assert.equal(
      render(
        execRenderers.set_on_exit.renderResult(
          result({ found: true, status: "disarmed", wake_armed: false }),
          done,
          theme,
          ctx(),
        ),
      ),
      "  disarmed · wake not armed",
    );
  });

  test("terminal control sequences never reach the screen", () => {
    const r = render(
      execRenderers.exec_command.renderResult(
        { content: [{ type: "text", text: "\x1b]52;c;Zm9v\x07x\x1b[2J" }] },
        done,
        theme,
        ctx(),
      ),
    );
    assert.doesNotMatch(r, /\x1b/);
  });
});

describe("time labels", () => {
  // A list's age column, and the live counter, use them (a finished call's "took" is the result's own seconds).
  const age = (ms: number) =>
    render(
      execRenderers.list_sessions.renderResult(
        result({
          sessions: [
            { session_id: 1, running: true, state: "running", wake_armed: false, command: "c", elapsed_ms: ms },
          ],
        }),
        done,
        theme,
        ctx(),
      ),
    );
  const label = (seconds: number) => age(seconds * 1000).replace(/^  #1 running (.*) c$/, "$1");

  test("seconds with a tenth under a minute, then minutes and seconds, then hours and minutes", () => {
    assert.equal(label(0), "0.0s");
    assert.equal(label(59.94), "59.9s");
    assert.equal(label(60), "1m0s");
    assert.equal(label(61.7), "1m1s");
    assert.equal(label(3599), "59m59s");
    assert.equal(label(3600), "1h0m");
    assert.equal(label(9_660), "2h41m");
  });

  test("what is left of an absolute wait, or that its deadline passed", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    assert.equal(remainingLabel("2026-01-01T00:00:30Z", now), "30.0s later");
    assert.equal(remainingLabel("2026-01-01T02:41:00Z", now), "2h41m later");
    assert.equal(remainingLabel("2026-01-01T00:00:00Z", now), "deadline passed");
    assert.equal(remainingLabel("2025-12-31T23:59:59Z", now), "deadline passed");
  });
});

describe("exec_command", () => {
  test("the banner: the command on one line, then only the extras asked for; no command yet shows an ellipsis", () => {
    const call = (args: Record<string, unknown>) => render(execRenderers.exec_command.renderCall(args, theme, ctx()));
    assert.equal(call({ cmd: "ls -la" }), "$ ls -la");
    assert.equal(call({ cmd: "make\n  all", workdir: "/w/x", tty: true }), "$ make all (cwd: /w/x · tty)");
    assert.equal(call({ cmd: "x", tty: false, on_exit: "none", yield_time_ms: "5", workdir: 3 }), "$ x");
    assert.equal(call({}), "$ …");
    assert.equal(
      execRenderers.exec_command
        .renderCall({ cmd: "x".repeat(500) }, theme, ctx())
        .render(1000)[0]
        ?.trimEnd(),
      `$ ${"x".repeat(399)}…`,
    );
    assert.equal(
      render(execRenderers.exec_command.renderCall({ cmd: "ls", yield_time_ms: 250 }, tagged, ctx())),
      "<toolTitle>*$*</> <toolOutput>ls</><muted> (yield 0.3s)</>",
    );
    for (const draw of [
      (c: RenderContext) => execRenderers.exec_command.renderCall({ cmd: "ls" }, theme, c),
      (c: RenderContext) => execRenderers.write_stdin.renderCall({ session_id: 1 }, theme, c),
    ]) {
      const started = ctx();
      draw(started);
      assert.equal(typeof started.state.startedAt, "number", "the call starts the elapsed counter");
      assert.ok(started.state.interval, "which redraws every second until the result");
      assert.equal(started.state.endedAt, undefined);
      clearInterval(started.state.interval);
    }
  });

  test("output: none shows nothing above the footer; up to five lines whole; more behind a count, one or many", () => {
    const lines = (n: number) => Array.from({ length: n }, (_, i) => `l${i + 1}`).join("\n");
    assert.equal(execResult({ output: "", exit_code: 0 }), "  exit_code=0");
    assert.equal(execResult({ output: "\n\n", exit_code: 0 }), "  exit_code=0");
    assert.equal(execResult({ output: "\nafter a blank line\n", exit_code: 0 }), "\nafter a blank line\n  exit_code=0");
    assert.equal(execResult({ output: lines(5) + "\n\n", exit_code: 0 }), "l1\nl2\nl3\nl4\nl5\n  exit_code=0");
    assert.equal(
      execResult({ output: lines(6), exit_code: 0 }),
      "… (1 earlier line, ctrl+o to expand)\nl2\nl3\nl4\nl5\nl6\n  exit_code=0",
    );
    assert.equal(
      execResult({ output: lines(6) }, done, ctx(), tagged),
      [
        "<muted>… (1 earlier line, </>ctrl+o to expand<muted>)</>",
        ...["l2", "l3", "l4", "l5", "l6"].map((l) => `<toolOutput>${l}</>`),
        "<muted>  </>",
      ].join("\n"),
    );
    assert.equal(execResult({ output: lines(6) }, expanded).split("\n").length, 7);
  });

  test("without details.output the content's text is shown, made inert", () => {
    const r = render(
      execRenderers.exec_command.renderResult(
        result(undefined, [
          { type: "text", text: "a\x1b[31mred\x1b[0m\r\n" },
          { type: "text", text: "b" },
          { type: "image" },
        ]),
        done,
        theme,
        ctx(),
      ),
    );
    assert.equal(r, "ared\nb\n");
  });

  test("the footer: took, or exit code, signal, [wake], a consumed wake, the log and the backend, in that order", () => {
    assert.equal(
      execResult({
        running: false,
        exit_code: 1,
        signal: "SIGTERM",
        completion_notification: "armed",
        on_exit_wake: "consumed",
        log_path: "/logs/a\nb.log",
        backend: { kind: "ssh", label: "ssh dev@box" },
        wall_time_seconds: 1.25,
        session_id: 4,
      }),
      "  took 1.3s · exit_code=1 · signal=SIGTERM · [wake] · wake consumed · log: /logs/a b.log · runs on ssh dev@box",
    );
    assert.equal(execResult({ completion_notification: "sent", on_exit_wake: "armed" }), "");
    assert.equal(execResult(undefined), "");
  });

  test("a failure is said on its own line, in the error colour", () => {
    assert.equal(
      execResult({ running: false, failure_message: "spawn failed: ENOENT" }, done, ctx(), tagged),
      "<muted>  </>\n<error>  spawn failed: ENOENT</>",
    );
  });

  test("yielded (still running): its session id, no exit code; a cancelled wait says so", () => {
    assert.equal(
      execResult({ running: true, session_id: 3, exit_code: 0, wall_time_seconds: 10 }),
      "  yielded 10.0s · session_id=3",
    );
    assert.equal(
      execResult({ running: true, session_id: 3, wait_status: "cancelled", wall_time_seconds: 2 }),
      "  cancelled after 2.0s · session_id=3",
    );
    assert.equal(execResult({ running: true }), "");
    assert.equal(
      execResult({ running: false, session_id: 3, exit_code: 0 }),
      "  exit_code=0",
      "an exited session's id is not shown",
    );
  });

  test("while attached: the elapsed time since the call started (not the result's), and the time left to wait", () => {
    const c = ctx();
    c.state.startedAt = Date.now() - 2_500;
    const until = new Date(Date.now() + 65_000).toISOString();
    const live = execResult({ running: true, session_id: 1, wall_time_seconds: 99, yield_until: until }, partial, c);
    assert.match(live, /^ {2}elapsed 2\.\ds · 1m[45]s later · session_id=1$/);
    assert.ok(c.state.interval, "the counter redraws every second while partial");
    const final = execResult({ running: false, exit_code: 0, wall_time_seconds: 99 }, done, c);
    assert.equal(final, "  took 99.0s · exit_code=0", "once done the result's own time");
    assert.equal(c.state.interval, undefined, "and the counter stopped");
    assert.equal(
      execResult({ running: true }, partial, ctx({ executionStarted: false })),
      "",
      "no time known: none said",
    );
    const unstarted = ctx({ executionStarted: false });
    assert.equal(execResult({ running: true, wall_time_seconds: 1 }, partial, unstarted), "  elapsed 1.0s");
  });

  test("the component drawn last time is reused; anything else is replaced by a new text", () => {
    const last = new Text("old", 0, 0);
    const c = ctx({ lastComponent: last });
    assert.equal(execRenderers.exec_command.renderResult(result({ exit_code: 0 }), done, theme, c), last);
    assert.equal(render(last), "  exit_code=0");
    assert.equal(execRenderers.exec_command.renderCall({ cmd: "x" }, theme, ctx({ lastComponent: last })), last);
    const other = { render: () => ["x"], invalidate: () => {} };
    const fresh = execRenderers.exec_command.renderResult(result({}), done, theme, ctx({ lastComponent: other }));
    assert.ok(fresh instanceof Text);
    assert.notEqual(fresh, other);
  });
});

describe("a call drawn before its arguments arrived", () => {
  test("each banner shows placeholders for what it does not have yet, never an error", () => {
    const none = undefined as never;
    assert.equal(render(execRenderers.exec_command.renderCall(none, theme, ctx())), "$ …");
    assert.equal(
      render(execRenderers.write_stdin.renderCall(none, theme, ctx())),
      "⟳ poll → session_id=? (yield 5.0s)",
    );
    assert.equal(
      render(execRenderers.kill_session.renderCall(none, theme, ctx())),
      "kill_session session_id=? signal=SIGTERM",
    );
    assert.equal(render(execRenderers.set_on_exit.renderCall(none, theme, ctx())), "set_on_exit session_id=? → ?");
    assert.equal(render(execRenderers.list_sessions.renderCall(none, theme, ctx())), "list_sessions");
  });
});

describe("write_stdin", () => {
  const call = stdinCall;

  test("input: control bytes named, written or escaped; long input cut at 60 characters; on one line", () => {
    assert.equal(call({ session_id: 1, chars: "\x03\x04\x1b" }), "» ^C^D^[ → session_id=1 (until it answers)");
    assert.equal(call({ session_id: 1, chars: "\\x04 \\e[A \\x1b" }), "» ^D ^[[A ^[ → session_id=1 (until it answers)");
    assert.equal(
      call({ session_id: 1, chars: "a".repeat(60) }),
      `» ${"a".repeat(60)} → session_id=1 (until it answers)`,
    );
    assert.equal(
      call({ session_id: 1, chars: "a".repeat(61) }),
      `» ${"a".repeat(59)}… → session_id=1 (until it answers)`,
    );
    assert.equal(call({ session_id: 1, chars: "one\ntwo\n" }), "» one two → session_id=1 (until it answers)");
  });

  test("base64 input by its size; an empty one, or empty chars, is a poll", () => {
    assert.equal(call({ session_id: 1, chars_b64: "", chars: "y" }), "» y → session_id=1 (until it answers)");
    assert.equal(call({ session_id: 1, chars_b64: "" }), "⟳ poll → session_id=1 (yield 5.0s)");
    assert.equal(call({ session_id: 1, chars: "" }), "⟳ poll → session_id=1 (yield 5.0s)");
    assert.equal(call({ session_id: 1, chars: 7 }), "⟳ poll → session_id=1 (yield 5.0s)");
    assert.equal(call({ session_id: 1, chars_b64: 42, chars: "z" }), "» z → session_id=1 (until it answers)");
  });

  test("the wait: an absolute deadline, else the yield asked, else until it answers (input) or 5 s (a poll)", () => {
    const until = new Date(Date.now() + 30_000).toISOString();
    assert.match(
      call({ session_id: 2, yield_until: until, yield_time_ms: 100, chars: "x" }),
      /^» x → session_id=2 \((29\.\d|30\.0)s later\)$/,
    );
    assert.equal(call({ session_id: 2, yield_time_ms: 100, chars: "x" }), "» x → session_id=2 (yield 0.1s)");
    assert.equal(call({ session_id: 2, yield_until: 5 }), "⟳ poll → session_id=2 (yield 5.0s)");
    assert.equal(call({}), "⟳ poll → session_id=? (yield 5.0s)");
    assert.equal(call({ session_id: 2 }, tagged), "<toolTitle>*⟳ poll*</><muted> → session_id=2 (yield 5.0s)</>");
    assert.equal(
      call({ session_id: 2, chars: "q" }, tagged),
      "<toolTitle>*»*</> <toolOutput>q</><muted> → session_id=2 (until it answers)</>",
    );
  });

  test("its result is drawn as exec_command's", () => {
    assert.equal(
      render(
        execRenderers.write_stdin.renderResult(
          result({ running: true, session_id: 5, output: "ok\n", wall_time_seconds: 1 }),
          done,
          theme,
          ctx(),
        ),
      ),
      "ok\n  yielded 1.0s · session_id=5",
    );
  });
});

describe("kill_session", () => {
  const killResult = (details: unknown, opts = done, th = theme) =>
    render(execRenderers.kill_session.renderResult(result(details), opts, th, ctx()));

  test("the banner: the session and the signal, SIGTERM unless another is named", () => {
    assert.equal(
      render(execRenderers.kill_session.renderCall({ session_id: 4, signal: "SIGKILL" }, theme, ctx())),
      "kill_session session_id=4 signal=SIGKILL",
    );
    assert.equal(
      render(execRenderers.kill_session.renderCall({ signal: 9 }, theme, ctx())),
      "kill_session session_id=? signal=SIGTERM",
    );
    assert.equal(
      render(execRenderers.kill_session.renderCall({ session_id: 4 }, tagged, ctx())),
      "<toolTitle>*kill_session*</> <muted>session_id=4 signal=SIGTERM</>",
    );
  });

  test("no such session, with its id or a question mark", () => {
    assert.equal(killResult({ found: false, session_id: 9 }, done, tagged), "<warning>  no such session: 9</>");
    assert.equal(killResult({ found: false }), "  no such session: ?");
  });

  test("killed, still running, or already exited; then its time, signal or exit code, escalation and log", () => {
    assert.equal(
      killResult(
        {
          found: true,
          killed: true,
          session_id: 2,
          signal: "SIGKILL",
          exit_code: 137,
          escalated: true,
          wall_time_seconds: 5.04,
          log_path: "/l/2.log",
        },
        done,
        tagged,
      ),
      "  <success>killed session_id=2</><muted> · took 5.0s · signal=SIGKILL · escalated to SIGKILL · log: /l/2.log</>",
    );
    assert.equal(
      killResult({ found: true, killed: false, running: true, session_id: 2, failure_message: "EPERM" }, done, tagged),
      "  <error>kill failed: session_id=2 still running</><muted></>\n<error>  EPERM</>",
    );
    assert.equal(
      killResult({ found: true, session_id: 3, exit_code: 0 }),
      "  session_id=3 had already exited · exit_code=0",
    );
    assert.equal(
      killResult({ found: true, session_id: 3 }, done, tagged),
      "  <muted>session_id=3 had already exited</><muted></>",
    );
    assert.equal(
      killResult({ found: true, killed: true, session_id: 2, failure_message: "late" }),
      "  killed session_id=2",
      "a kill that worked shows no failure",
    );
  });

  test("the session's last output above, five lines unless expanded", () => {
    const output = Array.from({ length: 7 }, (_, i) => `o${i}`).join("\n");
    assert.equal(
      killResult({ found: true, killed: true, session_id: 1, output }).split("\n")[0],
      "… (2 earlier lines, ctrl+o to expand)",
    );
    assert.equal(killResult({ found: true, killed: true, session_id: 1, output }, expanded).split("\n")[0], "o0");
    assert.equal(killResult(undefined), "  session_id=undefined had already exited");
  });
});

describe("list_sessions", () => {
  const session = (over: Record<string, unknown> = {}) => ({
    session_id: 1,
    running: true,
    state: "running",
    wake_armed: false,
    command: "sleep 100",
    elapsed_ms: 65_000,
    ...over,
  });
  const list = (sessions: unknown[] | undefined, opts = done, th = theme) =>
    render(execRenderers.list_sessions.renderResult(result(sessions ? { sessions } : {}), opts, th, ctx()));

  test("none: said so", () => {
    assert.equal(list(undefined), "  no sessions");
    assert.equal(list([], done, tagged), "<muted>  no sessions</>");
    assert.equal(render(execRenderers.list_sessions.renderCall({}, tagged, ctx())), "<toolTitle>*list_sessions*</>");
  });

  test("each session: id, state (an exited one's code and signal), age, [wake], the command on one line", () => {
    assert.equal(
      list([
        session({ wake_armed: true, command: "npm run dev\n  --watch" }),
        session({ session_id: 2, running: false, state: "exited", exit_code: 0, elapsed_ms: 500 }),
        session({ session_id: 3, running: false, state: "exited", exit_code: 143, signal: "SIGTERM" }),
        session({ session_id: 4, running: false, state: "exited", signal: "SIGKILL", command: "x".repeat(80) }),
        session({ session_id: 5, running: false, state: "exited" }),
      ]),
      [
        "  #1 running 1m5s [wake] npm run dev --watch",
        "  #2 exited 0 0.5s sleep 100",
        "  #3 exited 143 SIGTERM 1m5s sleep 100",
        `  #4 exited SIGKILL 1m5s ${"x".repeat(69)}…`,
        "  #5 exited 1m5s sleep 100",
      ].join("\n"),
    );
    assert.equal(
      list([session({ wake_armed: true }), session({ session_id: 2, running: false, exit_code: 1 })], done, tagged),
      "  #1 <accent>running</> 1m5s<warning> [wake]</> <toolOutput>sleep 100</>\n  #2 <muted>exited 1</> 1m5s <toolOutput>sleep 100</>",
    );
  });

  test("five shown, the rest behind a count; expanded: all, with their logs", () => {
    const many = Array.from({ length: 6 }, (_, i) => session({ session_id: i + 1, log_path: `/l/${i + 1}.log` }));
    assert.equal(list(many.slice(0, 5)).split("\n").length, 5, "five: no count");
    const collapsed = list(many, done, tagged).split("\n");
    assert.equal(collapsed.length, 6);
    assert.equal(collapsed[5], "<muted>  … 1 more (</>ctrl+o to expand<muted>)</>");
    assert.doesNotMatch(collapsed.join("\n"), /log:/);
    const all = list(many, expanded, tagged).split("\n");
    assert.equal(all.length, 12);
    assert.equal(all[1], "      <dim>log: /l/1.log</>");
    assert.equal(list([session()], expanded).split("\n").length, 1, "no log, no line");
  });
});

describe("set_on_exit", () => {
  test("the banner names the session and the choice, a question mark for what is missing", () => {
    assert.equal(render(execRenderers.set_on_exit.renderCall({}, theme, ctx())), "set_on_exit session_id=? → ?");
    assert.equal(
      render(execRenderers.set_on_exit.renderCall({ session_id: 3, on_exit: "wake" }, tagged, ctx())),
      "<toolTitle>*set_on_exit*</> <muted>session_id=3 → wake</>",
    );
  });

  test("the result: no such session, or the status and whether a wake is armed", () => {
    const r = (details: unknown, th = theme) =>
      render(execRenderers.set_on_exit.renderResult(result(details), done, th, ctx()));
    assert.equal(r({ found: false }, tagged), "<warning>  no such session</>");
    assert.equal(
      r({ found: true, status: "armed", wake_armed: true }, tagged),
      "  <accent>armed</><warning> [wake]</>",
    );
    assert.equal(r({ found: true, status: "disarmed" }, tagged), "  <accent>disarmed</><muted> · wake not armed</>");
    assert.equal(r(undefined), "  ? · wake not armed");
  });
});
