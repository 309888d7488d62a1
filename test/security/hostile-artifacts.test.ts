// Saved artifacts changed between their verification and their read (time of check, time of use). What exists at
// rest (symlinks, modes, tampering, collisions) is in test/store/artifacts.test.ts; here the file changes inside the
// window: hooks on the real fs calls (fs/promises, rebound in every module's imports) swap it right after a check,
// and a separate process swaps it in a loop while reads race it. A read either fails with a reason or returns
// bytes that were verified: never the swapped-in ones, and it never hangs.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  closeSync,
  ftruncateSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ArtifactUnavailableError, readVerified } from "../../store/artifact-fs.ts";
import {
  OutputArtifactCollisionError,
  readOutputPage,
  saveOutputArtifact,
  type OutputRef,
} from "../../store/artifacts.ts";
import { RunOutput } from "../../lib/run-output.ts";
import { loadSource, saveSource } from "../../store/sources.ts";
import type { PiHarness } from "../helpers/pi-session.ts";
import { PYTHON } from "../helpers/runner-driver.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const fsp = createRequire(import.meta.url)("node:fs/promises");

type Fn = (...args: any[]) => any;

/** Runs `body` with `fs/promises.<name>` (or FileHandle's `read`) wrapped, and always restores it. */
async function hooked<T>(
  name: "lstat" | "open" | "read" | "link",
  wrap: (orig: Fn) => Fn,
  body: () => Promise<T>,
): Promise<T> {
  const target = name === "read" ? await fileHandleProto() : fsp;
  const orig = target[name];
  target[name] = wrap(orig);
  syncBuiltinESMExports();
  try {
    return await body();
  } finally {
    target[name] = orig;
    syncBuiltinESMExports();
  }
}

async function fileHandleProto(): Promise<any> {
  const h = await fsp.open(import.meta.filename);
  await h.close();
  return Object.getPrototypeOf(h);
}

/** Calls `act(path)` once, right after the lstat (the check) of a path ending with `suffix` returned. */
const afterCheckOf = (suffix: string, act: (path: string) => void) => (orig: Fn) => {
  let done = false;
  return async (path: string, ...rest: unknown[]) => {
    const st = await orig(path, ...rest);
    if (!done && String(path).endsWith(suffix)) {
      done = true;
      act(String(path));
    }
    return st;
  };
};

/** Calls `act(path)` once, just before the lstat of a path ending with `suffix`: after every earlier check. */
const beforeCheckOf = (suffix: string, act: (path: string) => void) => (orig: Fn) => {
  let done = false;
  return async (path: string, ...rest: unknown[]) => {
    if (!done && String(path).endsWith(suffix)) {
      done = true;
      act(String(path));
    }
    return orig(path, ...rest);
  };
};

/** Puts a private file with `bytes` at `path` (a new inode, atomically). */
function replaceWith(path: string, bytes: Buffer | string): void {
  const tmpPath = `${path}.swap`;
  writeFileSync(tmpPath, bytes, { mode: 0o600 });
  renameSync(tmpPath, path);
}

const mkfifo = (path: string) => execFileSync("mkfifo", ["-m", "600", path]);

function tampered(bytes: Buffer, at = 10): Buffer {
  const copy = Buffer.from(bytes);
  copy[at] = copy[at] === 0x58 ? 0x59 : 0x58;
  return copy;
}

/** Rejects with ArtifactUnavailableError matching `re` within 5 s (a hang fails the test instead of stalling). */
async function refusedWithin(p: Promise<unknown>, re: RegExp): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error("the read hung")), 5000);
  });
  try {
    await assert.rejects(
      Promise.race([p, hang]),
      (e: Error) => e instanceof ArtifactUnavailableError && re.test(e.message),
    );
  } finally {
    clearTimeout(timer);
  }
}

