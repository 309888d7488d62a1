// The inspector server's guarantees (loopback only, token in every URL, own Host/Origin only, read-only by
// default), its @statelyai/inspect-compatible frames read by a local WebSocket client, logs in the page model, the
// CLI's inspect command, and the online mode feeding @statelyai/inspect's own server.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { request } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import WebSocket from "ws";
import { SupervisorHost } from "../../host/host.ts";
import { SystemObserver } from "../../record/observe.ts";
import { isLoopback, startInspector, type Inspector } from "../../inspector/server.ts";
import { startStatelyLink } from "../../inspector/stately.ts";
import { applyFrame, createModel, modelAt, runTitle, stepsFromLog } from "../../inspector/page/model.js";
import { Recorder } from "../../record/recorder.ts";
import { actorKind } from "../../machines/actor-ids.ts";
import { parseLog } from "../../record/replay.ts";
import { readFileSync } from "node:fs";
import { tempDir } from "../helpers/temp-dir.ts";

let observer: SystemObserver;
let host: SupervisorHost;
let inspector: Inspector;
let recorder: Recorder;

before(async () => {
  observer = new SystemObserver();
  recorder = new Recorder(observer, { dir: tempDir("pcs-insp-log-") });
  host = new SupervisorHost(observer.hostOptions());
  const started = await startInspector({ observer });
  assert.ok(started.ok);
  inspector = started.value;
});
after(async () => {
  await host.shutdown();
  recorder.close();
  await inspector.close();
});

function get(
  path: string,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: inspector.port, path, method, headers }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Frames received on a WebSocket until `done` says enough (or the timeout). */
