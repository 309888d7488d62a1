"use strict";
// The helpers a cell finds in its globals (docs/protocol-js.md, "Helpers"), the same surface as Python's where it
// makes sense: display, print, read, write, env, completion and `tool.<name>(args)`. Options go positionally or as
// one trailing object. Everything that waits belongs to the run that called it and ends when the run is interrupted.
const fs = require("node:fs");
const path = require("node:path");
const util = require("node:util");
const { inspect } = require("./errors.js");

/** Name of the nested call that carries completion() (the host answers it; no Pi tool has this name). */
const COMPLETION_CALL = "__completion__";
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
function install(g, runtime) {
  const errors = runtime.errors;
  const running = (name) => {
    const run = runtime.current();
    if (!run) throw new errors.Error(`${name}(): no cell is running (it was called after its cell ended)`);
    return run;
  };

  const display = (value) => {
    const run = running("display");
    const item = shown(value);
    if (item) runtime.display(run, item);
  };

  const print = (...args) => {
    process.stdout.write(`${util.format(...args)}\n`);
  };

  const resolvePath = (p, name) => {
    if (p instanceof URL) p = p.protocol === "file:" ? require("node:url").fileURLToPath(p) : p.href;
    if (typeof p !== "string" || !p) throw new errors.TypeError(`${name}(): the path must be a non-empty string`);
    if (p.startsWith("file://")) return require("node:url").fileURLToPath(p);
    if (p === "~" || p.startsWith("~/")) return path.join(require("node:os").homedir(), p.slice(1));
    return path.resolve(p);
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
    if (typeof p === "string" && /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(p) && !p.startsWith("file://")) {
      // Other schemes (agent://, artifact://, https://) are the read tool's business.
      if (!run.tools.has("read"))
        throw new errors.Error(`read(): ${p} is not a file path and the read tool is not available`);
      return runtime.call(run, "read", { path: p, ...opts });
    }
    const file = resolvePath(p, "read");
    const text = await abortable(run, fs.promises.readFile(file, { encoding: "utf8", signal: run.signal }), errors);
    if (opts.offset === undefined && opts.limit === undefined) return text;
    const lines = text.split("\n");
    const start = (opts.offset || 1) - 1;
    return lines.slice(start, opts.limit === undefined ? undefined : start + opts.limit).join("\n");
  };

  const write = async (p, content) => {
    const run = running("write");
    const file = resolvePath(p, "write");
    let data = content;
    if (data instanceof ArrayBuffer) data = Buffer.from(data);
    else if (ArrayBuffer.isView(data)) data = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    else if (typeof data !== "string") {
      throw new errors.TypeError("write(): the content must be a string or bytes (use JSON.stringify for objects)");
    }
    await abortable(run, fs.promises.mkdir(path.dirname(file), { recursive: true }), errors);
    await abortable(run, fs.promises.writeFile(file, data, { signal: run.signal }), errors);
  };

  const env = (...args) => {
    if (args.length === 0) return { ...process.env };
    const [name, value] = args;
    if (typeof name !== "string") throw new errors.TypeError("env(): the name must be a string");
    if (args.length > 1) {
      if (value === undefined || value === null) delete process.env[name];
      else process.env[name] = String(value);
    }
    return process.env[name];
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

  for (const [name, value] of Object.entries({ display, print, read, write, env, completion, tool })) {
    Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
  }
  g.console = console;
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

module.exports = { install, shown, COMPLETION_CALL };