/** A saved transcript of `text` in a fresh artifact directory. */
async function saved(text: string): Promise<{ root: string; ref: OutputRef; out: string; json: string }> {
  const root = join(tempDir("pcs-toctou-"), "out");
  const output = new RunOutput();
  output.write("stdout", Buffer.from(text));
  const ref = await saveOutputArtifact(output.collect().capture, root);
  return { root, ref, out: join(root, `${ref.outputId}.out`), json: join(root, `${ref.outputId}.json`) };
}

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${String(i).padStart(7, "0")}\n`).join("");

describe("the transcript swapped between its check and its open", () => {
  for (const [what, swap, reason] of [
    ["a symlink to an identical copy", (p: string) => swapForSymlink(p), /cannot be opened \(ELOOP\)/],
    [
      "an identical copy (another inode)",
      (p: string) => replaceWith(p, readFileSync(p)),
      /changed while it was opened/,
    ],
    ["a FIFO (the open must not block)", (p: string) => (unlinkSync(p), mkfifo(p)), /changed while it was opened/],
    ["the same file made readable by others", (p: string) => chmodSync(p, 0o644), /readable or writable by others/],
  ] as const) {
    test(`${what}: refused`, async () => {
      const a = await saved(lines(100));
      await hooked("lstat", afterCheckOf(".out", swap), () =>
        refusedWithin(readOutputPage(a.ref.outputId, {}, a.root), reason),
      );
      if (what.startsWith("a FIFO")) unlinkSync(a.out);
    });
  }

  test("a FIFO already in place is not a regular file", async () => {
    const a = await saved(lines(10));
    unlinkSync(a.out);
    mkfifo(a.out);
    await refusedWithin(readOutputPage(a.ref.outputId, {}, a.root), /not a regular file/);
  });
});

function swapForSymlink(path: string): void {
  const copy = `${path}.elsewhere`;
  linkSync(path, copy);
  unlinkSync(path);
  symlinkSync(copy, path);
}

describe("the transcript changed after the sidecar was verified", () => {
  test("replaced by different bytes of the same size: the digest refuses it", async () => {
    const a = await saved(lines(100));
    await hooked(
      "lstat",
      beforeCheckOf(".out", (p) => replaceWith(p, tampered(readFileSync(p)))),
      () => refusedWithin(readOutputPage(a.ref.outputId, {}, a.root), /does not match its digest/),
    );
  });

  test("the sidecar swapped for another valid artifact's between its check and its open: refused", async () => {
    const a = await saved(lines(100));
    const b = await saved(lines(200));
    await hooked(
      "lstat",
      afterCheckOf(".json", (p) => replaceWith(p, readFileSync(b.json))),
      () => refusedWithin(readOutputPage(a.ref.outputId, {}, a.root), /changed while it was opened/),
    );
  });

  test("the sidecar rewritten after it was verified changes nothing: the page is checked against what was read", async () => {
    const a = await saved(lines(100));
    const b = await saved(lines(200));
    const page = await hooked(
      "lstat",
      beforeCheckOf(".out", (p) => replaceWith(a.json, readFileSync(b.json))),
      () => readOutputPage(a.ref.outputId, {}, a.root),
    );
    assert.equal(page.text, lines(100));
    assert.deepEqual(page.ref, a.ref);
  });
});

describe("the transcript changed in place while it is read (3 MiB: several chunks)", () => {
  const text = lines(200_000);
  const size = Buffer.byteLength(text);
  const CHUNK = 1 << 20;

  /** Runs `act(outPath)` once, right after the first 1 MiB chunk of the transcript was read. */
  const afterFirstChunk = (out: string, act: (path: string) => void) => (orig: Fn) =>
    async function (this: unknown, ...args: any[]) {
      const r = await orig.apply(this, args);
      if (args[2] === CHUNK && args[3] === 0) act(out);
      return r;
    };

  const writeAt = (path: string, at: number, bytes: string) => {
    const fd = openSync(path, "r+");
    writeSync(fd, bytes, at);
    closeSync(fd);
  };

  test("bytes not yet read are changed: the digest refuses the whole read, even a page already read", async () => {
    const a = await saved(text);
    await hooked(
      "read",
      afterFirstChunk(a.out, (p) => writeAt(p, 2 * CHUNK, "EVIL")),
      () =>
        refusedWithin(readOutputPage(a.ref.outputId, { offset: 0, limit: 100 }, a.root), /does not match its digest/),
    );
  });

  test("bytes already read are changed: the page holds the verified bytes, not the new ones", async () => {
    const a = await saved(text);
    const page = await hooked(
      "read",
      afterFirstChunk(a.out, (p) => writeAt(p, 20, "EVIL")),
      () => readOutputPage(a.ref.outputId, { offset: 0, limit: 100 }, a.root),
    );
    assert.equal(page.text, text.slice(0, 100));
    assert.ok(readFileSync(a.out, "utf8").slice(0, 100).includes("EVIL"), "the file did change");
  });

  test("truncated mid-read: refused", async () => {
    const a = await saved(text);
    const truncate = (p: string) => {
      const fd = openSync(p, "r+");
      ftruncateSync(fd, CHUNK + CHUNK / 2);
      closeSync(fd);
    };
    await hooked("read", afterFirstChunk(a.out, truncate), () =>
      refusedWithin(readOutputPage(a.ref.outputId, { offset: size - 100 }, a.root), /changed while it was read/),
    );
  });

  test("appended to mid-read: only the verified bytes are read, the page is returned; the next read is refused", async () => {
    const a = await saved(text);
    const page = await hooked(
      "read",
      afterFirstChunk(a.out, (p) => writeFileSync(p, "EVIL\n".repeat(100_000), { flag: "a" })),
      () => readOutputPage(a.ref.outputId, { offset: size - 100 }, a.root),
    );
    assert.equal(page.text, text.slice(-100));
    await refusedWithin(readOutputPage(a.ref.outputId, {}, a.root), new RegExp(`is ${size + 500_000} bytes`));
  });

  test("made readable by others mid-read: the bytes were proven by the digest, the page is returned", async () => {
    const a = await saved(text);
    const page = await hooked(
      "read",
      afterFirstChunk(a.out, (p) => chmodSync(p, 0o644)),
      () => readOutputPage(a.ref.outputId, { offset: size - 100 }, a.root),
    );
    assert.equal(page.text, text.slice(-100));
    await refusedWithin(readOutputPage(a.ref.outputId, {}, a.root), /readable or writable by others/);
  });
});

describe("a small verified file (a sidecar, a source) truncated after its size was taken", () => {
  test("refused as changed while it was read, at once", async () => {
    const file = join(tempDir("pcs-shrink-"), "f.json");
    writeFileSync(file, "x".repeat(1000), { mode: 0o600 });
    let cut = false;
    const truncateFirst = (orig: Fn) =>
      async function (this: unknown, ...args: any[]) {
        if (!cut) {
          cut = true;
          const fd = openSync(file, "r+");
          ftruncateSync(fd, 400);
          closeSync(fd);
        }
        return orig.apply(this, args);
      };
    await hooked("read", truncateFirst, () =>
      refusedWithin(readVerified(file, "the sidecar", 4096), /^the sidecar changed while it was read$/),
    );
    assert.ok(cut, "the file was cut between the size check and the read");
  });
});

describe("another save of the same outputId landing between a save's check and its placing", () => {
  /** Calls `act(path)` once, just before the link(2) that would place a file whose name ends with `suffix`. */
  const beforePlacing = (suffix: string, act: (path: string) => void) => (orig: Fn) => {
    let done = false;
    return async (existing: string, path: string, ...rest: unknown[]) => {
      if (!done && String(path).endsWith(suffix)) {
        done = true;
        act(String(path));
      }
      return orig(existing, path, ...rest);
    };
  };
  const text = lines(100);
  const captured = () => {
    const output = new RunOutput();
    output.write("stdout", Buffer.from(text));
    return output.collect().capture;
  };

  test("the same transcript or sidecar: one file each, no collision; another one: a collision, left untouched", async () => {
    const model = await saved(text);
    const sidecar = readFileSync(model.json);
    for (const [suffix, same, other] of [
      [".out", Buffer.from(text), tampered(Buffer.from(text))],
      [".json", sidecar, Buffer.from(sidecar.toString().replace(/"lines": \d+/, '"lines": 1'))],
    ] as const) {
      const root = join(tempDir("pcs-toctou-"), "out");
      const ref = await hooked(
        "link",
        beforePlacing(suffix, (p) => writeFileSync(p, same, { mode: 0o600 })),
        () => saveOutputArtifact(captured(), root),
      );
      assert.deepEqual(ref, model.ref, `the same ${suffix} placed first`);
      assert.deepEqual(readFileSync(join(root, `${ref.outputId}.out`), "utf8"), text);
      assert.deepEqual(readFileSync(join(root, `${ref.outputId}.json`)), sidecar);
      const other_root = join(tempDir("pcs-toctou-"), "out");
      await hooked(
        "link",
        beforePlacing(suffix, (p) => writeFileSync(p, other, { mode: 0o600 })),
        () => assert.rejects(saveOutputArtifact(captured(), other_root), OutputArtifactCollisionError),
      );
      assert.deepEqual(readFileSync(join(other_root, `${ref.outputId}${suffix}`)), other, `the other ${suffix} kept`);
    }
  });

  test("the saved transcript truncated while a repeated save compares it: a collision, at once", async () => {
    const big = lines(200_000);
    const a = await saved(big);
    const truncate = (orig: Fn) => {
      let cut = false;
      return async function (this: unknown, ...args: any[]) {
        if (!cut) {
          cut = true;
          const fd = openSync(a.out, "r+");
          ftruncateSync(fd, 1000);
          closeSync(fd);
        }
        return orig.apply(this, args);
      };
    };
    const output = new RunOutput();
    output.write("stdout", Buffer.from(big));
    await hooked("read", truncate, async () => {
      let timer: NodeJS.Timeout | undefined;
      const hang = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("the comparison hung")), 5000);
      });
      try {
        await assert.rejects(
          Promise.race([saveOutputArtifact(output.collect().capture, a.root), hang]),
          OutputArtifactCollisionError,
        );
      } finally {
        clearTimeout(timer);
      }
    });
  });
});

describe("saved sources", () => {
  test("swapped between check and open, or for a FIFO: refused; changed after the read: the verified text", async () => {
    const root = join(tempDir("pcs-toctou-src-"), "code-execution");
    const code = "print('original')\n";
    const id = await saveSource(code, root);
    for (const swap of [(p: string) => replaceWith(p, "print('evil')\n"), (p: string) => replaceWith(p, code)]) {
      await hooked("lstat", afterCheckOf(".py", swap), () =>
        refusedWithin(loadSource(id, root), /changed while it was opened/),
      );
    }
    const loaded = await hooked(
      "read",
      (orig) =>
        async function (this: unknown, ...args: any[]) {
          const r = await orig.apply(this, args);
          writeFileSync(join(root, `${id}.py`), "print('evil')\n");
          return r;
        },
      () => loadSource(id, root),
    );
    assert.equal(loaded, code);
    const p = join(root, `${id}.py`);
    unlinkSync(p);
    await saveSource(code, root);
    await hooked(
      "lstat",
      afterCheckOf(".py", (f) => (unlinkSync(f), mkfifo(f))),
      () => refusedWithin(loadSource(id, root), /changed while it was opened/),
    );
  });

  describe("through a Pi session", () => {
    let pi: PiHarness;
    let textOf: typeof import("../helpers/pi-session.ts").textOf;
    before(async () => {
      // Loaded here, so the store tests above do not wait for Pi's packages (mutation runs skip this part).
      const session = await import("../helpers/pi-session.ts");
      textOf = session.textOf;
      pi = await session.startPi();
    });
    after(async () => {
      await pi.dispose();
    });

    // Pi loads the extension through its own module loader, so the fs hooks do not reach it: a swapper races it.
    test("rerunning a sourceId while its file keeps being swapped never runs the swapped-in code", async () => {
      const code = "print('original')";
      const [first] = await pi.callTools([{ code }]);
      const id = first.details.sourceId as string;
      const file = join(pi.agentDir, "code-execution", `${id}.py`);
      const good = `${file}.good`;
      const evil = `${file}.evil`;
      linkSync(file, good);
      writeFileSync(evil, "print('evil')", { mode: 0o600 });
      const swapper = startSwapper(file, [`link:${good}`, `link:${evil}`, `symlink:${evil}`, "fifo", "missing"]);
      try {
        const results = await pi.callTools(Array.from({ length: 15 }, () => ({ sourceId: id })));
        const texts = results.map(textOf);
        for (const t of texts) assert.ok(t === "original\n" || /Do not retry with this sourceId/.test(t), t);
        assert.ok(!texts.some((t) => t.includes("evil")), "the swapped-in script never ran");
      } finally {
        swapper.kill("SIGKILL");
        rmSync(file, { force: true }); // it may be a FIFO
      }
    });
  });
});

/** A process that puts each of `variants` at `path` in turn, atomically, for up to 20 s: `link:<file>` (a hard
 * link), `link644:<file>` (the same, readable by others while there), `symlink:<file>`, `fifo`, `missing`. */
function startSwapper(path: string, variants: string[]) {
  const script = `
