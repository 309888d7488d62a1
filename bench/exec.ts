// Shell-session figures through a real Pi session (faux model), run on demand:
// `source scripts/env.sh && node bench/exec.ts [--quick]`. Each figure is Pi's own span of one tool call,
// tool_execution_start -> tool_execution_end, beside a baseline measured in the same run: a bare `bash -c true`
// spawn-to-close from Node (the floor for exec_command of `true`), and a raw pipe echo through `cat` (the floor for
// write_stdin's answer).
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import { startPi, type PiHarness } from "../test/helpers/pi-session.ts";
import { spans } from "./pi-spans.ts";
import { echoTimes, line } from "./run.ts";

/** Spawn to `close` (exit and both pipes drained) of `bash -c true`, as exec_command must wait for. */
export async function bareBash(): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const p = spawn("/bin/bash", ["-c", "true"], { stdio: ["pipe", "pipe", "pipe"], detached: true });
    p.stdout.resume();
    p.stderr.resume();
    p.once("close", () => resolve());
    p.once("error", reject);
  });
  return performance.now() - t0;
}

/** A line written to a live `cat` until its echo is read back. */
async function catEcho(n: number): Promise<number[]> {
  const p = spawn("cat", [], { stdio: ["pipe", "pipe", "inherit"] });
  const times = await echoTimes(p, n);
  p.kill();
  return times;
}

/** The shell-session cases on a Pi session that has the exec tools (also run by `bench/pi.ts --with exec`). */
export async function execCases(pi: PiHarness, { quick }: { quick: boolean }) {
  const N = (full: number) => (quick ? Math.max(20, Math.floor(full / 5)) : full);
  {
    const n = N(200);
    for (let i = 0; i < 20; i++) await bareBash();
    const bare: number[] = [];
    for (let i = 0; i < n; i++) bare.push(await bareBash());
    const bareSt = line("bare `bash -c true` spawn to close", bare);
    await spans(
      pi,
      Array.from({ length: 20 }, () => ["exec_command", { cmd: "true" }]),
    );
    const exec = await spans(
      pi,
      Array.from({ length: n }, () => ["exec_command", { cmd: "true" }]),
    );
    if (exec.results.some((r) => r.isError || r.details.running)) throw new Error("exec_command of true did not exit");
    line("exec_command `true` (goal p50 <= 2.5 ms)", exec.ms, { name: "bare bash", p50: bareSt.p50 });

    const echo = line("raw pipe echo through cat", await catEcho(n));
    const [cat] = (await spans(pi, [["exec_command", { cmd: "cat", yield_time_ms: 250 }]])).results;
    const id = cat.details.session_id as number;
    const writes = await spans(
      pi,
      Array.from({ length: n + 20 }, () => ["write_stdin", { session_id: id, chars: "x\\n" }]),
    );
    if (writes.results.some((r) => r.details.output !== "x\n")) throw new Error("write_stdin did not return the echo");
    line("write_stdin line to cat until echo (goal p50 <= 1 ms)", writes.ms.slice(20), {
      name: "raw echo",
      p50: echo.p50,
    });

    // Polls of a quiet session, alone and among 64 live sessions.
    const polls = (k: number) =>
      Array.from(
        { length: k },
        () => ["write_stdin", { session_id: id, yield_time_ms: 0 }] as [string, Record<string, unknown>],
      );
    const alone = line("empty poll, 1 live session", (await spans(pi, polls(n))).ms);
    await spans(
      pi,
      Array.from({ length: 63 }, () => ["exec_command", { cmd: "sleep 600", yield_time_ms: 250 }]),
    );
    const many = line("empty poll, 64 live sessions", (await spans(pi, polls(n))).ms);
    console.log(`\n64 sessions: poll p99 ${(many.p99 / alone.p99).toFixed(2)}x one session's (goal <= 2x)`);
  }
}

async function main() {
  process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,exec";
  process.env.PI_CODE_EXECUTION_JOURNAL ??= "off";
  const quick = process.argv.includes("--quick");
  const pi = await startPi();
  console.log(`node ${process.version}; ${quick ? "quick" : "full"} run; spans are tool_execution_start -> end\n`);
  try {
    await execCases(pi, { quick });
  } finally {
    await pi.dispose();
  }
}

if (import.meta.main) await main();
