// Writes the floor extension's variants (bench/floor/index.ts) as Pi packages under DIR, to load with `--peer`:
// `node bench/floors.ts DIR [actors:events ...]` (default 0:0 1:2 3:6) prints one directory per variant, e.g.
// `node bench/pi.ts --peer /tmp/peers/pi-python $(node bench/floors.ts /tmp/floors) --quick --only-peers`.
// The interpreter is the one PI_PY or `python3` resolves to, found once (the pyenv shim costs ~0.5 s a start).
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const [dir, ...specs] = process.argv.slice(2);
if (!dir) throw new Error("usage: node bench/floors.ts DIR [actors:events ...]");
const python =
  process.env.PI_PY ||
  execFileSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim();
const here = import.meta.dirname;
const out: string[] = [];
for (const spec of specs.length ? specs : ["0:0", "1:2", "3:6"]) {
  const [actors, events] = spec.split(":").map(Number);
  if (!Number.isInteger(actors) || !Number.isInteger(events) || actors! < 0 || events! < 0)
    throw new Error(`${spec}: expected actors:events, two whole numbers`);
  const name = actors ? `floor-${actors}-actors-${events}-events` : "floor-bare";
  const d = resolve(dir, name);
  rmSync(d, { recursive: true, force: true });
  mkdirSync(d, { recursive: true });
  copyFileSync(join(here, "floor", "index.ts"), join(d, "index.ts"));
  symlinkSync(resolve(here, "..", "node_modules"), join(d, "node_modules"));
  const pkg = {
    name,
    version: "0.0.0",
    type: "module",
    pi: { extensions: ["./index.ts"] },
    floor: { actors, events, python },
  };
  writeFileSync(join(d, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
  out.push(`--peer ${d}`);
}
console.log(out.join(" "));
