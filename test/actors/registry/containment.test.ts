// Children that leave the runner's process group (issue 19): through real Pi sessions and real processes, each
// escape dies with its fresh run, a session's with its reset, close, loss and Pi's shutdown, and nothing a runner
// started outlives Pi, even when Pi exits without shutting down. Where cgroup v2 is writable (here: as root) even
// a `setsid()` child is contained; with session tracking (forced by PI_CODE_EXECUTION_CONTAINMENT=session, or
// where cgroups are unavailable) it escapes, as the README says. Last, the registry's wait for a group's end
// (`whenEmpty`), which a killed shell session waits on.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CONTAINMENT_ENV, contain, containmentMode } from "../../../actors/registry/containment.ts";
import { killGroup, track, unregisterGroup, whenEmpty } from "../../../actors/registry/registry.ts";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import {
  cgroupDir,
  cgroupPeers,
  parentOf,
  pidAlive,
  processesMatching,
  sessionMembers,
  waitUntil,
} from "../../helpers/procs.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

/** Starts every kind of escape and prints, as JSON, the runner's pid and each escape's [pid, pgid, sid]. Each
 * child reports only once it has moved, so the run cannot end before the escape happened. */
const ESCAPES = String.raw`import json, os, subprocess, sys, tempfile
def moved(code, **kw):
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, **kw)
    return int(p.stdout.readline())
found = {}
found["process_group=0"] = subprocess.Popen(["sleep", "600"], process_group=0).pid
f = tempfile.mktemp()
subprocess.run(["bash", "-c", f"set -m; sleep 600 & echo $! > {f}"], check=True)
found["set -m"] = int(open(f).read())
found["setpgrp"] = moved("import os, time\nos.setpgrp()\nprint(os.getpid(), flush=True)\ntime.sleep(600)")
found["double fork"] = moved(
    "import os, time\nos.setpgrp()\nif os.fork(): os._exit(0)\nif os.fork(): os._exit(0)\n"
    "print(os.getpid(), flush=True)\ntime.sleep(600)")
found["setsid"] = subprocess.Popen(["sleep", "600"], start_new_session=True).pid
print(json.dumps({"runner": os.getpid(), "escapes": {k: [p, os.getpgid(p), os.getsid(p)] for k, p in found.items()}}))`;

interface Escapes {
  runner: number;
  escapes: Record<string, [number, number, number]>;
}

function parseEscapes(text: string): Escapes {
  const line = text.split("\n").find((l) => l.startsWith("{"));
  assert.ok(line, `the escapes were printed: ${text}`);
  const found = JSON.parse(line) as Escapes;
  for (const [name, [pid, pgid, sid]] of Object.entries(found.escapes)) {
    assert.notEqual(pgid, found.runner, `${name} left the runner's process group (pid ${pid})`);
    if (name === "setsid") assert.notEqual(sid, found.runner, "setsid left the runner's session");
    else assert.equal(sid, found.runner, `${name} stays in the runner's session`);
  }
  return found;
}

/** Asserts each escape dies (setsid only where cgroups apply), then kills whatever the test itself must clean. */
async function assertAllDie(found: Escapes, what: string, cgroup: boolean) {
  for (const [name, [pid]] of Object.entries(found.escapes)) {
    if (name === "setsid" && !cgroup) continue;
    assert.ok(await waitUntil(() => !pidAlive(pid), 5000), `${name} (pid ${pid}) died with ${what}`);
  }
  const [setsid] = found.escapes.setsid;
  if (!cgroup) {
    assert.ok(pidAlive(setsid), "without cgroups a setsid() child escapes (the documented limit)");
    process.kill(setsid, "SIGKILL");
  }
}

/** A child in its own group that ignores SIGTERM outlives it by the kill grace (500 ms), then gets SIGKILL. */
async function stubborn(pi: PiHarness) {
  const marks = tempDir("pcs-term-");
  const [r] = await pi.callTools([
    {
      code: String.raw`import subprocess, sys
code = """import os, signal, sys, time
def note(*_):
    open(sys.argv[1] + '/term', 'w').write(repr(time.time()))
signal.signal(signal.SIGTERM, note)
print(os.getpid(), flush=True)
while True:
    time.sleep(1)
"""
p = subprocess.Popen([sys.executable, "-c", code, ${JSON.stringify(marks)}], stdout=subprocess.PIPE, process_group=0)
print(int(p.stdout.readline()))`,
    },
  ]);
  const pid = Number(textOf(r).trim().split("\n")[0]);
  assert.ok(pid > 0, textOf(r));
  assert.ok(await waitUntil(() => !pidAlive(pid), 5000), "the stubborn child died");
  const died = Date.now();
  const termed = Number(readFileSync(join(marks, "term"), "utf8")) * 1000;
  // `termed` is when the child's handler ran, which a loaded machine delays past the SIGTERM (by 125 ms once in
  // CI), so only part of the 500 ms grace is seen from here: long enough to show that the SIGKILL did not come with
  // the SIGTERM, nor soon after it.
  assert.ok(died - termed >= 250, `it outlived its SIGTERM (handled ${died - termed} ms before it died)`);
}

