// The tests' one scratch-directory fixture: a fresh directory (under the system's temp directory by default), by its real path
// (so paths a runner or Pi reports compare equal), removed when the test process exits, after every `after` hook
// has stopped what used it.
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];
let hooked = false;

/** A new empty directory named `<prefix><random>` under `under` (the system's temp directory unless a test needs
 * another place: /var/tmp or /run, which a sandbox does not replace, a folder a test made), removed at the process's
 * exit. */
export function tempDir(prefix = "pcs-test-", under = tmpdir()): string {
  const dir = realpathSync(mkdtempSync(join(under, prefix)));
  made.push(dir);
  if (!hooked) {
    hooked = true;
    process.once("exit", () => {
      for (const d of made) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}
