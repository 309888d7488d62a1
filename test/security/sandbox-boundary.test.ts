// The sandbox as a boundary (issue 28), attacked the way the hostile audit did: capabilities as root, Pi's
// environment, unix sockets on the host's filesystem, an interpreter symlinked from ~/bin, and settings or an
// interpreter planted in the working directory. Each attack is asserted blocked in the sandbox beside a control
// showing the same code succeeds where it is allowed (the local backend, or the sandbox with the network allowed).
// docs/sandbox.md names these tests as the proof of each promise.
import "../helpers/agent-dir.ts";
import { PYTHON, systemPython } from "../helpers/pythons.ts";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { SupervisorHost, type RunRequestInput } from "../../host/host.ts";
import { bwrapArgv, sandboxOperations, type SandboxOptions } from "../../actors/process/sandbox.ts";
import { sandboxEnv } from "../../actors/process/sandbox-env.ts";
import { unixSocketFilter } from "../../actors/process/seccomp.ts";
import { localOperations, type ProcessOperations } from "../../actors/process/operations.ts";
import { JS_RUNNER_PATH, RUNNER_PATH } from "../../actors/runner/kinds.ts";
import { liveGroups } from "../../actors/registry/registry.ts";
import { ok } from "../../lib/result.ts";
import { loadPty } from "../../actors/process/pty.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const ROOT = process.getuid?.() === 0;
let base: string; // outside /tmp and the fake home: the host's filesystem the sandbox still sees
let home: string; // the fake $HOME the sandbox hides
let cwd: string;
let socketPath: string;
let server: Server;
const hosts: SupervisorHost[] = [];
const SECRETS = { OPENAI_API_KEY: "sk-pcs-test-openai", AWS_SECRET_ACCESS_KEY: "pcs-test-aws", PCS_PASSED: "yes" };

const options = (network = false, extra: Partial<SandboxOptions> = {}): SandboxOptions => ({
  network,
  writable: [],
  readable: [],
  env: ["PCS_PASSED"],
  support: [dirname(RUNNER_PATH), dirname(JS_RUNNER_PATH)],
  home,
  ...extra,
});

function host(ops: ProcessOperations, extra: ConstructorParameters<typeof SupervisorHost>[0] = {}): SupervisorHost {
  const h = new SupervisorHost({
    ops,
    env: () => ({ ...process.env, ...SECRETS }),
    limits: { graceMs: 300, killMs: 300 },
    spareRunners: () => false,
    ...extra,
  });
  hosts.push(h);
  return h;
}
const sandboxed = (network = false, extra: Partial<SandboxOptions> = {}) =>
  host(sandboxOperations(options(network, extra)));
const local = () => host(localOperations);
const run = (h: SupervisorHost, code: string, extra: Partial<RunRequestInput> = {}) =>
  h.run({ code, cwd, timeoutMs: 30_000, ...extra });

/** A command through bwrapArgv and sandboxEnv, as other children (shells, probes, installers) start (not
 * spawnSync: the host's socket server answers on this event loop). */