const settle = () => new Promise((r) => setTimeout(r, 300));

describe(`fresh runs through Pi (${containmentMode().kind} tracking here${containmentMode().reason ? `: ${containmentMode().reason}` : ""})`, () => {
  let pi: PiHarness;
  before(async () => {
    pi = await startPi();
  });
  after(async () => {
    await pi.dispose();
  });

  test("every escape from the process group dies with its fresh run", async () => {
    const [r] = await pi.callTools([{ code: ESCAPES }]);
    assert.equal(r.isError, false, textOf(r));
    await assertAllDie(parseEscapes(textOf(r)), "its fresh run", containmentMode().kind === "cgroup");
  });

  test("a child ignoring SIGTERM in its own group gets SIGKILL after the kill grace (500 ms)", () => stubborn(pi));
});

describe("fresh runs through Pi with session tracking (cgroups off)", () => {
  let pi: PiHarness;
  before(async () => {
    process.env[CONTAINMENT_ENV] = "session";
    pi = await startPi();
  });
  after(async () => {
    await pi.dispose();
    delete process.env[CONTAINMENT_ENV];
  });

  test("every escape that stays in the runner's session dies with its fresh run; setsid() escapes", async () => {
    const [r] = await pi.callTools([{ code: ESCAPES }]);
    assert.equal(r.isError, false, textOf(r));
    await assertAllDie(parseEscapes(textOf(r)), "its fresh run", false);
  });

  test("a child ignoring SIGTERM in its own group gets SIGKILL after the kill grace (500 ms)", () => stubborn(pi));
});

describe("a session's children through Pi", () => {
  let pi: PiHarness;
  const cgroup = containmentMode().kind === "cgroup";
  before(async () => {
    pi = await startPi();
  });
  after(async () => {
    await pi.dispose();
  });

  const escapeIn = async (session: string) => {
    const [r] = await pi.callTools([{ code: ESCAPES, session }]);
    assert.equal(r.isError, false, textOf(r));
    const found = parseEscapes(textOf(r));
    await settle();
    for (const [name, [pid]] of Object.entries(found.escapes))
      assert.ok(pidAlive(pid), `${name} lives with its session`);
    return found;
  };

  test("they die when the session is reset", async () => {
    const found = await escapeIn("r");
    const [r] = await pi.callTools([{ code: "'fresh'", session: "r", reset: true }]);
    assert.match(textOf(r), /fresh/);
    await assertAllDie(found, "the reset", cgroup);
  });

  test("they die when the session is closed (/code-sessions)", async () => {
    const found = await escapeIn("c");
    await pi.session.prompt("/code-sessions c");
    await assertAllDie(found, "the close", cgroup);
  });

  test("they die when the session is lost (its runner killed)", async () => {
    const found = await escapeIn("l");
    process.kill(found.runner, "SIGKILL");
    await assertAllDie(found, "the lost session", cgroup);
  });

  test("a session run that times out kills its children with the session", async () => {
    const found = await escapeIn("t");
    const [r] = await pi.callTools([
      {
        code: "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)",
        session: "t",
        timeout: 1,
      },
    ]);
    assert.match(textOf(r), /timed out|timeout/i);
    await assertAllDie(found, "the session killed at its deadline", cgroup);
  });
});

