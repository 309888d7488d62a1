// Writes the floor extension's variants (bench/floor/index.ts) as Pi packages under DIR, to load with `--peer`:
// `node bench/floors.ts DIR [actors:events ...]` (default 0:0 1:2 3:6) prints one directory per variant, e.g.
// `node bench/pi.ts --peer /tmp/peers/pi-python $(node bench/floors.ts /tmp/floors) --quick --only-peers`.
// The interpreter is the one PI_PYTHON or `python3` resolves to, as bench/pi.ts finds it (the project's one probe),
// written into each variant once (the pyenv shim costs ~0.5 s a start).
import { copyFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { validateInterpreter } from "../actors/interpreter/interpreter.ts";

const [dir, ...specs] = process.argv.slice(2);
if (!dir) throw new Error("usage: node bench/floors.ts DIR [actors:events ...]");
const found = await validateInterpreter(process.env.PI_PYTHON ?? "python3", process.cwd());
if (!found.ok) throw new Error(`no Python for the floor's kernel: ${found.error}`);
const python = found.value.executable;
const here = import.meta.dirname;
// Every variant is checked before anything is written.
const variants = (specs.length ? specs : ["0:0", "1:2", "3:6"]).map((spec) => {
  const m = /^(\d+):(\d+)$/.exec(spec);
  if (!m) throw new Error(`${spec}: expected actors:events, two whole numbers`);
  const [actors, events] = [Number(m[1]), Number(m[2])];
  if (actors === 0 && events > 0) throw new Error(`${spec}: events need an actor to go to`);
  // An actor's events include the `go` that starts it and the `done` that ends it.
  if (actors > 0 && events < 2) throw new Error(`${spec}: an actor's events are at least its go and done (2)`);
  return { actors, events, name: actors ? `floor-${actors}-actors-${events}-events` : "floor-bare" };
});
const out: string[] = [];
for (const { actors, events, name } of variants) {
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
