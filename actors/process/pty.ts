// The PTY backend, @lydell/node-pty (prebuilt binaries inside the npm package; nothing is downloaded at install).
// Loaded on first use: if it cannot load, PTY calls fail with the reason and pipe mode is unaffected.
import { createRequire } from "node:module";
import { fail, ok, type Result } from "../../lib/result.ts";

export const PTY_PACKAGE = "@lydell/node-pty";

/** The part of node-pty used here. */
export interface PtyProcess {
  readonly pid: number;
  onData(fn: (data: Buffer | string) => void): { dispose(): void };
  onExit(fn: (e: { exitCode: number; signal?: number }) => void): { dispose(): void };
  write(data: string | Buffer): void;
  kill(signal?: string): void;
}

export interface PtyModule {
  spawn(
    file: string,
    args: string[],
    options: {
      name: string;
      cols: number;
      rows: number;
      cwd: string;
      env: Record<string, string>;
      encoding: null;
    },
  ): PtyProcess;
}

let loaded: Result<PtyModule> | undefined;

export function loadPty(): Result<PtyModule> {
  if (loaded) return loaded;
  try {
    const mod = createRequire(import.meta.url)(PTY_PACKAGE) as PtyModule;
    if (typeof mod?.spawn !== "function") throw new Error("the module has no spawn function");
    loaded = ok(mod);
  } catch (e) {
    loaded = fail(
      `tty: true needs ${PTY_PACKAGE}, which could not be loaded (${(e as Error).message.split("\n")[0]}). ` +
        `Reinstall the extension's dependencies (npm install in its folder), or call exec_command with tty: false.`,
    );
  }
  return loaded;
}
