// What a process wake costs on this machine, apart from everything the product does (issue 26: a quick run sent
// `started` then `done`; sending `done` alone measured slower through Pi, and the likeliest reason named was the
// cost of waking a process that slept through the whole run). A Node parent and a Python child speak over a Unix
// stream socket on fd 3, as the runner does: the child's reader thread takes a request and hands it to the main
// thread, which "runs" for W (busy or asleep) and answers with `done` alone (one frame back) or `started` first
// (two frames back). The parent times request to `done`, with a gap before each request as a model turn leaves
// one. Variants alternate round by round, so each figure has its same-run neighbours.
//
//   node bench/wake-cost.ts [--rounds 6] [--n 200] [--gap-ms 5]
import { spawn, execFileSync } from "node:child_process";
import type { Socket } from "node:net";
import { validateInterpreter } from "../actors/interpreter/interpreter.ts";

const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const ROUNDS = opt("rounds", 6);
const N = opt("n", 200);
const GAP_MS = opt("gap-ms", 5);

// The real interpreter, not a pyenv shim (a shim costs ~0.5 s a spawn and is not what runs): the project's one probe.
const probed = await validateInterpreter(process.env.PI_PYTHON ?? "python3", process.cwd());
if (!probed.ok) throw new Error(probed.error);
const python = probed.value.executable;

const CHILD = String.raw`
import os, socket, threading, time, queue
s = socket.socket(fileno=3)
q = queue.Queue()
def reader():
    buf = b""
    while True:
        data = s.recv(65536)
        if not data:
            q.put(None); return
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            q.put(line.decode())
threading.Thread(target=reader, daemon=True).start()
while True:
    req = q.get()
    if req is None: break
    frames, mode, us = req.split()
    us = int(us)
    if frames == "2": s.sendall(b"started\n")
    if mode == "spin":
        end = time.perf_counter() + us / 1e6
        while time.perf_counter() < end: pass
    elif us:
        time.sleep(us / 1e6)
    s.sendall(b"done\n")
`;

type Variant = { frames: 1 | 2; mode: "spin" | "sleep"; us: number };
const VARIANTS: Variant[] = [];
for (const [mode, us] of [
  ["spin", 0],
  ["spin", 300],
  ["spin", 1000],
  ["sleep", 1000],
] as const)
  for (const frames of [1, 2] as const) VARIANTS.push({ frames, mode, us });
const label = (v: Variant) => `${v.frames} frame${v.frames > 1 ? "s" : ""} back, ${v.mode} ${v.us} us`;

const child = spawn(python, ["-c", CHILD], { stdio: ["ignore", "inherit", "inherit", "pipe"] });
const sock = child.stdio[3] as Socket;
let waiter: (() => void) | undefined;
let pending = "";
sock.on("data", (d: Buffer) => {
  pending += d.toString();
  let i: number;
  while ((i = pending.indexOf("\n")) >= 0) {
    const line = pending.slice(0, i);
    pending = pending.slice(i + 1);
    if (line === "done") waiter?.();
  }
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function once(v: Variant): Promise<number> {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    waiter = () => resolve(Number(process.hrtime.bigint() - t0) / 1e6);
    sock.write(`${v.frames} ${v.mode} ${v.us}\n`);
  });
}

const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))];
const results = new Map<string, number[][]>(VARIANTS.map((v) => [label(v), []]));

for (let i = 0; i < 20; i++) await once(VARIANTS[0]); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  for (const v of r % 2 ? [...VARIANTS].reverse() : VARIANTS) {
    const xs: number[] = [];
    for (let i = 0; i < N; i++) {
      await sleep(GAP_MS);
      xs.push(await once(v));
    }
    results.get(label(v))!.push(xs);
  }
}
sock.end();
child.kill();

const load = execFileSync("cat", ["/proc/loadavg"], { encoding: "utf8" }).split(" ").slice(0, 3).join(" ");
console.log(`wake cost: ${ROUNDS} rounds x ${N} requests, a ${GAP_MS} ms gap before each; load ${load}; ${python}`);
console.log("variant".padEnd(34) + "p50 ms (per round: min-max)   p90 ms   minus the run's own time, p50");
for (const v of VARIANTS) {
  const rounds = results.get(label(v))!;
  const p50s = rounds.map((xs) => q(xs, 0.5));
  const all = rounds.flat();
  const p50 = q(all, 0.5);
  console.log(
    label(v).padEnd(34) +
      `${p50.toFixed(3)} (${Math.min(...p50s).toFixed(3)}-${Math.max(...p50s).toFixed(3)})`.padEnd(30) +
      `${q(all, 0.9).toFixed(3)}`.padEnd(9) +
      `${(p50 - v.us / 1000).toFixed(3)}`,
  );
}
