import { SupervisorHost } from "../actors/host.ts";
import { resolvePython } from "../actors/python.ts";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const cwd = mkdtempSync(join(tmpdir(), "b-"));
const host = new SupervisorHost({ python: () => resolvePython("python3"), moduleReload: () => false });
await host.run({ code: "1", cwd, timeoutMs: 20000, session: "s" });
const times: number[] = [];
for (let i = 0; i < 2000; i++) {
  const t = process.hrtime.bigint();
  await host.run({ code: "x = 1", cwd, timeoutMs: 20000, session: "s" });
  times.push(Number(process.hrtime.bigint() - t) / 1e6);
}
times.sort((a, b) => a - b);
console.log("warm session p50", times[1000].toFixed(3), "p99", times[1980].toFixed(3));
const f: number[] = [];
for (let i = 0; i < 40; i++) {
  const t = process.hrtime.bigint();
  await host.run({ code: "x = 1", cwd, timeoutMs: 20000 });
  f.push(Number(process.hrtime.bigint() - t) / 1e6);
}
f.sort((a, b) => a - b);
console.log("fresh p50", f[20].toFixed(2));
await host.shutdown();
