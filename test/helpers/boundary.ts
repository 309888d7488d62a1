// The boundary matrix's shared half (test/security/boundary-*-pi.test.ts): the same hostile actions (read a secret in
// $HOME, connect to a loopback listener and to a unix socket on the host, signal Pi, write outside the working
// directory, hold capabilities, see Pi's credentials in the environment) as Python, JavaScript and shell programs,
// run through each surface of a real Pi session, each printing `<action>=OK` or `<action>=NO:<why>`.
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { after, before } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "./pi-session.ts";
import { tempDir } from "./temp-dir.ts";

export const ACTIONS = ["secret", "tcp", "unix", "signal", "outside", "caps", "env"] as const;
type Action = (typeof ACTIONS)[number];
export const SURFACES = ["code_execution", "python", "eval-py", "eval-js", "exec_command", "write_stdin"] as const;
export type Surface = (typeof SURFACES)[number];

export const SECRET_TEXT = "pcs-boundary-secret-7f3a";
export const KEY_TEXT = "sk-pcs-boundary-key";
export const root = tempDir("pcs-boundary-");
// Outside $HOME and the temporary directory, so the sandbox neither hides nor replaces it: only its rules apply.
export const hostDir = tempDir("pcs-boundary-", "/var/tmp");
const home = join(root, "home");
export const secret = join(home, "secret");
const socketPath = join(hostDir, "host.sock");
const savedEnv = { HOME: process.env.HOME, OPENAI_API_KEY: process.env.OPENAI_API_KEY };
let tcp: Server;
let unix: Server;
let tcpPort = 0;