async function inSandbox(
  opts: SandboxOptions,
  argv: string[],
  child: Parameters<typeof bwrapArgv>[2] = {},
  where = cwd,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const built = bwrapArgv(opts, { executable: argv[0]!, args: argv.slice(1), cwd: where }, child);
  assert.ok(built.ok, built.ok ? "" : built.error.message);
  const p = spawn(built.value[0]!, built.value.slice(1), {
    cwd: where,
    env: sandboxEnv({ ...process.env, ...SECRETS }, opts.env ?? [], { home: opts.home! }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  p.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  p.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((r) => p.once("close", (c) => r(c)));
  return { code, stdout, stderr };
}

before(async () => {
  base = tempDir("pcs-boundary-", "/var/tmp");
  home = join(base, "home");
  mkdirSync(join(home, ".ssh"), { recursive: true, mode: 0o700 });
  writeFileSync(join(home, ".ssh", "id_ed25519"), "PCS-PRIVATE-KEY");
  cwd = tempDir("pcs-boundary-cwd-");
  mkdirSync(join(base, "sockets"));
  socketPath = join(base, "sockets", "service.sock");
  server = createServer((s) => {
    s.on("error", () => {}); // a client that went first
    s.end("hello from the host socket\n");
  });
  await new Promise<void>((r) => server.listen(socketPath, () => r()));
});
after(async () => {
  for (const h of hosts) await h.shutdown();
  server.close();
  rmSync(base, { recursive: true, force: true });
  rmSync(cwd, { recursive: true, force: true });
  for (const h of hosts) assert.deepEqual(liveGroups(h.id), [], "no process group left registered");
});

const CAPS = [
  "import ctypes, os",
  "caps = {l.split(':')[0]: int(l.split()[1], 16) for l in open('/proc/self/status') if l.startswith('Cap')}",
  "print('CapEff', caps['CapEff'], 'CapPrm', caps['CapPrm'], 'CapBnd', caps['CapBnd'])",
].join("\n");

describe("capabilities", () => {
  test("none inside, even as root: remount of / and an unmount of the hidden $HOME fail", async () => {
    const r = await run(
      sandboxed(),
      [
        CAPS,
        "libc = ctypes.CDLL(None, use_errno=True)",
        "MS_REMOUNT, MS_BIND, MNT_DETACH = 32, 4096, 2",
        "print('remount', libc.mount(None, b'/', None, MS_REMOUNT | MS_BIND, None), ctypes.get_errno())",
        `print('umount', libc.umount2(${JSON.stringify(home)}.encode(), MNT_DETACH), ctypes.get_errno())`,
        `print('home', sorted(os.listdir(${JSON.stringify(home)})))`,
        "import subprocess",
        "for cmd in (['mount', '-o', 'remount,rw', '/'], ['umount', '-l', " + JSON.stringify(home) + "]):",
        "    print(cmd[0], subprocess.run(cmd, capture_output=True).returncode != 0)",
        "try:",
        "    open('/usr/pcs-remount-probe', 'w'); print('WROTE')",
        "except OSError as e:",
        "    print('usr', e.errno)",
      ].join("\n"),
    );
    assert.equal(r.outcome.status, "success", r.stderr);
    assert.equal(
      r.stdout,
      "CapEff 0 CapPrm 0 CapBnd 0\nremount -1 1\numount -1 1\nhome []\nmount True\numount True\nusr 30\n",
    );
    assert.ok(!existsSync("/usr/pcs-remount-probe"));
  });

  test("control: the same code on local has capabilities (as root)", { skip: !ROOT && "not root" }, async () => {
    const r = await run(local(), CAPS);
    assert.match(r.stdout, /^CapEff [1-9]\d* /, r.stderr);
  });
});

const ENV =
  "import os, json\nprint(json.dumps({k: os.environ.get(k) for k in ['OPENAI_API_KEY', 'AWS_SECRET_ACCESS_KEY', 'PCS_PASSED', 'HOME', 'TMPDIR']}))";

describe("environment", () => {
  test("Pi's credentials do not reach sandboxed code; a name in sandbox.env does; HOME is the hidden one", async () => {
    const r = await run(sandboxed(), ENV);
    assert.deepEqual(JSON.parse(r.stdout), {
      OPENAI_API_KEY: null,
      AWS_SECRET_ACCESS_KEY: null,
      PCS_PASSED: "yes",
      HOME: home,
      TMPDIR: "/tmp",
    });
  });
  test("the same in a JavaScript session", async () => {
    const r = await run(sandboxed(), "JSON.stringify([process.env.OPENAI_API_KEY ?? null, process.env.PCS_PASSED])", {
      language: "js",
      session: "js-env",
    });
    assert.equal(r.stdout.trim(), JSON.stringify([null, "yes"]), r.stderr);
  });
  test("control: on local the credentials are there", async () => {
    const r = await run(local(), ENV);
    const seen = JSON.parse(r.stdout);
    assert.equal(seen.OPENAI_API_KEY, SECRETS.OPENAI_API_KEY);
    assert.equal(seen.AWS_SECRET_ACCESS_KEY, SECRETS.AWS_SECRET_ACCESS_KEY);
  });
  test("sandboxEnv keeps the allow-list, the locale and Python's variables, nothing else", () => {
    const env = sandboxEnv(
      {
        PATH: "/usr/bin",
        LANG: "C.UTF-8",
        LC_ALL: "C.UTF-8",
        PYTHONPATH: "/p",
        PYTHON_KEYRING_PASSWORD: "k",
        VIRTUAL_ENV: "/v",
        MPLBACKEND: "Agg",
        GITHUB_TOKEN: "t",
        HF_TOKEN: "h",
        HOME: "/root",
        TMPDIR: "/host/tmp",
        XDG_RUNTIME_DIR: "/run/user/0",
        SSH_AUTH_SOCK: "/tmp/ssh-agent",
      },
      ["HF_TOKEN"],
      { home: "/home/hidden" },
    );
    assert.deepEqual(env, {
      PATH: "/usr/bin",
      LANG: "C.UTF-8",
      LC_ALL: "C.UTF-8",
      PYTHONPATH: "/p",
      VIRTUAL_ENV: "/v",
      MPLBACKEND: "Agg",
      HF_TOKEN: "h",
      HOME: "/home/hidden",
      TMPDIR: "/tmp",
    });
  });
});

const CONNECT = (path: string) =>
  [
    "import socket",
    "try:",
    "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)",
    "    s.settimeout(5)",
    `    s.connect(${JSON.stringify(path)})`,
    "    print(s.recv(100).decode().strip())",
    "except OSError as e:",
    "    print('refused', e.errno)",
  ].join("\n");
const NODE_CONNECT = (path: string) =>
  `require("net").connect(${JSON.stringify(path)}).on("data", (d) => process.stdout.write(String(d)))` +
  `.on("error", (e) => console.log("refused", e.code))`;

describe("unix sockets", () => {
  test("a socket on the host's filesystem cannot be connected to from sandboxed Python", async () => {
    const r = await run(sandboxed(), CONNECT(socketPath));
    assert.equal(r.stdout, "refused 13\n", r.stderr);
  });
  test("nor from a shell started through bwrapArgv (node's net.connect)", async () => {
    const r = await inSandbox(options(), [
      "/bin/sh",
      "-c",
      `exec "${process.execPath}" -e '${NODE_CONNECT(socketPath)}'`,
    ]);
    assert.equal(r.stdout, "refused EACCES\n", r.stderr);
  });
  test("control: with the network allowed, and on local, it connects", async () => {
    assert.equal((await run(sandboxed(true), CONNECT(socketPath))).stdout, "hello from the host socket\n");
    assert.equal((await run(local(), CONNECT(socketPath))).stdout, "hello from the host socket\n");
    const r = await inSandbox(options(true), [
      "/bin/sh",
      "-c",
      `exec "${process.execPath}" -e '${NODE_CONNECT(socketPath)}'`,
    ]);
    assert.equal(r.stdout, "hello from the host socket\n", r.stderr);
  });

  test("socketpair, asyncio (its self-pipe, a subprocess) and a JavaScript session still work", async () => {
    const h = sandboxed();
    const r = await run(
      h,
      [
        "import asyncio, socket",
        "a, b = socket.socketpair()",
        "a.send(b'pair'); print(b.recv(4).decode())",
        "async def main():",
        "    p = await asyncio.create_subprocess_exec('echo', 'child', stdout=asyncio.subprocess.PIPE)",
        "    out, _ = await p.communicate()",
        "    await asyncio.sleep(0.01)",
        "    return out.decode().strip()",
        "print(asyncio.run(main()))",
      ].join("\n"),
    );
    assert.equal(r.stdout, "pair\nchild\n", r.stderr);
    const js = await run(h, "await new Promise((r) => setTimeout(() => r(6 * 7), 10))", {
      language: "js",
      session: "js-async",
    });
    assert.equal(js.stdout.trim(), "42", js.stderr);
  });

  test("io_uring cannot be set up inside (it creates sockets without the socket syscall)", async (t) => {
    const SETUP = [
      "import ctypes",
      "libc = ctypes.CDLL(None, use_errno=True)",
      "params = (ctypes.c_char * 120)()",
      "fd = libc.syscall(425, 4, params)",
      "print('fd' if fd >= 0 else 'errno %d' % ctypes.get_errno())",
    ].join("\n");
    const control = await run(local(), SETUP);
    if (control.stdout !== "fd\n") return t.skip(`io_uring is unavailable here anyway (${control.stdout.trim()})`);
    assert.equal((await run(sandboxed(), SETUP)).stdout, "errno 1\n");
  });

  test(
    "/run is hidden under no network, shown with it",
    { skip: !ROOT && "/run is writable by root only" },
    async () => {
      const dir = tempDir("pcs-boundary-", "/run");
      try {
        const sock = join(dir, "bus");
        const s = createServer((c) => c.end("bus\n"));
        await new Promise<void>((r) => s.listen(sock, () => r()));
        try {
          const code = `import os\nprint(os.path.exists(${JSON.stringify(sock)}))`;
          assert.equal((await run(sandboxed(), code)).stdout, "False\n");
          assert.equal((await run(sandboxed(true), code)).stdout, "True\n");
        } finally {
          s.close();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  test("a syscall of another ABI (int 0x80) kills the process", async (t) => {
    const bin = join(base, "int80");
    const c = join(base, "int80.c");
    // i386 getpid (20) through int 0x80 from a 64-bit program: the pid locally, SIGSYS under the filter.
    writeFileSync(
      c,
      '#include <stdio.h>\nint main(void){long r; __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L)); printf("%ld\\n", r); return 0;}\n',
    );
    const cc = spawnSync("cc", ["-O0", "-o", bin, c], { encoding: "utf8" });
    if (cc.status !== 0 || process.arch !== "x64") return t.skip("no C compiler for x86_64 here");
    const control = spawnSync(bin, { encoding: "utf8" });
    if (control.status !== 0 || !/^\d+\n$/.test(control.stdout)) return t.skip("no i386 emulation in this kernel");
    const r = await inSandbox(options(), ["/bin/sh", "-c", `${bin}; echo "status $?"`]);
    assert.equal(r.stdout, "status 159\n", r.stderr); // 128 + SIGSYS (31)
  });

  test("health says what the sandbox holds (the probe loads the same filter)", async () => {
    const closed = await sandboxOperations(options()).health();
    assert.ok(closed.ok);
    const known = unixSocketFilter().ok;
    assert.match(closed.value, known ? /no network, no unix sockets/ : /no seccomp filter for/);
    const open = await sandboxOperations(options(true)).health();
    assert.ok(open.ok);
    assert.match(open.value, /network allowed: unix sockets on the host reachable/);
  });

  test("the filter: x64 and arm64 are known, another arch is said plainly", () => {
    const x64 = unixSocketFilter("x64");
    const arm = unixSocketFilter("arm64");
    assert.ok(x64.ok && arm.ok);
    assert.equal(x64.program.length % 8, 0);
    assert.notDeepEqual(x64.program, arm.program);
    const other = unixSocketFilter("riscv64");
    assert.equal(other.ok, false);
    assert.match(other.ok ? "" : other.why, /no seccomp filter for riscv64.*unix sockets on the host's filesystem/);
  });
});

describe("the interpreter", () => {
  const SYSTEM = systemPython()?.path;
  const READ_KEY = `import os\ntry:\n    print(open(${JSON.stringify("HOME/.ssh/id_ed25519")}).read())\nexcept OSError as e:\n    print('hidden', e.errno)`;

  test(
    "symlinked from ~/bin: started by its real path, $HOME stays hidden",
    { skip: SYSTEM ? false : "no Python 3 on this machine (looked on PATH and in the usual places)" },
    async () => {
      assert.ok(SYSTEM);
      mkdirSync(join(home, "bin"), { recursive: true });
      const link = join(home, "bin", "python3");
      rmSync(link, { force: true });
      symlinkSync(SYSTEM, link);
      const python = async () => ok({ executable: link, version: "" });
      const code = READ_KEY.replace("HOME", home);
      const r = await run(host(sandboxOperations(options()), { python }), code);
      assert.equal(r.stdout, "hidden 2\n", r.stderr);
      const built = bwrapArgv(options(), { executable: link, args: [], cwd });
      assert.ok(built.ok);
      assert.ok(!built.value.includes(home.replace(/\/$/, "") + "/bin"), "nothing of the home directory is bound");
      assert.equal(built.value.at(-1), realpathSync(SYSTEM));
      // control: on local the same interpreter reads the key
      assert.equal((await run(host(localOperations, { python }), code)).stdout, "PCS-PRIVATE-KEY\n");
    },
  );

  test("an interpreter rooted at $HOME is refused with sandbox_interpreter_root, nothing runs", async () => {
    mkdirSync(join(home, "bin"), { recursive: true });
    const script = join(home, "bin", "python-real");
    writeFileSync(script, "#!/bin/sh\necho ran > /tmp/never\n");
    chmodSync(script, 0o755);
    const python = async () => ok({ executable: script, version: "" });
    const r = await run(host(sandboxOperations(options()), { python }), "print(1)");
    assert.equal(r.outcome.status, "setup_error");
    assert.equal(r.outcome.hints?.[0]?.id, "sandbox_interpreter_root");
    assert.match(r.outcome.message ?? "", new RegExp(`its root ${home} holds ${home}`));
    // A root at / holds everything hidden.
    const top = bwrapArgv(options(), { executable: "/python3", args: [], cwd });
    assert.equal(top.ok, false);
  });

  test("a virtual environment under $HOME keeps its own path and is shown read-only", () => {
    const venv = join(home, "proj", ".venv");
    mkdirSync(join(venv, "bin"), { recursive: true });
    writeFileSync(join(venv, "pyvenv.cfg"), `home = ${dirname(PYTHON)}\n`);
    rmSync(join(venv, "bin", "python"), { force: true });
    symlinkSync(PYTHON, join(venv, "bin", "python"));
    const built = bwrapArgv(options(), { executable: join(venv, "bin", "python"), args: [], cwd });
    assert.ok(built.ok);
    const s = built.value.join(" ");
    assert.match(s, new RegExp(`--ro-bind-try ${venv} ${venv}`));
    assert.equal(built.value.at(-1), join(venv, "bin", "python"));
  });
});

const PLANT = [
  "import os",
  "res = []",
  "for p in ['.pi/pi-code-execution/settings.json', '.venv/bin/python', 'venv/bin/python']:",
  "    try:",
  "        os.makedirs(os.path.dirname(p), exist_ok=True)",
  '        open(p, "w").write(\'{"tools": ["code_execution", "exec"]}\')',
  "        res.append('WROTE ' + p)",
  "    except OSError as e:",
  "        res.append('denied %d' % e.errno)",
  "for d in ['.pi', '.venv', 'venv']:",
  "    try:",
  "        os.rename(d, d + '-moved'); res.append('MOVED ' + d)",
  "    except OSError as e:",
  "        res.append('stuck %d' % e.errno)",
  "open('other.txt', 'w').write('ok')",
  "print(' '.join(res))",
].join("\n");
const files = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: "utf8" }).map(String).sort();

describe("the working directory's .pi, .venv and venv", () => {
  test("absent: sandboxed code cannot create them; the rest of the cwd is writable", async () => {
    const dir = tempDir("pcs-plant-");
    try {
      const r = await run(sandboxed(), PLANT, { cwd: dir });
      assert.equal(r.stdout, "denied 30 denied 30 denied 30 stuck 16 stuck 16 stuck 16\n", r.stderr);
      assert.equal(readFileSync(join(dir, "other.txt"), "utf8"), "ok");
      // What stays on the host: the empty mount points (docs/sandbox.md), nothing inside them.
      assert.deepEqual(files(dir), [".pi", ".venv", "other.txt", "venv"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("present: read-only, cannot be replaced", async () => {
    const dir = tempDir("pcs-plant-");
    try {
      mkdirSync(join(dir, ".pi", "pi-code-execution"), { recursive: true });
      writeFileSync(join(dir, ".pi", "pi-code-execution", "settings.json"), '{"tools": ["code_execution"]}');
      mkdirSync(join(dir, ".venv", "bin"), { recursive: true });
      const r = await run(sandboxed(), PLANT, { cwd: dir });
      assert.match(r.stdout, /^denied 30 denied 30 denied 30 stuck 16 stuck 16 stuck 16\n$/, r.stderr);
      assert.equal(
        readFileSync(join(dir, ".pi", "pi-code-execution", "settings.json"), "utf8"),
        '{"tools": ["code_execution"]}',
      );
      assert.ok(!existsSync(join(dir, ".venv", "bin", "python")));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a hostile repository's .pi -> $HOME/.ssh shows nothing of $HOME", async () => {
    const dir = tempDir("pcs-plant-");
    try {
      symlinkSync(join(home, ".ssh"), join(dir, ".pi"));
      const r = await run(
        sandboxed(),
        `import os\nprint(os.path.exists(${JSON.stringify(join(home, ".ssh", "id_ed25519"))}), os.path.exists(".pi/id_ed25519"))`,
        { cwd: dir },
      );
      assert.equal(r.stdout, "False False\n", r.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("control: on local the same code plants all three", async () => {
    const dir = tempDir("pcs-plant-");
    try {
      const r = await run(local(), PLANT, { cwd: dir });
      assert.match(r.stdout, /^WROTE \.pi.* WROTE \.venv.* WROTE venv.* MOVED \.pi MOVED \.venv MOVED venv\n$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("other children through the same sandbox (bwrapArgv's options)", () => {
  test("writable replaces the writable set: an install writes its environment only", async () => {
    const dir = tempDir("pcs-install-");
    const env = join(dir, ".venv");
    mkdirSync(env);
    try {
      const script = `echo a > ${env}/installed; echo b > ${dir}/outside 2>/dev/null || echo denied`;
      const r = await inSandbox(options(), ["/bin/sh", "-c", script], { writable: [env] }, dir);
      assert.equal(r.stdout, "denied\n", r.stderr);
      assert.equal(readFileSync(join(env, "installed"), "utf8"), "a\n");
      assert.ok(!existsSync(join(dir, "outside")));
      // control: the default set writes the cwd, and keeps .venv read-only
      const d = await inSandbox(options(), ["/bin/sh", "-c", script], {}, dir);
      assert.match(d.stderr, /Read-only file system/);
      assert.ok(existsSync(join(dir, "outside")));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("tty keeps the controlling terminal (no --new-session); without it there is none", async (t) => {
    const pty = loadPty();
    if (!pty.ok) return t.skip(pty.error);
    const probe = async (tty: boolean) => {
      const argv = bwrapArgv(
        options(),
        { executable: "/bin/sh", args: ["-c", ": > /dev/tty && echo ctty-ok"], cwd },
        { tty },
      );
      assert.ok(argv.ok);
      assert.equal(argv.value.includes("--new-session"), !tty);
      const env = sandboxEnv(process.env, [], { home }) as Record<string, string>;
      const p = pty.value.spawn(argv.value[0]!, argv.value.slice(1), {
        name: "xterm",
        cols: 80,
        rows: 24,
        cwd,
        env,
        encoding: null,
      });
      let out = "";
      p.onData((d) => (out += d.toString()));
      await new Promise<void>((r) => p.onExit(() => r()));
      return out;
    };
    assert.match(await probe(true), /ctty-ok/);
    assert.doesNotMatch(await probe(false), /ctty-ok/);
  });
});
