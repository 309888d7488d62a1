// The composition root (host/create.ts) on its own, with a real host, recorder and journal: what the extension gets
// from it (the host built on first use and once, what follows each host, the places for /code-status) and the order
// of its end (a new host after a shutdown, as after Pi's reload or session switch).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createSupervisorRoot, type SupervisorHost } from "../../host/index.ts";
import { agentDir } from "../../store/agent-dir.ts";
import { tempDir } from "../helpers/temp-dir.ts";

describe("composition root", () => {
  test("hands the agent directory down, builds the host on first use and once, and a new one after a shutdown", async () => {
    const dir = tempDir("pcs-root-");
    const built: SupervisorHost[] = [];
    const root = createSupervisorRoot({
      agentDir: () => join(dir, "agent"),
      journal: () => ({ path: "off" }),
      observability: { record: false, env: {} },
      hostOptions: () => ({ spareRunners: () => false, exec: { logDir: join(dir, "exec-logs") } }),
      onHost: (h) => built.push(h),
    });
    assert.equal(agentDir(), join(dir, "agent"));
    assert.equal(root.peekHost(), undefined, "nothing is built before it is used");
    assert.deepEqual(root.places(), { journal: undefined, eventLogDir: undefined, eventLog: undefined });
    const first = root.host();
    assert.equal(root.host(), first);
    assert.equal(root.peekHost(), first);
    assert.deepEqual(built, [first]);
    await root.shutdown();
    assert.equal(root.peekHost(), undefined);
    const second = root.host();
    assert.notEqual(second, first);
    assert.deepEqual(built, [first, second]);
    await root.shutdown();
  });

  test("each host is observed from its birth, its log named by the journal's places, and the journal ends last", async () => {
    const dir = tempDir("pcs-root-");
    const root = createSupervisorRoot({
      agentDir: () => join(dir, "agent"),
      journal: () => ({ path: join(dir, "journal.sqlite"), onNotice: (m) => assert.fail(m) }),
      observability: { record: { dir: join(dir, "logs") }, env: {} },
      hostOptions: () => ({ spareRunners: () => false, exec: { logDir: join(dir, "exec-logs") } }),
    });
    assert.equal(root.places().eventLogDir, join(dir, "logs"));
    root.host();
    const { journal, eventLog } = root.places();
    assert.equal(journal, join(dir, "journal.sqlite"));
    assert.ok(eventLog?.startsWith(join(dir, "logs")), `the new host's log: ${eventLog}`);
    assert.equal(root.journal.eventLog(), eventLog, "journal rows name the log being written");
    assert.ok(root.journal.get(), "the journal opens on use");
    await root.shutdown();
    assert.ok(existsSync(eventLog!));
    assert.match(readFileSync(eventLog!, "utf8"), /shutdown/, "the log got its last record");
    assert.equal(root.journal.get(), undefined, "the journal is closed");
  });
});