describe("Pi's shutdown", () => {
  test("no descendant of any runner remains: sessions, a fresh run in flight and the spare", async (t) => {
    const pi = await startPi();
    let disposed = false;
    t.after(() => (disposed ? undefined : pi.dispose()));
    const cgroup = containmentMode().kind === "cgroup";
    const [a, b] = await pi.callTools([
      { code: ESCAPES, session: "one" },
      { code: ESCAPES, session: "two" },
    ]);
    const found = [parseEscapes(textOf(a)), parseEscapes(textOf(b))];
    // A fresh run still running when Pi shuts down, with its own escapes.
    const steps = pi.callTools([{ code: `${ESCAPES}\nimport time\ntime.sleep(60)` }]);
    // The runners are this process's children running runner.py (Pi loads the extension as its own module copy, so
    // they are found in /proc, independently of the supervisor).
    const runners = () => processesMatching("runtime-py/runner.py").filter((pid) => parentOf(pid) === process.pid);
    assert.ok(await waitUntil(() => runners().length >= 4, 5000), "two sessions, the fresh run and the spare run");
    await settle();
    // Every descendant of every runner: each leader's session members and its cgroup's members (every process a
    // runner started is in one or the other, setsid() aside).
    const leaders = runners();
    const descendants = new Set(leaders.flatMap((pid) => [...sessionMembers(pid), ...cgroupPeers(pid)]));
    for (const f of found)
      for (const [name, [pid]] of Object.entries(f.escapes)) if (name !== "setsid" || cgroup) descendants.add(pid);
    assert.ok(descendants.size >= leaders.length + 8, `found the descendants (${descendants.size})`);
    disposed = true;
    await pi.dispose();
    await steps.catch(() => undefined);
    for (const pid of descendants) assert.ok(await waitUntil(() => !pidAlive(pid), 5000), `pid ${pid} died with Pi`);
    if (!cgroup) for (const f of found) process.kill(f.escapes.setsid[0], "SIGKILL");
  });

  for (const forced of [false, true])
    test(`Pi exiting without a shutdown: the exit handler kills every runner's descendants${forced ? " (session tracking)" : ""}`, async () => {
      const host = new URL("../../../host/host.ts", import.meta.url).pathname;
      const script = `import { SupervisorHost } from ${JSON.stringify(host)};
const h = new SupervisorHost();
const r = await h.run({ code: ${JSON.stringify(ESCAPES)}, cwd: process.cwd(), timeoutMs: 30000, session: "s" });
console.log(r.stdout.trim());
process.exit(0);`;
      const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
        stdio: ["ignore", "pipe", "inherit"],
        env: { ...process.env, ...(forced ? { [CONTAINMENT_ENV]: "session" } : {}) },
      });
      let out = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString()));
      const code = await new Promise((r) => child.once("exit", r));
      assert.equal(code, 0);
      const found = parseEscapes(out);
      await assertAllDie(found, "Pi's exit", !forced && containmentMode().kind === "cgroup");
      assert.ok(!pidAlive(found.runner), "the runner died too");
    });
});

/** The cgroup v2 path of a live process ("/" is the root cgroup). */
function cgroupOf(pid: number): string {
  return /^0::(.*)$/m.exec(readFileSync(`/proc/${pid}/cgroup`, "utf8"))?.[1] ?? "";
}

