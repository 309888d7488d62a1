// What the remote backend ships: the runtime's Python files under their content address, and the bootstrap that
// verifies (or fills) the remote cache folder and starts the relay (runtime-py/relay.py).
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const RUNTIME_DIR = new URL("../../runtime-py/", import.meta.url).pathname;

/** How long a remote runner (or the ssh master) may take to answer at start. */
export const START_TIMEOUT_MS = 30_000;

/** The runtime's files and their content address: sha256 over `name\0length\0bytes` of each .py, sorted by name
 * (the remote bootstrap computes the same to verify its cache). */
export function runtimeBundle(dir = RUNTIME_DIR): { hash: string; files: Record<string, string> } {
  const h = createHash("sha256");
  const files: Record<string, string> = {};
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith(".py"))
    .sort()) {
    const bytes = readFileSync(join(dir, name));
    h.update(`${name}\0${bytes.length}\0`).update(bytes);
    files[name] = bytes.toString("utf8");
  }
  return { hash: h.digest("hex"), files };
}

/** Runs on the remote side with `python -c`: verify or receive the runtime, enter the directory, hand over to the
 * relay. Standard library only; any Python 3.9+. */
export const BOOT = `
import hashlib, json, os, sys
h, mode, cwd, limits = sys.argv[1:5]
def put(obj):
    b = json.dumps(obj).encode()
    os.write(1, bytes([0]) + len(b).to_bytes(4, "big") + b)
def die(message, hint):
    put({"type": "error", "message": message, "hint": hint}); sys.exit(3)
if sys.version_info < (3, 9):
    die("remote Python %d.%d is too old (3.9 or newer is needed): %s" % (sys.version_info[:2] + (sys.executable,)), "remote_python")
root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
base = os.path.join(root, "pi-code-supervisor", "runtime", h)
def digest(d):
    m = hashlib.sha256()
    for n in sorted(os.listdir(d)):
        if n.endswith(".py"):
            with open(os.path.join(d, n), "rb") as f:
                b = f.read()
            m.update(("%s\\0%d\\0" % (n, len(b))).encode() + b)
    return m.hexdigest()
try:
    good = digest(base) == h
except OSError:
    good = False
if not good:
    put({"type": "ship"})
    head = sys.stdin.buffer.read(5)
    body = sys.stdin.buffer.read(int.from_bytes(head[1:], "big")) if len(head) == 5 else b""
    files = json.loads(body.decode())["files"]
    tmp = "%s.tmp%d" % (base, os.getpid())
    os.makedirs(tmp, 0o700)
    for n, text in files.items():
        with open(os.path.join(tmp, os.path.basename(n)), "w", encoding="utf-8") as f:
            f.write(text)
    if digest(tmp) != h:
        die("the shipped runtime does not match its hash", "remote_unreachable")
    try:
        os.rename(tmp, base)
    except OSError:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
        if digest(base) != h:
            die("the runtime cache %s is corrupt" % base, "remote_unreachable")
try:
    os.chdir(os.path.join(os.path.expanduser("~"), cwd))
except OSError as e:
    die("remote working directory %s: %s" % (cwd or "~", e.strerror), "remote_cwd")
sys.path.insert(0, base)
import relay
relay.main(base, mode, limits)
`;
