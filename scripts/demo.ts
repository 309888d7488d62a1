// Offline demo: a real Pi agent session with this extension, driven by a scripted model (no API key, no network).
// Shows every tool surface once: a session run, an interrupt that keeps state and a kill that loses it
// (code_execution), a python cell, an eval cell with a display (Python, then JavaScript), a shell session
// (exec_command, then write_stdin), and where the inspector is (/code-inspect, and the CLI for a recorded log).
//   bash scripts/demo.sh [--keep]     (which removes the demo's temporary folder at the end, unless --keep)
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "../test/helpers/pi-session.ts";
import { callAs } from "../test/helpers/notebook.ts";

type Call = [tool: string, args: Record<string, unknown>];

// Every surface, on the scripted model's side (the same settings a user gives with PI_CODE_EXECUTION_TOOLS).
process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,python,eval,exec";

/** The result's header line: what its details say about how it ended. */
function summary(tool: string, r: ToolResultMessage): string {
  const d = r.details ?? {};
  switch (tool) {
    case "code_execution":
      return `status=${d.status} isError=${r.isError} session=${JSON.stringify(d.session)} ${d.durationMs} ms`;
    case "python":
      return `isError=${r.isError} cells=${JSON.stringify(d.cells?.map((c: any) => c.status))} session=${JSON.stringify(d.session)}`;
    case "eval":
      return `isError=${r.isError} languages=${JSON.stringify(d.languages)} cells=${JSON.stringify(d.cells?.map((c: any) => c.status))}`;
    default: // exec_command, write_stdin
      return `status=${d.status} isError=${r.isError}${d.session_id !== undefined ? ` session_id=${d.session_id}` : ""}${d.exit_code !== undefined && d.exit_code !== null ? ` exit_code=${d.exit_code}` : ""}`;
  }
}

/** Prints one step: its heading, the call, the header line and the result's lines, quoted. */
function show(say: string, [tool, args]: Call, r: ToolResultMessage): void {
  console.log(`\n## ${say}`);
  console.log(`> ${tool} ${JSON.stringify(args)}`);
  console.log(summary(tool, r));
  // The result's lines; its final newline ends the last line and is no empty line of its own.
  const text = textOf(r).replace(/\n$/, "");
  if (text) console.log(text.replace(/^/gm, "  | ").replace(/^  \| $/gm, "  |"));
}

async function step(pi: PiHarness, say: string, call: Call): Promise<ToolResultMessage> {
  const [result] = await callAs(pi, [call]);
  show(say, call, result);
  return result;
}

/** Runs a slash command; in print mode its messages go to stderr, returned here instead. */
async function command(pi: PiHarness, line: string): Promise<string> {
  const printed: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array) => (printed.push(String(chunk)), true)) as never;
  try {
    await pi.session.prompt(line);
  } finally {
    process.stderr.write = write;
  }
  return printed.join("");
}

const codeSteps: [string, Record<string, unknown>][] = [
  ["A named session keeps state across calls", { code: "import os\ncounter = 41\nos.getpid()", session: "demo" }],
  ["...so the next call sees it", { code: "counter += 1\ncounter", session: "demo" }],
  [
    "A timeout sends one KeyboardInterrupt: the code stops, the session keeps its state",
    { code: "import time\nprint('working...', flush=True)\ntime.sleep(60)", session: "demo", timeout: 1 },
  ],
  ["State survived the interrupt", { code: "counter", session: "demo" }],
  [
    "Code that swallows the interrupt is killed after the grace period: the session is lost",
    {
      code: "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        print('ignoring the interrupt', flush=True)",
      session: "demo",
      timeout: 1,
    },
  ],
  ["The next call starts a new process and says so", { code: "'counter' in globals()", session: "demo" }],
];

const started = startPi();
// Ctrl-C or a kill: stop the sessions' processes before going (demo.sh then removes their folders), within 5 s.
// Ctrl-C reaches both this process and demo.sh, which then sends SIGTERM: one stop for both.
let stopping = false;
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(code), 5000).unref();
    void started.then((pi) => pi.dispose()).finally(() => process.exit(code));
  });
}

const pi = await started;
try {
  for (const [say, args] of codeSteps) await step(pi, say, ["code_execution", args]);

  await step(pi, "python (pi-python's surface): cells in the persistent `notebook` session", [
    "python",
    {
      cells: [
        { title: "load", code: "import statistics\ndata = [3, 1, 4, 1, 5, 9, 2, 6]" },
        { code: "statistics.mean(data)" },
      ],
    },
  ]);
  await step(
    pi,
    "eval (oh-my-pi's surface): a Python cell sees the python tool's `data` and displays; then a JS cell",
    [
      "eval",
      {
        cells: [
          { language: "py", title: "summary", code: "display({'n': len(data), 'max': max(data)})\nsorted(data)[:3]" },
          {
            language: "js",
            title: "js",
            code: "const squares = [1, 2, 3].map((n) => n * n)\ndisplay({ squares })\nsquares.length",
          },
        ],
      },
    ],
  );

  const waiting = await step(
    pi,
    "exec_command: a shell session that waits for input (still running when the call returns)",
    ["exec_command", { cmd: 'read -r name; echo "hello, $name"', yield_time_ms: 500 }],
  );
  await step(pi, "write_stdin: the model types into that session, which answers and exits", [
    "write_stdin",
    { session_id: waiting.details.session_id, chars: "demo\n", yield_time_ms: 5000 },
  ]);

  // The live inspector, as `/code-inspect` starts it in Pi; the page is fetched once to show it answers.
  const status = (await command(pi, "/code-inspect")).trim();
  const url = /https?:\/\/\S+\//.exec(status)?.[0];
  const page = url
    ? await fetch(url).then(
        (r) => `HTTP ${r.status}`,
        (e) => `unreachable: ${e}`,
      )
    : "no URL printed";
  await command(pi, "/code-inspect stop");
  const log = /^Event log: (\S+)/m.exec(status)?.[1];
  console.log("\n## Where the inspector is: /code-inspect in Pi (or pi --code-inspect) prints its loopback URL");
  console.log("> /code-inspect");
  console.log(`the page answered ${page}`);
  console.log(status.replace(/^/gm, "  | "));
  console.log(
    `After Pi exits, the recorded log opens in the same page: node bin/pi-code-supervisor.js inspect ${log ?? "<log.jsonl>"}` +
      " (bash scripts/demo.sh --keep keeps this demo's log)",
  );
} finally {
  await pi.dispose();
}
