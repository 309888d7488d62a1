// The process port's `spawn` on this machine (actors/process/children.ts) with real processes: a child is tracked
// from its start, inside a cgroup made before it (so its very first fork is inside), a missing program is a start
// failure rather than a shell's exit 127, and a short child run to its end (collectChild) leaves nothing behind,
// neither a process nor a registry entry.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, test } from "node:test";
import { collectChild, spawnLocalChild, type ChildSpec } from "../../../actors/process/children.ts";
import { localOperations } from "../../../actors/process/operations.ts";
import { containmentMode } from "../../../actors/registry/containment.ts";
import { liveGroups, stopTracked } from "../../../actors/registry/registry.ts";
import { SHUTDOWN } from "../../../actors/registry/shutdown.ts";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";

const spec = (command: string, more: Partial<ChildSpec> = {}): ChildSpec => ({
  file: "/bin/sh",
  args: ["-c", command],
  cwd: tmpdir(),
  env: process.env,
  purpose: "shell",
  ...more,
});

const cgroupOf = (pid: number) => /^0::(.*)$/m.exec(readFileSync(`/proc/${pid}/cgroup`, "utf8"))?.[1] ?? "";

describe("local spawn", () => {
  test("the child's first action, a setsid daemon, is already in the child's own cgroup", async (t) => {
    if (containmentMode().kind !== "cgroup") return t.skip(`no cgroups here: ${containmentMode().reason}`);
    const r = await localOperations.spawn(spec("setsid sleep 30 >/dev/null 2>&1 </dev/null & echo $!; exec sleep 30"));
    assert.ok(r.ok);
    const h = r.value;
    let out = "";
    h.onData((c) => (out += c.toString()));
    assert.ok(await waitUntil(() => out.includes("\n"), 5000));
    const daemon = Number(out.trim());
    assert.equal(cgroupOf(daemon), cgroupOf(h.pid), "the daemon shares the child's cgroup");
    assert.match(cgroupOf(h.pid), /\/pi-code-supervisor\.\d+\/c\d+$/);
    assert.ok(h.signalGroup("SIGTERM").ok);
    assert.ok(await waitUntil(() => !pidAlive(daemon) && !pidAlive(h.pid), 3000), "the signal reached both");
    await stopTracked(h.pid, SHUTDOWN.shortChild);
  });

  test("the same in a PTY", async (t) => {
    if (containmentMode().kind !== "cgroup") return t.skip(`no cgroups here: ${containmentMode().reason}`);
    const r = await spawnLocalChild(
      spec("setsid sleep 30 >/dev/null 2>&1 </dev/null & echo $!; exec sleep 30", { tty: { cols: 80, rows: 24 } }),
    );
    assert.ok(r.ok);
    let out = "";
    r.value.onData((c) => (out += c.toString()));
    assert.ok(await waitUntil(() => /\d+\r?\n/.test(out), 5000));
    const daemon = Number(out.trim());
    assert.equal(cgroupOf(daemon), cgroupOf(r.value.pid));
    assert.ok(r.value.signalGroup("SIGKILL").ok);
    assert.ok(await waitUntil(() => !pidAlive(daemon), 3000));
    await stopTracked(r.value.pid, SHUTDOWN.shortChild);
  });

  test("a program that does not exist is a start failure", async () => {
    const r = await localOperations.spawn(spec("", { file: "/nonexistent/pcs-program", args: [] }));
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.error.message : "", /could not start \/nonexistent\/pcs-program: ENOENT/);
    const named = await localOperations.spawn(spec("", { file: "pcs-no-such-program", args: [] }));
    assert.equal(named.ok, false);
  });

  test("collectChild: output and exit code; what the child left behind is gone, and so is its registry entry", async () => {
    const r = await collectChild(
      (s) => localOperations.spawn(s),
      spec("echo out; echo err >&2; sleep 30 >/dev/null 2>&1 </dev/null & echo $! >&2; exit 4"),
      { timeoutMs: 10_000 },
    );
    assert.ok(r.ok);
    const [err, sleep] = r.value.stderr.trim().split("\n");
    assert.deepEqual([r.value.code, r.value.stdout, err, r.value.timedOut], [4, "out\n", "err", false]);
    assert.equal(pidAlive(Number(sleep)), false, "the background sleep was stopped");
    assert.deepEqual(liveGroups(), []);
  });
});
