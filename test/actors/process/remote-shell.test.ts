// Shell sessions on the remote backend, through a real OpenSSH server on a loopback port: the command runs on the
// far side in the mapped `remote.cwd` (not Pi's cwd, not as Pi's child), stdin and a PTY work, and nothing of a
// session is left on the far side after kill_session, a dropped connection or the host's shutdown (checked in the
// process table by a marker argument). The login here is slow (root's .bashrc runs `pyenv init` for every ssh
// command, seconds on a loaded machine), so windows are long and a live session is waited for in the process table.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { execDriver } from "../../helpers/exec-driver.ts";
import { SupervisorHost } from "../../../host/host.ts";
import { remoteOperations } from "../../../actors/process/remote.ts";
import { startSshd, type TestSshd } from "../../helpers/sshd.ts";
import { parentOf, processesMatching, waitUntil } from "../../helpers/procs.ts";
import { PYTHON } from "../../helpers/pythons.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

let sshd: TestSshd;
let local: string;
let remoteDir: string;
let host: SupervisorHost;
const { start, write, callId } = execDriver(() => host, {
  cwd: () => local,
  cols: 100,
  yieldMs: 30_000,
  durationMs: 20_000,
  callPrefix: "remote-call",
});
const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");
let marks = 0;
const marker = () => `pcs-remote-mark-${process.pid}-${++marks}`;

before(async () => {
  sshd = await startSshd();
  local = tempDir("pcs-rsh-local-");
  remoteDir = tempDir("pcs-rsh-remote-");
  host = new SupervisorHost({
    ops: remoteOperations({ remote: sshd.remote({ cwd: remoteDir, python: PYTHON }), localRoot: local }),
    exec: { logDir: join(local, "..", `${local.split("/").pop()}-logs`) },
    spareRunners: () => false,
  });
});
after(async () => {
  await host?.shutdown();
  await sshd?.stop();
  rmSync(local, { recursive: true, force: true });
  rmSync(remoteDir, { recursive: true, force: true });
});

/** Starts `command` (which carries `marker`) as a session and waits until it runs on the far side. */
async function live(
  command: string,
  marker: string,
  more: Partial<Parameters<SupervisorHost["exec"]["start"]>[0]> = {},
) {
  const s = await start(command, { yieldMs: 250, ...more });
  assert.equal(s.running, true, text(s.output));
  assert.ok(await waitUntil(() => remoteMatching(marker).length > 0, 30_000), "it runs on the far side");
  return s;
}

/** Whether `pid` descends from `root`. */
function under(pid: number, root: number): boolean {
  for (let p = pid; p > 1; p = parentOf(p)) if (p === root) return true;
  return false;
}

/** The far side's processes carrying `marker`: those the test's sshd started (the local ssh client carries the
 * marker in its command line too). */
function remoteMatching(marker: string): number[] {
  return processesMatching(marker).filter((pid) => under(pid, sshd.proc.pid!));
}

/** Pi's own descendants carrying `marker` (the sshd started here aside): a shell run locally would be one. */
function localMatching(marker: string): number[] {
  return processesMatching(marker).filter((pid) => under(pid, process.pid) && !under(pid, sshd.proc.pid!));
}

