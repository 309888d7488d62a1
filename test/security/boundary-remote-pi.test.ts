// The boundary through a real Pi session on the remote backend (a loopback sshd): every surface runs on the remote
// side (it descends from the sshd, in remote.cwd, without Pi's environment); JavaScript cells are refused, never
// run elsewhere.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { textOf, type PiHarness } from "../helpers/pi-session.ts";
import { startSshd, type TestSshd } from "../helpers/sshd.ts";
import { boundaryFixtures, clearEnv, root, session, turn } from "../helpers/boundary.ts";
import { PYTHON } from "../helpers/pythons.ts";
import { tempDir } from "../helpers/temp-dir.ts";

boundaryFixtures();

describe("remote: every surface runs on the remote side", () => {
  let sshd: TestSshd;
  let pi: PiHarness;
  let remoteDir: string;
  const env = { PI_CODE_EXECUTION_BACKEND: "remote" };
  before(async () => {
    sshd = await startSshd();
    remoteDir = tempDir("remote-cwd-", root);
    const agentDir = tempDir("agent-", root);
    mkdirSync(join(agentDir, "pi-code-execution"), { recursive: true });
    // Global settings: the user's own choice of backend (a project file could not choose it).
    writeFileSync(
      join(agentDir, "pi-code-execution", "settings.json"),
      JSON.stringify({ backend: "remote", remote: sshd.remote({ cwd: remoteDir, python: PYTHON }) }),
    );
    pi = await session(env, agentDir);
  });
  after(async () => {
    await pi?.dispose();
    await sshd?.stop();
    clearEnv(env);
  });
  const where = [
    "import os",
    "print('cwd=' + os.getcwd())",
    "print('key=' + str(os.environ.get('OPENAI_API_KEY')))",
    "p, chain = os.getpid(), []",
    "while p > 1:",
    "    p = int(open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[1])",
    "    chain.append(p)",
    "print('via-sshd=' + str(SSHD in chain))",
  ].join("\n");
  // The sshd is this test's child, so Pi is an ancestor of everything it starts: what shows the remote side is
  // that the code descends from the sshd, in remote.cwd, without Pi's environment.
  const code = () => `SSHD = ${sshd.proc.pid}\n${where}`;
  const calls: [string, () => [string, Record<string, unknown>]][] = [
    ["code_execution", () => ["code_execution", { code: code() }]],
    ["python", () => ["python", { cells: [{ code: code() }] }]],
    ["eval-py", () => ["eval", { cells: [{ language: "py", code: code() }] }]],
    [
      "exec_command",
      () => {
        writeFileSync(join(remoteDir, "where.py"), code());
        return ["exec_command", { cmd: "python3 where.py", yield_time_ms: 30_000 }];
      },
    ],
  ];
  for (const [surface, call] of calls) {
    test(surface, async () => {
      const [r] = await turn(pi, [call()]);
      const text = textOf(r!);
      assert.match(text, new RegExp(`cwd=${remoteDir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\b`), text);
      assert.match(text, /key=None/, text);
      assert.match(text, /via-sshd=True/, text);
    });
  }
  test("eval's JavaScript cells are refused with a hint, never run elsewhere", async () => {
    const marker = join(root, "js-ran");
    const [r] = await turn(pi, [
      [
        "eval",
        { cells: [{ language: "js", code: `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'x')` }] },
      ],
    ]);
    assert.equal(r!.isError, true, textOf(r!));
    assert.equal(existsSync(marker), false);
  });
});