function collect(url: string, done: (frames: any[]) => boolean, options: WebSocket.ClientOptions = {}) {
  return new Promise<any[]>((resolve, reject) => {
    const frames: any[] = [];
    const ws = new WebSocket(url, options);
    const timer = setTimeout(() => {
      ws.close();
      resolve(frames);
    }, 10_000);
    ws.on("message", (m) => {
      frames.push(JSON.parse(String(m)));
      if (done(frames)) {
        clearTimeout(timer);
        ws.close();
        resolve(frames);
      }
    });
    ws.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

function checkFrameShape(f: any): void {
  assert.ok(["@xstate.actor", "@xstate.event", "@xstate.snapshot"].includes(f.type), f.type);
  assert.equal(f.rootId, "supervisor");
  assert.equal(f.id, null);
  assert.equal(typeof f._version, "string");
  assert.match(f.createdAt, /^\d{13}$/, "createdAt is milliseconds as a string");
  assert.equal(typeof f.sessionId, "string");
  assert.doesNotMatch(f.sessionId, /^x:\d+$/, "never XState's sessionId counter");
}

describe("binding and access", () => {
  test("only loopback addresses are accepted", async () => {
    for (const host of ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com"]) {
      const r = await startInspector({ host });
      assert.equal(r.ok, false, host);
      assert.match((r as { error: string }).error, /loopback/);
    }
    for (const h of ["127.0.0.1", "localhost", "::1", "[::1]", "127.3.4.5"]) assert.ok(isLoopback(h), h);
    const local = await startInspector({ host: "localhost" });
    assert.ok(local.ok);
    assert.match(local.value.url, /^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{43}\/$/, "URL with a 256-bit token");
    await local.value.close();
  });

  test("a configured port is used; a busy one is reported, not thrown", async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", () => r()));
    const busy = (probe.address() as { port: number }).port;
    const r = await startInspector({ port: busy });
    assert.equal(r.ok, false);
    assert.match((r as { error: string }).error, /EADDRINUSE/);
    probe.close();
  });

  test("every HTTP path needs the token", async () => {
    const t = inspector.token;
    assert.equal((await get("/")).status, 403);
    assert.equal((await get("/index.html")).status, 403);
    assert.equal((await get(`/${t.slice(0, -1)}x/`)).status, 403, "a wrong token");
    assert.equal((await get(`/${t.slice(0, -1)}/api/info`)).status, 403, "a truncated token");
    const page = await get(`/${t}/`);
    assert.equal(page.status, 200);
    assert.match(page.body, /<script type="module" src="app.js">/);
    assert.match(String(page.headers["content-security-policy"]), /default-src 'self'/);
    for (const asset of ["app.js", "model.js", "view.js", "style.css"]) {
      assert.equal((await get(`/${t}/${asset}`)).status, 200, asset);
    }
    assert.equal((await get(`/${t}/../server.ts`)).status, 404, "only the page's own files");
  });

  test("the page's actor ids are machines/actor-ids.ts itself, its types stripped, behind the token", async () => {
    const t = inspector.token;
    assert.equal((await get("/actor-ids.js")).status, 403);
    const served = await get(`/${t}/actor-ids.js`);
    assert.equal(served.status, 200);
    assert.match(String(served.headers["content-type"]), /^text\/javascript/);
    assert.doesNotMatch(served.body, /: string|ActorKind \|/, "no TypeScript left");
    const page = (await import(
      `data:text/javascript;base64,${Buffer.from(served.body).toString("base64")}`
    )) as typeof import("../../machines/actor-ids.ts");
    const ids = [
      "run:abc",
      "session:notebook",
      "session:n/runner",
      "spare:3",
      "tool:r:1",
      "exec:7",
      "wake:2",
      "supervisor",
      "x:y",
    ];
    assert.deepEqual(ids.map(page.actorKind), ids.map(actorKind));
    assert.deepEqual(ids.map(actorKind), [
      "run",
      "session",
      "session",
      "spare",
      "tool",
      "exec",
      "wake",
      undefined,
      undefined,
    ]);
  });

  test("the page's log decoder is record/log-codec.ts itself, its types stripped, and reads a log as replay does", async () => {
    const t = inspector.token;
    assert.equal((await get("/log-codec.js")).status, 403);
    const served = await get(`/${t}/log-codec.js`);
    assert.equal(served.status, 200);
    assert.doesNotMatch(served.body, /: string|private readonly/, "no TypeScript left");
    const page = (await import(
      `data:text/javascript;base64,${Buffer.from(served.body).toString("base64")}`
    )) as typeof import("../../record/log-codec.ts");
    const text = readFileSync(
      join(resolve(import.meta.dirname, "../.."), "test/fixtures/replay/nested-calls.jsonl"),
      "utf8",
    );
    const decoder = new page.LogDecoder();
    const decoded = text
      .split("\n")
      .filter(Boolean)
      .map((l) => decoder.decode(JSON.parse(l)));
    assert.deepEqual(
      decoded,
      parseLog(text).lines.map((l) => l.record),
    );
  });

  test("requests naming another host or origin are refused (DNS rebinding, cross-site)", async () => {
    const t = inspector.token;
    assert.equal((await get(`/${t}/`, { host: `evil.example:${inspector.port}` })).status, 421);
    assert.equal((await get(`/${t}/`, { host: `localhost:${inspector.port}` })).status, 200);
    const foreign = { origin: "http://evil.example" };
    assert.equal((await get(`/${t}/api/info`, foreign)).status, 421);
    await assert.rejects(
      collect(`ws://127.0.0.1:${inspector.port}/${t}/ws`, () => true, { headers: foreign }),
      /403/,
    );
  });

  test("the WebSocket needs the token too", async () => {
    await assert.rejects(
      collect(`ws://127.0.0.1:${inspector.port}/nope/ws`, () => true),
      /403/,
    );
    await assert.rejects(
      collect(`ws://127.0.0.1:${inspector.port}/ws`, () => true),
      /403/,
    );
  });

  test("read-only by default: the stop action is refused", async () => {
    await host.run({ code: "keep = 1", cwd: tmpdir(), timeoutMs: 10_000, session: "ro" });
    const info = JSON.parse((await get(`/${inspector.token}/api/info`)).body);
    assert.equal(info.readOnly, true);
    const r = await get(`/${inspector.token}/api/sessions/ro/stop`, {}, "POST");
    assert.equal(r.status, 403);
    assert.equal(host.sessions().find((s) => s.name === "ro")?.status, "alive");
  });

  test("with the action offered, a POST behind the token stops the session", async () => {
    const withActions = await startInspector({ observer, stopSession: (n) => host.stopSession(n) });
    assert.ok(withActions.ok);
    const r = await new Promise<number>((resolve) => {
      const req = request(
        {
          host: "127.0.0.1",
          port: withActions.value.port,
          path: `/${withActions.value.token}/api/sessions/ro/stop`,
          method: "POST",
        },
        (res) => resolve(res.statusCode!),
      );
      req.end();
    });
    assert.equal(r, 200);
    assert.equal(
      host.sessions().find((s) => s.name === "ro"),
      undefined,
    );
    await withActions.value.close();
  });
});

describe("@statelyai/inspect frames", () => {
  test("a local WebSocket client gets actor, event and snapshot frames with explicit ids", async () => {
    const url = `ws://127.0.0.1:${inspector.port}/${inspector.token}/ws`;
    // The history replays earlier runs too: wait for the end of this run, found by its code.
    const mine = (fs: any[]) => fs.find((f) => f.type === "@xstate.event" && f.event.code === "print('frames')");
    const pending = collect(url, (fs) =>
      fs.some(
        (f) =>
          f.type === "@xstate.snapshot" &&
          f.sessionId === `run:${mine(fs)?.event.runId}` &&
          f.snapshot.status === "done",
      ),
    );
    await new Promise((r) => setTimeout(r, 100));
    const result = await host.run({ code: "print('frames')", cwd: tmpdir(), timeoutMs: 10_000 });
    const frames = await pending;
    frames.forEach(checkFrameShape);
    const runId = `run:${result.outcome.runId}`;
    const actor = frames.find((f) => f.type === "@xstate.actor" && f.sessionId === runId);
    assert.ok(actor, "the run's @xstate.actor frame");
    assert.equal(actor.parentId, "supervisor");
    assert.equal(actor.name, runId);
    assert.ok(JSON.parse(actor.definition).states.running, "definition is the machine config as JSON");
    const runner = frames.find((f) => f.type === "@xstate.actor" && f.sessionId === `${runId}/runner`);
    assert.equal(runner?.parentId, runId);
    const start = mine(frames);
    assert.equal(start.sessionId, "supervisor");
    assert.equal(start.sourceId, undefined, "a command comes from outside");
    const ready = frames.find(
      (f) => f.type === "@xstate.event" && f.event.type === "runner.ready" && f.sessionId === runId,
    );
    assert.equal(ready.sessionId, runId);
    assert.equal(ready.sourceId, `${runId}/runner`);
    const states = frames
      .filter((f) => f.type === "@xstate.snapshot" && f.sessionId === runId)
      .map((f) => f.snapshot.value);
    assert.deepEqual(
      [...new Set(states)],
      ["starting", "running", "finished", "success"].filter((s) => states.includes(s)),
    );
    const final = frames.findLast((f) => f.type === "@xstate.snapshot" && f.sessionId === runId);
    assert.equal(final.snapshot.status, "done");
    assert.equal(final.snapshot.context.outcome.status, "success");
    assert.equal(final.event.type, "runner.done");
    const sup = frames.find(
      (f) => f.type === "@xstate.snapshot" && f.sessionId === "supervisor" && f.snapshot.children[runId],
    );
    assert.deepEqual(sup.snapshot.children[runId], { id: runId, xstate$$type: 1 });
  });

  test("a client that connects late gets the history and the live tree, and a page model rebuilds it", async () => {
    await host.run({ code: "s = 1", cwd: tmpdir(), timeoutMs: 10_000, session: "late" });
    const frames = await collect(`ws://127.0.0.1:${inspector.port}/${inspector.token}/ws`, (fs) =>
      fs.some((f) => f.type === "@xstate.snapshot" && f.sessionId === "session:late" && f.snapshot.value === "idle"),
    );
    const model = createModel();
    for (const f of frames) applyFrame(model, f);
    assert.equal(model.actors.get("supervisor")?.label, "serving.idle");
    assert.equal(model.actors.get("session:late")?.label, "idle");
    assert.equal(model.actors.get("session:late")?.parentId, "supervisor");
  });
});

describe("run titles", () => {
  test("a run reads as its surface and first line; a batch run says how many cells it has besides", () => {
    const run = (context: object) => runTitle({ id: "run:abc", context });
    assert.equal(run({ code: "\nx = 1\ny = 2", surface: "python" }), "python: x = 1");
    assert.equal(
      run({
        code: "x = 1",
        surface: "python",
        batch: [
          { code: "2", filename: "cell-2.py" },
          { code: "3", filename: "cell-3.py" },
        ],
      }),
      "python: x = 1 (+2 cells)",
    );
    assert.equal(run({ code: "1", surface: "eval", language: "js", batch: [] }), "eval js: 1");
    assert.equal(runTitle({ id: "session:nb", context: { code: "1" } }), undefined);
  });
});

describe("recorded logs in the page model", () => {
  test("a log converts to the same tree, states and contexts as the live frames", async () => {
    await host.run({ code: "both = 1", cwd: tmpdir(), timeoutMs: 10_000, session: "same" });
    await host.run({ code: "both += 1", cwd: tmpdir(), timeoutMs: 10_000, session: "same" });
    // Both runs are over before the page connects: the history holds both ends (session:same back to idle twice).
    const frames = await collect(
      `ws://127.0.0.1:${inspector.port}/${inspector.token}/ws`,
      (fs) =>
        fs.filter(
          (f) =>
            f.type === "@xstate.snapshot" &&
            f.sessionId === "session:same" &&
            String(f.event.type).startsWith("xstate.done.actor.run:"),
        ).length === 2,
    );
    const live = createModel();
    for (const f of frames) applyFrame(live, f);
    recorder.flush();
    const text = readFileSync(recorder.path, "utf8");
    // The log points at values it already holds (format v3): the page reads them back.
    for (const ref of ['"same":true', '"base":"input"', '"output":"outcome"']) assert.ok(text.includes(ref), ref);
    const { steps, error } = stepsFromLog(text);
    assert.equal(error, undefined);
    const logged = modelAt(steps, steps.length);
    const compared = [...live.actors.keys()].filter((id) => id.includes("same") || id.startsWith("run:"));
    assert.ok(compared.length >= 5, "the session, its runner, two runs and their runners");
    for (const id of compared) {
      const a = live.actors.get(id)!;
      const b = logged.actors.get(id);
      assert.ok(b, `${id} is in the log`);
      assert.equal(b.label, a.label, id);
      assert.equal(b.status, a.status, id);
      assert.equal(b.parentId, a.parentId, id);
      assert.deepEqual(b.context, a.context, `${id}: context rebuilt from deltas`);
      assert.deepEqual(
        b.history.map((h) => h.label),
        a.history.map((h) => h.label),
        `${id}: the same state sequence`,
      );
    }
  });
});

describe("the CLI's inspect command", () => {
  test("serves a recorded log without Pi, until stopped", async () => {
    const root = resolve(import.meta.dirname, "../..");
    const log = join(root, "test/fixtures/replay/reset.jsonl");
    const child = spawn(process.execPath, [join(root, "bin/pi-code-supervisor.js"), "inspect", log], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
        const m = /Inspector: (\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
      child.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const info = (await fetch(`${url}api/info`).then((r) => r.json())) as { live: boolean; log: string };
    assert.equal(info.live, false);
    assert.equal(info.log, log);
    assert.equal(await fetch(`${url}api/log`).then((r) => r.text()), readFileSync(log, "utf8"));
    assert.equal((await fetch(url.replace(/\/[^/]+\/$/, "/x/"))).status, 403);
    const exited = new Promise<number | null>((r) => child.once("exit", r));
    child.kill("SIGTERM");
    assert.equal(await exited, 0);
  });
});

describe("online mode: @statelyai/inspect's own inspector server", () => {
  test("the same frames reach a client of the Stately relay, and its page embeds the Stately Inspector", async () => {
    const port = await new Promise<number>((r) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => r(p));
      });
    });
    const bridge = await startStatelyLink({ observer, port });
    assert.ok(bridge.ok, !bridge.ok ? bridge.error : "");
    assert.match(bridge.value.warning!, /all network interfaces/);
    const page = await new Promise<string>((resolve) => {
      request({ host: "127.0.0.1", port, path: "/" }, (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve(body));
      }).end();
    });
    assert.match(page, /https:\/\/stately\.ai\/inspect/);
    // The Stately page is a second client of the relay: it receives what the bridge sends.
    const received = collect(`ws://127.0.0.1:${port}`, (fs) =>
      fs.some((f) => f.type === "@xstate.snapshot" && f.sessionId.startsWith("run:") && f.snapshot.status === "done"),
    );
    await new Promise((r) => setTimeout(r, 100));
    await host.run({ code: "1", cwd: tmpdir(), timeoutMs: 10_000 });
    const frames = await received;
    frames.forEach(checkFrameShape);
    assert.ok(
      frames.some((f) => f.type === "@xstate.actor" && f.sessionId === "supervisor"),
      "the tree came first",
    );
    assert.ok(frames.some((f) => f.type === "@xstate.event" && f.event.type === "run.start"));
    await bridge.value.close();
    const busy = await startStatelyLink({ observer, port: inspector.port });
    assert.equal(busy.ok, false, "a busy port is an error, not a crash");
  });
});
