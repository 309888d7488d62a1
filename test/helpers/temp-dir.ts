// The tests' one scratch-directory fixture: a fresh directory under the system's temp directory, by its real path
// (so paths a runner or Pi reports compare equal), removed when the test process exits, after every `after` hook
// has stopped what used it.
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];
let hooked = false;

/** A new empty directory named `<prefix><random>`, removed at the process's exit. */
export function tempDir(prefix = "pcs-test-"): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.push(dir);
  if (!hooked) {
    hooked = true;
    process.once("exit", () => {
      for (const d of made) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}
