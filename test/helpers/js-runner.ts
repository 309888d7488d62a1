// The JavaScript runner (runtime-js/runner.js) driven like the host drives it (docs/protocol-js.md): a real Node
// child, real pipes and signals. A cell's output is taken once as much has been read as its `done` counts (`out`), as
// the host's output order does: the three sockets are read in no fixed order, so a turn after `done` is not enough.
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { RunnerDriver, type Frame, type StartOptions } from "./runner-driver.ts";
import { waitUntil } from "./procs.ts";

export const JS_RUNNER_PATH = fileURLToPath(new URL("../../runtime-js/runner.js", import.meta.url));

export interface CellResult {
  done: Frame & { exitCode: number; error: string | null; displayedValue: boolean; value?: string; exception?: string };
  stdout: string;
  stderr: string;
  displays: Frame[];
}

export function startJs(opts: StartOptions = {}): Promise<RunnerDriver> {
  return RunnerDriver.start({ command: process.execPath, args: [JS_RUNNER_PATH, "--mode", "session"], ...opts });
}

export const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

let cellCount = 0;

/** Sends a cell and collects what it produced; `answer` answers its tool calls. */
export async function runCell(
  d: RunnerDriver,
  code: string,
  opts: {
    extra?: Record<string, unknown>;
    timeoutMs?: number;
    answer?: (call: Frame) => { status: string; text: string } | Promise<{ status: string; text: string }>;
  } = {},
): Promise<CellResult> {
  cellCount += 1;
  const mark = d.startRun(code, { filename: `cell-${cellCount}.js`, extra: opts.extra });
  let finished = false;
  const answering = opts.answer
    ? (async () => {
        while (!finished) {
          const call = await d
            .waitFrame((f) => f.type === "tool.call" && f.run === mark.id, 200)
            .catch(() => undefined);
          if (!call) continue;
          void Promise.resolve(opts.answer!(call)).then((a) =>
            d.send({ type: "tool.result", id: call.id, run: call.run, ...a }),
          );
        }
      })()
    : undefined;
  try {
    const done = (await d.waitFrame(
      (f) => f.type === "done" && f.id === mark.id,
      opts.timeoutMs ?? 10_000,
    )) as CellResult["done"];
    const [outBytes, errBytes] = (done.out as [number, number] | undefined) ?? [0, 0];
    assert.ok(
      await waitUntil(() => d.stdoutBytes().length >= outBytes && d.stderrBytes().length >= errBytes, 10_000),
      "the output the cell's done counts arrived",
    );
    await turn();
    const displays = d.frames.filter((f) => f.type === "display" && f.id === mark.id);
    return {
      done,
      stdout: d.stdoutBytes().subarray(mark.out).toString("utf8"),
      stderr: d.stderrBytes().subarray(mark.err).toString("utf8"),
      displays,
    };
  } finally {
    finished = true;
    await answering;
  }
}