/** Plants the secret, the fake home and the listeners for this test file, and takes them away after it. */
export function boundaryFixtures(): void {
  before(async () => {
    mkdirSync(home, { recursive: true });
    writeFileSync(secret, SECRET_TEXT);
    process.env.HOME = home;
    process.env.OPENAI_API_KEY = KEY_TEXT;
    tcp = createServer((s) => s.end());
    await new Promise<void>((r) => tcp.listen(0, "127.0.0.1", r));
    tcpPort = (tcp.address() as { port: number }).port;
    unix = createServer((s) => s.end());
    await new Promise<void>((r) => unix.listen(socketPath, r));
  });

  after(async () => {
    tcp?.close();
    unix?.close();
    process.env.HOME = savedEnv.HOME;
    if (savedEnv.OPENAI_API_KEY === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = savedEnv.OPENAI_API_KEY;
    rmSync(root, { recursive: true, force: true });
    rmSync(hostDir, { recursive: true, force: true });
  });
}

/** One Python program trying every action, a line `<action>=OK` or `<action>=NO:<why>` each. */
function pythonProbe(surface: Surface): string {
  return [
    "import os, socket",
    "def t(name, f):",
    "    try:",
    "        f()",
    "        print(f'{name}=OK')",
    "    except BaseException as e:",
    "        print(f'{name}=NO:{type(e).__name__}')",
    "def secret():",
    `    assert open(${JSON.stringify(secret)}).read() == ${JSON.stringify(SECRET_TEXT)}`,
    "def unix():",
    "    s = socket.socket(socket.AF_UNIX)",
    "    s.settimeout(3)",
    `    s.connect(${JSON.stringify(socketPath)})`,
    "    s.close()",
    "def caps():",
    "    line = [l for l in open('/proc/self/status') if l.startswith('CapEff:')][0]",
    "    assert int(line.split()[1], 16) != 0",
    "def env():",
    `    assert os.environ.get('OPENAI_API_KEY') == ${JSON.stringify(KEY_TEXT)}`,
    "def outside():",
    `    with open(${JSON.stringify(join(hostDir, `written-${surface}`))}, 'w') as f: f.write('x')`,
    "t('secret', secret)",
    `t('tcp', lambda: socket.create_connection(('127.0.0.1', ${tcpPort}), timeout=3).close())`,
    "t('unix', unix)",
    `t('signal', lambda: os.kill(${process.pid}, 0))`,
    "t('outside', outside)",
    "t('caps', caps)",
    "t('env', env)",
  ].join("\n");
}

/** The same in a JavaScript cell (top-level await). */
function jsProbe(surface: Surface): string {
  return [
    "const fs = require('node:fs'); const net = require('node:net');",
    "const t = async (name, f) => { try { await f(); console.log(`${name}=OK`); } catch (e) { console.log(`${name}=NO:${e && e.code || e && e.name}`); } };",
    "const dial = (o) => new Promise((ok, no) => { const c = net.connect(o, () => { c.destroy(); ok(); }); c.on('error', no); c.setTimeout(3000, () => { c.destroy(); no(new Error('timeout')); }); });",
    `await t('secret', () => { if (fs.readFileSync(${JSON.stringify(secret)}, 'utf8') !== ${JSON.stringify(SECRET_TEXT)}) throw new Error('other'); });`,
    `await t('tcp', () => dial({ host: '127.0.0.1', port: ${tcpPort} }));`,
    `await t('unix', () => dial({ path: ${JSON.stringify(socketPath)} }));`,
    `await t('signal', () => process.kill(${process.pid}, 0));`,
    `await t('outside', () => fs.writeFileSync(${JSON.stringify(join(hostDir, `written-${surface}`))}, 'x'));`,
    "await t('caps', () => { const l = fs.readFileSync('/proc/self/status', 'utf8').split('\\n').find((x) => x.startsWith('CapEff:')); if (BigInt('0x' + l.split(/\\s+/)[1]) === 0n) throw new Error('none'); });",
    `await t('env', () => { if (process.env.OPENAI_API_KEY !== ${JSON.stringify(KEY_TEXT)}) throw new Error('absent'); });`,
  ].join("\n");
}

/** The same from a shell (bash; the unix socket through python3, which bash cannot dial). */
function shellProbe(surface: Surface): string {
  const t = (name: Action, cmd: string) => `if ${cmd}; then echo ${name}=OK; else echo ${name}=NO:$?; fi`;
  return [
    t("secret", `[ "$(cat ${secret} 2>/dev/null)" = ${SECRET_TEXT} ]`),
    t("tcp", `timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/${tcpPort}' 2>/dev/null`),
    t(
      "unix",
      `timeout 3 python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('${socketPath}')" 2>/dev/null`,
    ),
    t("signal", `kill -0 ${process.pid} 2>/dev/null`),
    t("outside", `(echo x > ${join(hostDir, `written-${surface}`)}) 2>/dev/null`),
    t("caps", `[ "$(awk '/^CapEff:/ {print $2}' /proc/self/status)" != 0000000000000000 ]`),
    t("env", `[ "$OPENAI_API_KEY" = ${KEY_TEXT} ]`),
  ].join("\n");
}

export async function turn(pi: PiHarness, calls: [string, Record<string, unknown>][]): Promise<ToolResultMessage[]> {
  const before = pi.toolResults().length;
  pi.faux.setResponses([
    ...calls.map(([name, args]) =>
      fauxAssistantMessage([fauxToolCall(name, args as never)], { stopReason: "toolUse" }),
    ),
    fauxAssistantMessage("done"),
  ]);
  await pi.session.prompt("go");
  return pi.toolResults().slice(before);
}

/** Runs the probe through one surface and reads back its verdicts. */
export async function probe(
  pi: PiHarness,
  surface: Surface,
): Promise<{ verdicts: Record<string, string>; text: string }> {
  let results: ToolResultMessage[];
  switch (surface) {
    case "code_execution":
      results = await turn(pi, [["code_execution", { code: pythonProbe(surface), timeout: 30 }]]);
      break;
    case "python":
      results = await turn(pi, [["python", { cells: [{ code: pythonProbe(surface) }] }]]);
      break;
    case "eval-py":
      results = await turn(pi, [["eval", { cells: [{ language: "py", code: pythonProbe(surface) }] }]]);
      break;
    case "eval-js":
      results = await turn(pi, [["eval", { cells: [{ language: "js", code: jsProbe(surface) }] }]]);
      break;
    case "exec_command":
      results = await turn(pi, [["exec_command", { cmd: shellProbe(surface), yield_time_ms: 30_000 }]]);
      break;
    case "write_stdin": {
      const [opened] = await turn(pi, [["exec_command", { cmd: "bash", yield_time_ms: 200 }]]);
      const id = opened!.details?.session_id ?? Number(/session_id: (\d+)/.exec(textOf(opened!))?.[1]);
      assert.ok(Number.isInteger(id), `a bash session: ${textOf(opened!)}`);
      // The shell exits after the probe, so the call returns at its exit rather than at the end of its window.
      const chars = `${shellProbe(surface)}\nexit\n`;
      results = await turn(pi, [["write_stdin", { session_id: id, chars, yield_time_ms: 30_000 }]]);
      break;
    }
  }
  const text = textOf(results[0]!);
  const verdicts: Record<string, string> = {};
  for (const m of text.matchAll(/^(secret|tcp|unix|signal|outside|caps|env)=(OK|NO\S*)/gm)) verdicts[m[1]!] = m[2]!;
  return { verdicts, text };
}

export const isRoot = process.getuid?.() === 0;

export async function session(env: Record<string, string>, agentDirEnv?: string): Promise<PiHarness> {
  process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,python,eval,exec";
  for (const [k, v] of Object.entries(env)) process.env[k] = v;
  return startPi(agentDirEnv ? { agentDirEnv } : {});
}

export function clearEnv(env: Record<string, string>): void {
  delete process.env.PI_CODE_EXECUTION_TOOLS;
  for (const k of Object.keys(env)) delete process.env[k];
}
