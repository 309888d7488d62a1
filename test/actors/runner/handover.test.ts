// A spare's process handed to the fresh run that claimed it (actors/runner/handover.ts), with real processes: an
// offer taken in time is the run's; one nobody takes within the claim window is stopped, and a run that comes for it
// later gets nothing at once (it starts a process of its own) instead of waiting for an offer already dropped.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { describe, test } from "node:test";
import { offer, take, type Handover } from "../../../actors/runner/handover.ts";
import type { RunnerHandle } from "../../../actors/process/operations.ts";
import { ok } from "../../../lib/result.ts";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";

/** A process leading its own group, offered as a spare's: only what handover.ts uses of a handle is real here. */
function spareProcess(): { handover: Handover; pid: number } {
  const child = spawn("sleep", ["60"], { detached: true, stdio: "ignore" });
  child.unref();
  const pid = child.pid!;
  const handle = {
    pid,
    signalGroup: (signal: NodeJS.Signals) => {
      process.kill(-pid, signal);
      return ok(undefined);
    },
  } as unknown as RunnerHandle;
  return { handover: { handle, ready: { python: "3", executable: "python3" } }, pid };
}

let n = 0;
const spareId = () => `spare:handover-test-${++n}`;
const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<"waiting">((r) => setTimeout(() => r("waiting"), ms))]);

describe("handover", () => {
  test("an offer taken within the claim window is the run's: its process is left alone after the window", async () => {
    const { handover, pid } = spareProcess();
    const id = spareId();
    offer(id, handover, 100);
    assert.equal(await take(id), handover);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(pidAlive(pid), true);
    process.kill(-pid, "SIGKILL");
  });

  test("a run that asks first gets the offer when it comes", async () => {
    const { handover, pid } = spareProcess();
    const id = spareId();
    const taken = take(id);
    offer(id, handover, 100);
    assert.equal(await taken, handover);
    process.kill(-pid, "SIGKILL");
  });

  test("an offer nobody takes within the window: its process is stopped, and a late run gets nothing at once", async () => {
    const { handover, pid } = spareProcess();
    const id = spareId();
    offer(id, handover, 100);
    assert.ok(await waitUntil(() => !pidAlive(pid), 5000), "the untaken spare's process was stopped");
    assert.equal(await within(take(id), 1000), undefined, "a late take resolves with nothing, not never");
  });
});
