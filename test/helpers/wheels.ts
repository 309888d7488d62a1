// A minimal pure-Python wheel for offline installs (test/actors/deps/dependencies.test.ts,
// test/actors/process/remote.test.ts): a wheel is a zip with the module, METADATA, WHEEL and RECORD, so no package
// index is needed. Its module records its version.
import { execFileSync } from "node:child_process";
import { PYTHON } from "./pythons.ts";

/** `python -c WHEEL_SCRIPT <dir> <name> <version>` writes `<dir>/<name>-<version>-py3-none-any.whl`. */
export const WHEEL_SCRIPT = [
  "import sys, zipfile",
  "d, n, v = sys.argv[1:4]",
  "info = f'{n}-{v}.dist-info'",
  "with zipfile.ZipFile(f'{d}/{n}-{v}-py3-none-any.whl', 'w') as z:",
  "    z.writestr(f'{n}/__init__.py', f'VERSION = {v!r}\\n')",
  "    z.writestr(f'{info}/METADATA', f'Metadata-Version: 2.1\\nName: {n}\\nVersion: {v}\\n')",
  "    z.writestr(f'{info}/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')",
  "    z.writestr(f'{info}/RECORD', f'{n}/__init__.py,,\\n{info}/METADATA,,\\n{info}/WHEEL,,\\n{info}/RECORD,,\\n')",
].join("\n");

/** Builds the wheel for `name==version` into `dir` with Debian's Python. */
export function buildWheel(dir: string, name: string, version: string): void {
  execFileSync(PYTHON, ["-c", WHEEL_SCRIPT, dir, name, version]);
}
