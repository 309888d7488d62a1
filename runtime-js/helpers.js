// Past 400 lines, one concept: the prelude a cell sees, one short function per helper, kept together as the
// surface it mirrors (oh-my-pi's prelude, Python's helpers) is one list.
"use strict";
// The helpers a cell finds in its globals (docs/protocol-js.md, "Helpers"), the same surface as Python's where it
// makes sense: display, print, read, write, env, output, completion and `tool.<name>(args)` (oh-my-pi's prelude; the
// host's reserved `__eval__` entry of the run's tools names the session's local:// root and artifacts directory).
// Options go positionally or as one trailing object. Everything that waits belongs to the run that called it and
// ends when the run is interrupted. A notebook cell's console writes every level to stdout, in call order.
const fs = require("node:fs");
const path = require("node:path");
const util = require("node:util");
const { inspect } = require("./errors.js");

/** Name of the nested call that carries completion() (the host answers it; no Pi tool has this name). */
const COMPLETION_CALL = "__completion__";
/** The reserved entry of an eval run's tools: its description is `{localRoot, artifactsDir}` as JSON. */
const PRELUDE_ENTRY = "__eval__";
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(.*)$/s;
/** JSON and text sent in one display frame at most (the frame limit is 64 MiB). */
const MAX_DISPLAY_CHARS = 16 << 20;
/** What the host shows (as Pi image content; SVG is rendered to PNG). */
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/svg+xml"]);

const isPlainOptions = (v) => v !== null && typeof v === "object" && !Array.isArray(v) && tagOf(v) === "Object";
const tagOf = (v) => Object.prototype.toString.call(v).slice(8, -1);

/** `f(x, a, b)` or `f(x, {a, b})`: the options by name. */
function options(name, args, keys, errors) {
  if (args.length === 1 && isPlainOptions(args[0])) {
    const unknown = Object.keys(args[0]).filter((k) => !keys.includes(k));
    if (unknown.length)
      throw new errors.TypeError(`${name}(): unknown option ${unknown.join(", ")} (it takes ${keys.join(", ")})`);
    return args[0];
  }
  if (args.length > keys.length) throw new errors.TypeError(`${name}() takes at most ${keys.length + 1} arguments`);
  const out = {};
  keys.forEach((k, i) => {
    if (args[i] !== undefined && args[i] !== null) out[k] = args[i];
  });
  return out;
}

/** How a value shows: `{kind, ...}` display content, or undefined for nothing (undefined). */
function shown(value) {
  if (value === undefined) return undefined;
  if (typeof value === "string") return { kind: "text", text: value };
  if (value === null || typeof value !== "object")
    return { kind: "text", text: typeof value === "symbol" ? value.toString() : String(value) };
  if (value.type === "image" && typeof value.mimeType === "string") return image(value);
  const tag = tagOf(value);
  if (Array.isArray(value) || tag === "Object") {
    let json;
    try {
      json = JSON.stringify(value);
    } catch {
      json = undefined; // a cycle or a BigInt: shown as text below
    }
    if (typeof json === "string" && json.length <= MAX_DISPLAY_CHARS) return { kind: "json", text: json };
  }
  const text = inspect(value);
  return {
    kind: "text",
    text: text.length > MAX_DISPLAY_CHARS ? `${text.slice(0, MAX_DISPLAY_CHARS)}\n[... cut]` : text,
  };
}

