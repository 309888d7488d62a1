// The real `pi` CLI in print mode, offline, with the scripted faux model (test/helpers/faux-cli-driver.ts) and one
// extension entry: for flags and commands that only the CLI's start-up path exercises.
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

/** `pi -p --no-session -ne -e <driver> -e <entry> --provider faux --model faux-1 <args>`, waited for (60 s at most). */
export function piPrint(
  entry: string,
  args: string[],
  env: { PI_CODING_AGENT_DIR: string } & NodeJS.ProcessEnv,
  /** Pi's working directory (the project); default: the test process's. */
  cwd?: string,
): SpawnSyncReturns<string> {
  return spawnSync(
    join(ROOT, "node_modules/.bin/pi"),
    [
      "-p",
      "--no-session",
      "-ne",
      "-e",
      join(ROOT, "test/helpers/faux-cli-driver.ts"),
      "-e",
      join(ROOT, entry),
      "--provider",
      "faux",
      "--model",
      "faux-1",
      ...args,
    ],
    {
      encoding: "utf8",
      ...(cwd ? { cwd } : {}),
      env: { ...process.env, ...env, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" },
      timeout: 60_000,
    },
  );
}
