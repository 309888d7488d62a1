// A floor for issue 26's warm-cell goal: a Pi extension whose `python` tool does the least a kernel-backed tool can
// do, one NDJSON line to an idle Python process and one back (as pi-python does, without its display, capture and
// settings), and, as its variant says, `actors` XState actors per call, each created from a 3-state machine, started
// and sent `events` events (its `go` and `done` among them). bench/floors.ts writes its variants as Pi packages;
// `node bench/pi.ts --peer` loads them beside pi-python, so the cost of one actor inside a Pi tool call is read in the
// same run as the peer's whole cell.
import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { readFileSync } from "node:fs";
import { assign, createActor, setup } from "xstate";

interface Variant {
  actors: number;
  events: number;
  python: string;
}
const variant: Variant = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8")).floor;

const kernel = `
import sys, json
answers, sys.stdout = sys.stdout, sys.stderr  # what cells print is not the protocol (and is dropped)
ns = {}
for line in sys.stdin:
    m = json.loads(line)
    error = None
    try:
        for c in m["cells"]:
            exec(compile(c, "<cell>", "exec"), ns)
    except BaseException as e:
        error = f"{type(e).__name__}: {e}"
    answers.write(json.dumps({"id": m["id"], "error": error}) + "\\n")
    answers.flush()
`;

type Ev = { type: "go" } | { type: "tick" } | { type: "done" };
const machine = setup({ types: {} as { context: { ticks: number }; events: Ev } }).createMachine({
  context: { ticks: 0 },
  initial: "idle",
  states: {
    idle: { on: { go: "running" } },
    running: {
      on: { tick: { actions: assign({ ticks: ({ context }) => context.ticks + 1 }) }, done: "finished" },
    },
    finished: { type: "final" },
  },
});

export default function floor(pi: { registerTool(tool: unknown): void; on(event: string, handler: () => void): void }) {
  let child: ChildProcessByStdio<Writable, Readable, null> | undefined;
  let buffered = "";
  let next = 0;
  const waiting = new Map<number, (error: string | null) => void>();
  const kernelUp = () => {
    const c = spawn(variant.python, ["-u", "-c", kernel], { stdio: ["pipe", "pipe", "ignore"] });
    c.stdout.setEncoding("utf8");
    c.stdout.on("data", (d: string) => {
      buffered += d;
      for (let i = buffered.indexOf("\n"); i >= 0; i = buffered.indexOf("\n")) {
        const { id, error } = JSON.parse(buffered.slice(0, i)) as { id: number; error: string | null };
        buffered = buffered.slice(i + 1);
        waiting.get(id)?.(error);
        waiting.delete(id);
      }
    });
    // A kernel that ended answers nothing more: its calls fail, and the next call starts another.
    c.on("exit", (code, signal) => {
      if (child === c) child = undefined;
      for (const answer of waiting.values()) answer(`the kernel ended (${signal ?? `exit code ${code}`})`);
      waiting.clear();
    });
    return c;
  };
  // Events on the way out and on the way back, as a run's are (`go` and the first half before the write).
  const send = (actors: ReturnType<typeof createActor<typeof machine>>[], k: number) => {
    for (const a of actors) for (let i = 0; i < k; i++) a.send({ type: "tick" });
  };
  // Pi's session ends: so does the kernel (its pipes would keep Pi's process alive).
  pi.on("session_shutdown", () => {
    child?.kill("SIGKILL");
    child = undefined;
  });
  pi.registerTool({
    name: "python",
    label: "python",
    description: "Runs Python cells in one persistent process (a benchmark floor, not a product).",
    parameters: { type: "object", properties: { cells: { type: "array", items: { type: "object" } } } },
    async execute(_id: string, params: { cells: { code: string }[] }) {
      child ??= kernelUp();
      const id = ++next;
      const actors = Array.from({ length: variant.actors }, () => createActor(machine).start());
      for (const a of actors) a.send({ type: "go" });
      send(actors, Math.max(0, Math.floor(variant.events / 2) - 1));
      const answered = new Promise<string | null>((r) => waiting.set(id, r));
      child.stdin.write(`${JSON.stringify({ id, cells: params.cells.map((c) => c.code) })}\n`);
      const error = await answered;
      send(actors, Math.max(0, Math.ceil(variant.events / 2) - 1));
      for (const a of actors) a.send({ type: "done" });
      if (error) throw new Error(error);
      return { content: [{ type: "text", text: "" }], details: { actors: actors.length } };
    },
  });
}