function image(value) {
  const mime = value.mimeType.toLowerCase();
  const bad = (why) => ({ kind: "text", text: `[display: image not shown: ${why}]` });
  if (!IMAGE_TYPES.has(mime)) return bad(`${value.mimeType} is not one of ${[...IMAGE_TYPES].join(", ")}`);
  let data = value.data;
  if (data instanceof ArrayBuffer) data = Buffer.from(data);
  else if (ArrayBuffer.isView(data)) data = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (Buffer.isBuffer(data)) {
    data = mime === "image/svg+xml" ? data.toString("utf8") : data.toString("base64");
  } else if (typeof data !== "string") {
    return bad("`data` must be a base64 string, a Buffer, a typed array or an ArrayBuffer");
  } else if (mime === "image/svg+xml") {
    if (!data.trimStart().startsWith("<")) data = Buffer.from(data, "base64").toString("utf8");
  } else if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 !== 0) {
    return bad("`data` is not valid base64");
  }
  if (data.length > MAX_DISPLAY_CHARS * 2)
    return bad(`it is ${data.length} characters of data; the limit is ${MAX_DISPLAY_CHARS * 2}`);
  return { kind: "image", mime, data };
}

/**
 * Installs the helpers on the context's global `g`. `runtime`: `current()` (the run executing), `display(run, item)`
 * (sends a display frame), `call(run, name, args)` (a nested call: a promise of its text), `errors` (the context's
 * Error and TypeError).
 */
/** The run executing, for helper `name`; a helper called after its cell ended (a kept callback) throws. */
function runningRun(runtime, name) {
  const run = runtime.current();
  if (!run) throw new runtime.errors.Error(`${name}(): no cell is running (it was called after its cell ended)`);
  return run;
}