import os, sys, time
path, variants = sys.argv[1], sys.argv[2:]
tmp = path + ".next"
end = time.monotonic() + 20
i = 0
while time.monotonic() < end:
    kind, _, arg = variants[i % len(variants)].partition(":")
    i += 1
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    if kind == "missing":
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        continue
    if kind in ("link", "link644"):
        os.link(arg, tmp)
    elif kind == "symlink":
        os.symlink(arg, tmp)
    else:
        os.mkfifo(tmp, 0o600)
    if kind == "link644":
        os.chmod(tmp, 0o644)
    os.rename(tmp, path)
    if kind == "link644":
        os.chmod(arg, 0o600)
`;
  return spawn(PYTHON, ["-c", script, path, ...variants], { stdio: "ignore" });
}

describe("reads racing a process that keeps swapping the transcript", () => {
  let swapper: ReturnType<typeof spawn> | undefined;
  after(() => {
    swapper?.kill("SIGKILL");
  });

  test("every read returns the exact verified page or an ArtifactUnavailableError, and none hangs", async () => {
    const text = lines(3000);
    const a = await saved(text);
    const good = `${a.out}.good`;
    const bad = `${a.out}.bad`;
    linkSync(a.out, good);
    writeFileSync(bad, tampered(readFileSync(a.out), 5000), { mode: 0o600 });
    swapper = startSwapper(a.out, [
      `link:${good}`,
      `link:${bad}`,
      `symlink:${good}`,
      "fifo",
      "missing",
      `link644:${good}`,
    ]);
    const outcomes = { ok: 0, refused: 0 };
    const deadline = Date.now() + 3000;
    let reads = 0;
    while (Date.now() < deadline || reads < 100) {
      // Eight reads at a time, each bounded: a hang (an open blocked on the FIFO) fails the test.
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          reads++;
          let timer: NodeJS.Timeout | undefined;
          const hang = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error("a read hung")), 5000);
          });
          try {
            const page = await Promise.race([
              readOutputPage(a.ref.outputId, { offset: 100, limit: 500 }, a.root),
              hang,
            ]);
            assert.equal(page.text, text.slice(100, 600), "only the verified bytes");
            outcomes.ok++;
          } catch (e) {
            if (!(e instanceof ArtifactUnavailableError)) throw e;
            outcomes.refused++;
          } finally {
            clearTimeout(timer);
          }
        }),
      );
    }
    swapper.kill("SIGKILL");
    rmSync(dirname(a.root), { recursive: true, force: true });
    assert.equal(outcomes.ok + outcomes.refused, reads);
    assert.ok(outcomes.refused > 0, `the swapper was seen (${JSON.stringify(outcomes)})`);
  });
});