describe("shells (exec_command) start inside their cgroup", () => {
  // The daemon is the command's first action, so a shell moved into its cgroup only after it started would have
  // forked it outside (the audit's `setsid sleep 600 &` left in the root cgroup, outliving Pi's quit).
  const DAEMON = "setsid sleep 600 >/dev/null 2>&1 < /dev/null & echo $!";

  test("a setsid daemon started first thing is in the shell's cgroup and dies when Pi quits", async (t) => {
    if (containmentMode().kind !== "cgroup") return t.skip(`no cgroups here: ${containmentMode().reason}`);
    process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,exec";
    const pi = await startPi();
    delete process.env.PI_CODE_EXECUTION_TOOLS;
    let disposed = false;
    t.after(() => (disposed ? undefined : pi.dispose()));
    pi.faux.setResponses([
      fauxAssistantMessage([fauxToolCall("exec_command", { cmd: DAEMON })], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ]);
    await pi.session.prompt("go");
    const [r] = pi.toolResults().slice(-1);
    const daemon = Number(textOf(r).split("\n---\n")[1]?.trim());
    assert.ok(daemon > 0 && pidAlive(daemon), textOf(r));
    // `setsid` runs in the background job after `$!` was printed: the result can come first.
    assert.ok(
      await waitUntil(() => !sessionMembers(r.details.pid).includes(daemon), 3000),
      "it left the shell's session",
    );
    const where = cgroupOf(daemon);
    assert.match(where, /\/pi-code-supervisor\.\d+\/c\d+$/, `the daemon is in a shell's cgroup, not ${where}`);
    disposed = true;
    await pi.dispose();
    assert.ok(await waitUntil(() => !pidAlive(daemon), 3000), `the daemon (pid ${daemon}) died with Pi`);
  });

  test("a background process that outlives its command: the shell's cgroup goes when it ends, not when Pi quits", async (t) => {
    if (containmentMode().kind !== "cgroup") return t.skip(`no cgroups here: ${containmentMode().reason}`);
    process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,exec";
    const pi = await startPi();
    delete process.env.PI_CODE_EXECUTION_TOOLS;
    t.after(() => pi.dispose());
    pi.faux.setResponses([
      fauxAssistantMessage(
        [fauxToolCall("exec_command", { cmd: "setsid sleep 1.5 >/dev/null 2>&1 < /dev/null & echo $!" })],
        {
          stopReason: "toolUse",
        },
      ),
      fauxAssistantMessage("done"),
    ]);
    await pi.session.prompt("go");
    const [r] = pi.toolResults().slice(-1);
    const daemon = Number(textOf(r).split("\n---\n")[1]?.trim());
    assert.ok(daemon > 0, textOf(r));
    // The shell has exited; its background `sleep` keeps the group (and its cgroup) alive.
    assert.match(cgroupOf(daemon), /\/c\d+$/, "the sleep is in the shell's cgroup");
    const dir = cgroupDir(daemon)!;
    assert.ok(existsSync(dir), `control: ${dir} is there while the sleep lives`);
    assert.ok(await waitUntil(() => !pidAlive(daemon), 5000), "the sleep ended");
    assert.ok(await waitUntil(() => !existsSync(dir), 10_000), `${dir} was removed while Pi still runs`);
  });

  test("Pi exiting without a shutdown: the exit handler kills a shell's setsid daemon", async (t) => {
    if (containmentMode().kind !== "cgroup") return t.skip(`no cgroups here: ${containmentMode().reason}`);
    const host = new URL("../../../host/host.ts", import.meta.url).pathname;
    const logDir = tempDir("pcs-exec-logs-");
    const script = `import { SupervisorHost } from ${JSON.stringify(host)};
const h = new SupervisorHost({ exec: { logDir: ${JSON.stringify(logDir)} } });
const r = await h.exec.start({ command: ${JSON.stringify(DAEMON)}, cwd: process.cwd(), tty: false, cols: 80, rows: 24,
  yieldMs: 5000, onExit: "none", callId: "c" });
console.log(Buffer.from(r.value.output).toString().trim());
process.exit(0);`;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    const code = await new Promise((r) => child.once("exit", r));
    assert.equal(code, 0);
    const daemon = Number(out.trim());
    assert.ok(daemon > 0, out);
    assert.ok(await waitUntil(() => !pidAlive(daemon), 3000), `the daemon (pid ${daemon}) died with Pi's exit`);
  });
});

describe("a cgroup let go while a member is still exiting", () => {
  // unregisterGroup removes the cgroup off the event loop; rmdir fails with EBUSY while anything is inside, and a
  // single try left empty directories behind until Pi quit (about one a minute under bench/soak.ts).
  test("is removed once the member is gone, not left behind", async (t) => {
    if (containmentMode().kind !== "cgroup") return t.skip(`no cgroup tracking here: ${containmentMode().reason}`);
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    const box = await contain(child.pid!);
    assert.ok(box, "the child was moved into a cgroup of its own");
    const dir = cgroupDir(child.pid!);
    assert.ok(dir && existsSync(dir), `the child's cgroup: ${dir}`);
    const released = box.releaseLater();
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(existsSync(dir), "control: busy while its member lives");
    child.kill("SIGKILL");
    // The retries hold nothing of the event loop (in Pi, Pi does); here the test holds it.
    const hold = setInterval(() => {}, 1000);
    try {
      assert.equal(await released, true);
    } finally {
      clearInterval(hold);
    }
    assert.equal(existsSync(dir), false, `${dir} is gone`);
  });
});

describe("whenEmpty: waiting for a group's end", () => {
  // A killed shell's session waits on this (actors/shell/shell-actor.ts); so does the registry's own let-go.
  test("called once no member is left, not before; a waiter that joins late looks at once for every waiter", async () => {
    const leader = spawn("sh", ["-c", "sleep 30 & exec sleep 30"], { stdio: "ignore", detached: true });
    await track(leader.pid!, true);
    const hold = setInterval(() => {}, 1000);
    try {
      assert.ok(await waitUntil(() => sessionMembers(leader.pid!).length === 2, 5000), "the leader and its sleep");
      let first = 0;
      whenEmpty(leader.pid!, () => (first += 1));
      // Long enough for the series of looks to back off to 1.6 s between looks.
      await new Promise((r) => setTimeout(r, 1600));
      assert.equal(first, 0, "control: not while members live");
      killGroup(leader.pid!, "SIGKILL");
      assert.ok(await waitUntil(() => sessionMembers(leader.pid!).length === 0, 5000), "the members died");
      let second = 0;
      whenEmpty(leader.pid!, () => (second += 1));
      assert.deepEqual([first, second], [1, 1], "the late waiter's look found it empty for both, at once");
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual([first, second], [1, 1], "each is called once");
    } finally {
      clearInterval(hold);
      unregisterGroup(leader.pid!);
    }
  });

  test("a group not tracked (let go, or never known) has nothing left here: called at once", () => {
    let called = false;
    whenEmpty(2 ** 22 + 12345, () => (called = true));
    assert.equal(called, true);
  });
});