function install(g, runtime) {
  const errors = runtime.errors;
  const running = (name) => runningRun(runtime, name);

  const display = (value) => {
    const run = running("display");
    const item = shown(value);
    if (item) runtime.display(run, item);
  };

  const print = (...args) => {
    process.stdout.write(`${util.format(...args)}\n`);
  };

  /** `{localRoot, artifactsDir}` of the run (eval cells), or {}. */
  const dirsOf = (run) => {
    const entry = run.tools.get(PRELUDE_ENTRY);
    if (!entry || typeof entry.description !== "string") return {};
    try {
      const d = JSON.parse(entry.description);
      return d && typeof d === "object" ? d : {};
    } catch {
      return {};
    }
  };

  /** A file path for `p`, or `{scheme}` for a URL of another scheme (local:// maps under the run's local root). */
  const resolvePath = (p, name, run) => {
    if (p instanceof URL) p = p.protocol === "file:" ? require("node:url").fileURLToPath(p) : p.href;
    if (typeof p !== "string" || !p) throw new errors.TypeError(`${name}(): the path must be a non-empty string`);
    if (p.startsWith("file://")) return { file: require("node:url").fileURLToPath(p) };
    const m = SCHEME.exec(p);
    if (m && m[1].toLowerCase() === "local") return { file: localPath(p, m[2], name, run) };
    if (m) return { scheme: m[1].toLowerCase() };
    if (p === "~" || p.startsWith("~/")) return { file: path.join(require("node:os").homedir(), p.slice(1)) };
    return { file: path.resolve(p) };
  };

  const localPath = (p, rest, name, run) => {
    const root = dirsOf(run).localRoot;
    if (typeof root !== "string" || !root)
      throw new errors.Error(`${name}(): local:// paths are not available in this run (no local root was given)`);
    let rel;
    try {
      rel = decodeURIComponent(rest.replace(/\\/g, "/"));
    } catch {
      throw new errors.TypeError(`${name}(): ${p} is not a valid URL path`);
    }
    const parts = rel.split("/");
    if (rel.startsWith("/") || parts.includes(".."))
      throw new errors.Error(`${name}(): ${p} escapes local:// (an absolute path or '..')`);
    return path.join(path.resolve(root), ...parts.filter((x) => x && x !== "."));
  };

  const read = async (p, ...rest) => {
    const run = running("read");
    const opts = options("read", rest, ["offset", "limit"], errors);
    for (const k of ["offset", "limit"]) {
      if (opts[k] !== undefined && (!Number.isInteger(opts[k]) || opts[k] < (k === "offset" ? 1 : 0))) {
        throw new errors.TypeError(
          `read(): ${k} must be an integer ${k === "offset" ? ">= 1 (a line number)" : ">= 0 (a line count)"}`,
        );
      }
    }
    const where = resolvePath(p, "read", run);
    if (where.scheme) {
      // Other schemes (agent://, artifact://, https://) are the read tool's business.
      if (!run.tools.has("read"))
        throw new errors.Error(`read(): ${p} is not a file path and the read tool is not available`);
      return runtime.call(run, "read", { path: p, ...opts });
    }
    const file = where.file;
    const st = await abortable(run, fs.promises.stat(file), errors);
    if (st.isDirectory())
      throw new errors.Error(`read(): ${file} is a directory, not a file (list it with fs.readdirSync)`);
    const text = await abortable(run, fs.promises.readFile(file, { encoding: "utf8", signal: run.signal }), errors);
    if (opts.offset === undefined && opts.limit === undefined) return text;
    // Lines keep their breaks (as Python's read() does): a range ends with its last line's newline.
    const lines = text.split(/(?<=\n)/);
    const start = (opts.offset || 1) - 1;
    return lines.slice(start, opts.limit === undefined ? undefined : start + opts.limit).join("");
  };

  const write = async (p, content) => {
    const run = running("write");
    const where = resolvePath(p, "write", run);
    if (where.scheme)
      throw new errors.Error(
        `write(): ${where.scheme}:// paths are not supported (only local:// and file paths): ${p}`,
      );
    const file = where.file;
    let data = content;
    if (data instanceof ArrayBuffer) data = Buffer.from(data);
    else if (ArrayBuffer.isView(data)) data = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    else if (typeof data !== "string") {
      throw new errors.TypeError("write(): the content must be a string or bytes (use JSON.stringify for objects)");
    }
    await abortable(run, fs.promises.mkdir(path.dirname(file), { recursive: true }), errors);
    await abortable(run, fs.promises.writeFile(file, data, { signal: run.signal }), errors);
  };

  /** oh-my-pi's env(): all variables (sorted), one (undefined when unset), or set one and return its value. */
  const env = (name, value) => {
    if (name === undefined || name === null) {
      if (value !== undefined && value !== null) throw new errors.TypeError("env(): a value needs a name");
      return Object.fromEntries(Object.entries(process.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    if (typeof name !== "string" || !name) throw new errors.TypeError("env(): the name must be a non-empty string");
    if (value !== undefined && value !== null) {
      process.env[name] = String(value);
      return process.env[name];
    }
    return process.env[name];
  };

  /** Saved outputs of the session by id: `output(id)`, `output(a, b)`, with `{format, query, offset, limit}` last. */
  const output = async (...args) => {
    const run = running("output");
    let opts = {};
    if (args.length && isPlainOptions(args[args.length - 1])) opts = args.pop();
    const unknown = Object.keys(opts).filter((k) => !["format", "query", "offset", "limit"].includes(k));
    if (unknown.length)
      throw new errors.TypeError(
        `output(): unknown option ${unknown.join(", ")} (it takes format, query, offset, limit)`,
      );
    const format = opts.format ?? "raw";
    if (!["raw", "json", "stripped"].includes(format))
      throw new errors.TypeError(`output(): format must be "raw", "json" or "stripped", not ${JSON.stringify(format)}`);
    if (!args.length) throw new errors.TypeError("output(): at least one output id is required");
    if (opts.query !== undefined && (opts.offset !== undefined || opts.limit !== undefined))
      throw new errors.TypeError("output(): query cannot be combined with offset/limit");
    for (const [k, low] of [
      ["offset", 1],
      ["limit", 0],
    ])
      if (opts[k] !== undefined && (!Number.isInteger(opts[k]) || opts[k] < low))
        throw new errors.TypeError(`output(): ${k} must be an integer >= ${low}`);
    const dir = dirsOf(run).artifactsDir;
    if (typeof dir !== "string" || !dir)
      throw new errors.Error("output(): this run has no session artifacts directory");
    const results = [];
    const missing = [];
    for (let id of args) {
      if (typeof id === "string" && id.startsWith("artifact://")) id = id.slice("artifact://".length);
      if (typeof id !== "string" || !id || id.includes("/") || id.startsWith("."))
        throw new errors.TypeError(`output(): ${JSON.stringify(id)} is not an output id`);
      const file = path.join(dir, `${id}.md`);
      let raw;
      try {
        raw = await abortable(run, fs.promises.readFile(file, { encoding: "utf8", signal: run.signal }), errors);
      } catch (e) {
        if (e && e.code === "ENOENT") {
          missing.push(id);
          continue;
        }
        throw e;
      }
      results.push(selectOutput(id, file, raw, format, opts, errors));
    }
    if (missing.length) {
      const known = (await fs.promises.readdir(dir).catch(() => []))
        .filter((n) => n.endsWith(".md"))
        .map((n) => n.slice(0, -3))
        .sort();
      throw new errors.Error(
        `output(): no saved output ${missing.join(", ")}${known.length ? `; saved: ${known.slice(0, 20).join(", ")}${known.length > 20 ? ` (and ${known.length - 20} more)` : ""}` : "; this session has saved none yet"}`,
      );
    }
    if (results.length === 1) return format === "json" ? results[0] : results[0].content;
    return format === "json" ? results : results.map((r) => ({ id: r.id, content: r.content }));
  };

  const completion = async (prompt, ...rest) => {
    const run = running("completion");
    if (typeof prompt !== "string" || !prompt)
      throw new errors.TypeError("completion(): the prompt must be a non-empty string");
    const opts = options("completion", rest, ["model", "system", "schema"], errors);
    const text = await runtime.call(run, COMPLETION_CALL, { prompt, ...opts });
    if (opts.schema === undefined) return text;
    try {
      return JSON.parse(text);
    } catch {
      throw new errors.Error(
        `completion(): the model's answer is not the JSON the schema asks for: ${text.slice(0, 200)}`,
      );
    }
  };

  /** The run's tools as `tool.<name>` sees them: reserved `__name__` calls (completion(), agent(), ...) have their
   * own helpers. */
  const isReserved = (n) => n === COMPLETION_CALL || /^__.*__$/.test(n);
  const callable = (run) => [...run.tools.keys()].filter((n) => !isReserved(n));
  const tool = new Proxy(Object.create(null), {
    get(_, name) {
      if (typeof name !== "string" || name === "then" || name === "toJSON" || name === "constructor") return undefined;
      return async (args) => {
        const r = running(`tool.${name}`);
        if (!r.tools.has(name) || isReserved(name)) {
          const list = callable(r);
          throw new errors.Error(
            `tool.${name}: no such tool in this cell${list.length ? ` (available: ${list.join(", ")})` : " (no tools are available)"}`,
          );
        }
        if (args === undefined) args = {};
        if (args === null || typeof args !== "object" || Array.isArray(args)) {
          throw new errors.TypeError(`tool.${name}(args): args must be an object of named arguments`);
        }
        return runtime.call(r, name, args);
      };
    },
    has(_, name) {
      const run = runtime.current();
      return Boolean(run && run.tools.has(name) && !isReserved(name));
    },
    ownKeys() {
      const run = runtime.current();
      return run ? callable(run) : [];
    },
    getOwnPropertyDescriptor(_, name) {
      const run = runtime.current();
      if (!run || !run.tools.has(name) || isReserved(name)) return undefined;
      return { configurable: true, enumerable: true, value: tool[name] };
    },
  });

  for (const [name, value] of Object.entries({ display, print, read, write, env, output, completion, tool })) {
    Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
  }
  g.console = orderedConsole(runtime);
}

/** Node's console, except that in a notebook cell (a run whose value is shown: eval's) error and warn write to
 * stdout like log: one stream keeps the order the calls were made in (two pipes would not). */
function orderedConsole(runtime) {
  const target = () => {
    const run = runtime.current();
    return run && run.asValue ? process.stdout : process.stderr;
  };
  const stderr = {
    write: (chunk, encoding, cb) => target().write(chunk, encoding, cb),
    // Console listens for stream errors; the real streams report their own.
    on: () => stderr,
    once: () => stderr,
    removeListener: () => stderr,
    listenerCount: () => 0,
  };
  return new (require("node:console").Console)({ stdout: process.stdout, stderr, colorMode: "auto" });
}

/** One output's selection (oh-my-pi's output() semantics): a query into JSON, or a line range; ANSI stripped. */
function selectOutput(id, file, raw, format, opts, errors) {
  const lines = raw.split(/\r?\n/);
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  let content = raw;
  const extra = {};
  if (opts.query !== undefined) {
    let value;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      throw new errors.Error(`output(): ${id} is not JSON, so it cannot be queried: ${e.message}`);
    }
    const picked = queryJson(value, String(opts.query), errors);
    content = picked === undefined || picked === null ? "null" : JSON.stringify(picked, null, 2);
    extra.query = opts.query;
  } else if (opts.offset !== undefined || opts.limit !== undefined) {
    const start = opts.offset ?? 1;
    if (start > lines.length)
      throw new errors.Error(`output(): offset ${start} is past the end of ${id} (${lines.length} lines)`);
    const end = opts.limit === undefined ? lines.length : Math.min(lines.length, start + opts.limit - 1);
    content = lines.slice(start - 1, end).join("\n");
    extra.range = { start_line: start, end_line: end, total_lines: lines.length };
  }
  if (format === "stripped") content = content.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "");
  if (format !== "json") return { id, content };
  const queried = opts.query !== undefined;
  return {
    id,
    path: file,
    line_count: queried ? content.split("\n").length : lines.length,
    char_count: queried ? content.length : raw.length,
    content,
    ...extra,
  };
}

/** `.a.b[0]["c d"]` into a JSON value; a step that does not exist gives undefined. */
function queryJson(value, query, errors) {
  const steps = [];
  const re = /\.?([^.[\]]+)|\[\s*(-?\d+|"[^"]*"|'[^']*')\s*\]/gy;
  const q = query.trim().replace(/^\.$/, "");
  let m;
  let at = 0;
  while (at < q.length) {
    re.lastIndex = at;
    m = re.exec(q);
    if (!m)
      throw new errors.TypeError(
        `output(): cannot read the query ${JSON.stringify(query)} at ${JSON.stringify(q.slice(at))}`,
      );
    if (m[1] !== undefined) steps.push(m[1]);
    else if (/^-?\d+$/.test(m[2])) steps.push(Number(m[2]));
    else steps.push(m[2].slice(1, -1));
    at = re.lastIndex;
  }
  for (const step of steps) {
    if (typeof step === "number") {
      if (!Array.isArray(value) || step < -value.length || step >= value.length) return undefined;
      value = value[step < 0 ? value.length + step : step];
    } else {
      if (value === null || typeof value !== "object" || Array.isArray(value) || !Object.hasOwn(value, step))
        return undefined;
      value = value[step];
    }
  }
  return value;
}

/** Waits for `work`, or rejects with the run's AbortError when the run is interrupted first. */
function abortable(run, work, errors) {
  return new Promise((resolve, reject) => {
    const entry = (reason) => reject(reason);
    run.pending.add(entry);
    work.then(
      (v) => {
        run.pending.delete(entry);
        resolve(v);
      },
      (e) => {
        run.pending.delete(entry);
        reject(e && e.name === "AbortError" && run.aborted ? run.abortError : asContextError(e, errors));
      },
    );
  });
}

/** A host error (fs) as an error of the context's realm, so `e instanceof Error` holds in the cell. */
function asContextError(e, errors) {
  if (!(e instanceof Error)) return e;
  const out = new errors.Error(e.message);
  for (const k of ["code", "errno", "syscall", "path"]) if (e[k] !== undefined) out[k] = e[k];
  return out;
}

module.exports = { install, shown, runningRun, COMPLETION_CALL };
