// Offline demo: a real Pi agent session with this extension, driven by a scripted model (no API key, no network).
// Shows a session run, an interrupt that keeps state, and a kill that loses it.
//   bash scripts/demo.sh [--keep]     (which removes the demo's temporary folder at the end, unless --keep)
import { startPi, textOf } from "../test/helpers/pi-session.ts";

const steps = [
  {
    say: "A named session keeps state across calls",
    call: { code: "import os\ncounter = 41\nos.getpid()", session: "demo" },
  },
  { say: "...so the next call sees it", call: { code: "counter += 1\ncounter", session: "demo" } },
  {
    say: "A timeout sends one KeyboardInterrupt: the code stops, the session keeps its state",
    call: { code: "import time\nprint('working...', flush=True)\ntime.sleep(60)", session: "demo", timeout: 1 },
  },
  { say: "State survived the interrupt", call: { code: "counter", session: "demo" } },
  {
    say: "Code that swallows the interrupt is killed after the grace period: the session is lost",
    call: {
      code: "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        print('ignoring the interrupt', flush=True)",
      session: "demo",
      timeout: 1,
    },
  },
  { say: "The next call starts a new process and says so", call: { code: "'counter' in globals()", session: "demo" } },
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
  for (const step of steps) {
    const [result] = await pi.callTools([step.call]);
    console.log(`\n## ${step.say}`);
    console.log(`> code_execution ${JSON.stringify(step.call)}`);
    const d = result.details;
    console.log(`status=${d.status} isError=${result.isError} session=${JSON.stringify(d.session)} ${d.durationMs} ms`);
    // The result's lines, quoted; its final newline ends the last line and is no empty line of its own.
    const text = textOf(result).replace(/\n$/, "");
    if (text) console.log(text.replace(/^/gm, "  | ").replace(/^  \| $/gm, "  |"));
  }
} finally {
  await pi.dispose();
}