describe("remote shells over a real sshd", () => {
  test("exec_command runs on the far side, in remote.cwd, not as Pi's child", async () => {
    const r = await start("pwd; echo $PPID");
    assert.equal(r.running, false);
    assert.equal(r.end?.code, 0, text(r.output));
    const [pwd, ppid] = text(r.output).trim().split("\n");
    assert.equal(pwd, remoteDir, "the mapped remote directory, not Pi's");
    assert.notEqual(pwd, local);
    assert.ok(Number(ppid) > 0);
    const m = marker();
    const s = await live(`sleep 30; : ${m}`, m);
    // The shell is the wrapper's child (other processes of the login may carry the marker for a moment).
    const comm = (pid: number) => readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    const shells = () => remoteMatching(m).filter((pid) => comm(pid) === "bash" && comm(parentOf(pid)) === "python3");
    assert.ok(await waitUntil(() => shells().length === 1, 10_000));
    const [shell] = shells();
    assert.ok(shell, "the remote shell is in the process table");
    assert.equal(readlinkSync(`/proc/${shell}/cwd`), remoteDir);
    // Of Pi's descendants only the transport carries the command: no shell ran here.
    const mine = localMatching(m);
    assert.deepEqual(
      mine.map((pid) => readFileSync(`/proc/${pid}/comm`, "utf8").trim()),
      mine.map(() => "ssh"),
    );
    await host.exec.kill(s.id, "SIGKILL", callId());
  });

  test("exit codes and signals come back as the remote program's", async () => {
    const r = await start("exit 7");
    assert.equal(r.end?.code, 7);
    const k = await start("kill -TERM $$");
    assert.equal(k.end?.signal, "SIGTERM");
  });

  test("write_stdin to a remote cat echoes", async () => {
    const m = marker();
    const s = await live(`cat; : ${m}`, m);
    const p = await write(s.id, { bytes: Buffer.from("hello remote\n"), until: "answer" });
    assert.equal(text(p.output), "hello remote\n");
    await host.exec.kill(s.id, "SIGTERM", callId());
  });

  test("a PTY session: the program sees a terminal, input is echoed and answered, ^C interrupts", async () => {
    const m = marker();
    const s = await live(`${PYTHON} -q -c 'import code; code.interact(banner="", exitmsg="")' ${m}`, m, {
      tty: true,
    });
    // The prompt may already be in the start's own window (a fast login), or come in a later poll.
    let seen = text(s.output);
    for (let i = 0; i < 40 && !seen.includes(">>>"); i++) seen += text((await write(s.id, { durationMs: 500 })).output);
    assert.match(seen, />>>/, "the prompt");
    const a = await write(s.id, { bytes: Buffer.from("import os; print(os.isatty(0), 6*7)\r"), until: "answer" });
    let out = text(a.output);
    for (let i = 0; i < 20 && !/True 42/.test(out); i++) out += text((await write(s.id, { durationMs: 500 })).output);
    assert.match(out, /True 42/);
    const b = await write(s.id, { bytes: Buffer.from("import time; time.sleep(30)\r"), durationMs: 1000 });
    assert.equal(b.running, true);
    const c = await write(s.id, { bytes: Buffer.from([3]), durationMs: 3000 });
    assert.match(text(c.output), /KeyboardInterrupt/);
    const d = await write(s.id, { bytes: Buffer.from([4]), durationMs: 20_000 });
    assert.equal(d.running, false, "^D ends the REPL");
  });

  test("kill_session leaves nothing on the far side, not even a child that ignores SIGTERM", async () => {
    const m = marker();
    const s = await live(`sh -c 'trap "" TERM; sleep 60; : ${m}-1' & sh -c 'sleep 60; : ${m}-2'`, `${m}-2`);
    assert.ok(await waitUntil(() => remoteMatching(`${m}-1`).length >= 2, 10_000), "both remote children run");
    const k = await host.exec.kill(s.id, "SIGTERM", callId());
    assert.equal(k?.killed, true, k?.failure);
    assert.ok(await waitUntil(() => remoteMatching(m).length === 0, 10_000), `left: ${remoteMatching(m)}`);
  });

  test("a dropped connection kills the remote group, even one that ignores SIGHUP and SIGTERM", async () => {
    const m = marker();
    const s = await live(`trap "" HUP TERM; sleep 60; : ${m}`, m);
    // The far side's end of the connection goes (sshd's connection processes die): the wrapper's stdin ends.
    for (const pid of sshd.connectionPids()) process.kill(pid, "SIGKILL");
    assert.ok(await waitUntil(() => remoteMatching(m).length === 0, 10_000), `left: ${remoteMatching(m)}`);
    const p = await write(s.id);
    assert.equal(p.running, false);
  });

  test("a dropped PTY connection hangs up the remote group, even one that ignores SIGHUP", async () => {
    const m = marker();
    const s = await live(`trap "" HUP; sleep 60; : ${m}`, m, { tty: true });
    for (const pid of sshd.connectionPids()) process.kill(pid, "SIGKILL");
    assert.ok(await waitUntil(() => remoteMatching(m).length === 0, 10_000), `left: ${remoteMatching(m)}`);
    assert.equal((await write(s.id)).running, false);
  });

  test("the host's shutdown leaves nothing of any session on the far side", async () => {
    const h = new SupervisorHost({
      ops: remoteOperations({ remote: sshd.remote({ cwd: remoteDir, python: PYTHON }), localRoot: local }),
      exec: { logDir: join(local, "..", `${local.split("/").pop()}-logs2`) },
      spareRunners: () => false,
    });
    const m = marker();
    const go = (command: string, tty = false) =>
      h.exec.start({ command, cwd: local, tty, cols: 80, rows: 24, yieldMs: 250, onExit: "none", callId: callId() });
    const rs = await Promise.all([
      go(`sleep 60; : ${m}-a`),
      go(`trap "" TERM; sleep 60; : ${m}-b`),
      go(`sleep 60; : ${m}-c`, true),
      go(`sleep 60 & sleep 60; : ${m}-d`),
    ]);
    assert.ok(rs.every((r) => r.ok && r.value.running));
    assert.ok(await waitUntil(() => ["a", "b", "c", "d"].every((x) => remoteMatching(`${m}-${x}`).length > 0), 30_000));
    await h.shutdown();
    assert.ok(await waitUntil(() => remoteMatching(m).length === 0, 10_000), `left: ${remoteMatching(m)}`);
  });

  test("a workdir outside Pi's working directory is refused: no remote directory maps to it", async () => {
    const r = await host.exec.start({
      command: "pwd",
      cwd: tmpdir(),
      tty: false,
      cols: 80,
      rows: 24,
      yieldMs: 2000,
      onExit: "none",
      callId: callId(),
    });
    assert.ok(r.ok, "the session starts and fails");
    assert.match(r.value.end?.failure ?? JSON.stringify(r.value), /outside Pi's working directory/);
  });
});
