// Where the runtimes are on this machine: the Python runner (runtime-py/) and the JavaScript runner (runtime-js/).
// The runner kinds start them (actors/runner/kinds.ts); the backends make their folders readable where code runs
// (backends.ts: the sandbox's support folders).
import { fileURLToPath } from "node:url";

export const RUNNER_PATH = fileURLToPath(new URL("../../runtime-py/runner.py", import.meta.url));
export const JS_RUNNER_PATH = fileURLToPath(new URL("../../runtime-js/runner.js", import.meta.url));
