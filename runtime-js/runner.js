"use strict";
// pi-code-supervisor's JavaScript runner: runs the cells of one JavaScript session in one persistent `node:vm`
// context, out of Pi's process. The contract with the host (file descriptors, frames, interrupts, ordering of output
// and frames, cell semantics) is docs/protocol-js.md; read it before changing this file. Plain CommonJS, Node's own
// modules only. Start-up loads only what `ready` needs; the context is built right after it.
const { send, fatal, listen, leadsGroup } = require("./channel.js");
const calls = require("./calls.js");

const PROTOCOL = 1;
/** Errors from earlier cells' timers kept for the next cell to report (beyond this they are only counted). */
const MAX_BACKGROUND = 20;

function receive(frame) {
  switch (frame.type) {
    case "run": {
      const why = badRun(frame) ?? toolSet(frame);
      if (why) return fatal(`bad run frame: ${why}`);
      queue.push(frame);
      return pump();
    }
    case "interrupt":
      if (current && current.id === frame.id) current.interrupt();
      else if (queue.some((r) => r.id === frame.id)) early.add(frame.id);
      return;
    case "signal":
      // A backend that cannot signal the runner's pid (the sandbox wraps it) sends the signal as a frame.
      if (frame.signal === "SIGINT") return current && current.interrupt();
      if (frame.signal === "SIGTERM" || frame.signal === "SIGKILL") {
        process.kill(leadsGroup() ? -process.pid : process.pid, frame.signal);
      }
      return;
    case "tool.result":
      return calls.answer(runtime, frame);
    case "shutdown":
      return process.exit(0);
    default:
      return fatal(`unknown frame type ${JSON.stringify(frame.type).slice(0, 80)}`);
  }
}

/** The current tool set: its specs arrive with its id once; later run frames name the id alone (docs/protocol-js.md). */
let tools = { id: undefined, list: [] };

/** Fills a frame's tools from its `tools_id`; an error text when the id names no set this runner received. */
function toolSet(f) {
  if (f.tools_id === undefined) return undefined;
  if (typeof f.tools_id !== "string") return "tools_id must be a string";
  if (f.tools !== undefined) tools = { id: f.tools_id, list: f.tools };
  else if (f.tools_id === tools.id) f.tools = tools.list;
  else return `tools_id ${JSON.stringify(f.tools_id).slice(0, 80)} names no tool set this runner received`;
  return undefined;
}

function badRun(f) {
  for (const k of ["id", "code", "filename"]) if (typeof f[k] !== "string") return `${k} must be a string`;
  if (!/^[^/\\\0]+$/.test(f.filename)) return "filename must be a plain file name";
  if (f.chdir !== undefined && typeof f.chdir !== "string") return "chdir must be a string";
  if (f.tools !== undefined) {
    if (!Array.isArray(f.tools)) return "tools must be a list";
    for (const t of f.tools)
      if (!t || typeof t !== "object" || typeof t.name !== "string") return "each tool needs a name";
  }
  return undefined;
}

// ------------------------------------------------------------------------------------------------ runs
class Run {
  constructor(msg) {
    this.id = msg.id;
    this.code = msg.code;
    this.filename = msg.filename;
    this.chdir = msg.chdir;
    this.asValue = msg.result === "value";
    this.tools = new Map((msg.tools || []).map((t) => [t.name, t]));
    this.controller = new AbortController();
    this.signal = this.controller.signal;
    /** Rejecters of promises the cell waits on (watched promises, helpers): an interrupt calls them all. */
    this.pending = new Set();
    /** Tool calls waiting for their result: id -> {resolve, reject}. */
    this.calls = new Map();
    this.aborted = false;
    this.abortError = undefined;
    /** Something the cell started failed outside its own flow (a timer's throw, an unhandled rejection). */
    this.failedElsewhere = false;
    this.errorText = "";
    this.displayed = false;
    this.value = undefined;
  }

  interrupt() {
    if (this.aborted) return;
    this.aborted = true;
    const e = new runtime.errors.Error("the cell was interrupted (its time ran out, or it was cancelled)");
    e.name = "AbortError";
    e.stack = `AbortError: ${e.message}`; // where the runner noticed the interrupt is no concern of the cell's
    this.abortError = e;
    this.controller.abort(e);
    for (const reject of [...this.pending]) reject(e);
    this.pending.clear();
    for (const [, call] of this.calls) call.reject(e);
    this.calls.clear();
  }

  /** Error text: into `done` (notebook cells) or straight to stderr. */
  error(text) {
    if (this.asValue) this.errorText += text;
    else process.stderr.write(text);
  }
}

const queue = [];
/** Runs interrupted before they started. */
const early = new Set();
let current;
let busy = false;
let runtime;
const background = { texts: [], more: 0 };

function pump() {
  if (busy || !queue.length) return;
  busy = true;
  const msg = queue.shift();
  execute(msg).then(
    () => {
      busy = false;
      pump();
    },
    (e) => fatal(`runner internal error: ${(e && e.stack) || e}`),
  );
}

async function execute(msg) {
  const run = new Run(msg);
  current = run;
  send({ type: "started", id: run.id });
  if (early.delete(run.id)) run.interrupt();
  let error = null;
  try {
    prepare(run);
    const value = await runtime.cells.run(run);
    if (value.shown) show(run, value.value);
  } catch (e) {
    error =
      e instanceof runtime.cells.CellSyntaxError
        ? "syntax"
        : run.aborted && e === run.abortError
          ? "interrupt"
          : "exception";
    run.error(e instanceof runtime.cells.CellSyntaxError ? e.text : runtime.errors.format(e));
  }
  // Rejections the cell left floating surface within this turn: they are still this cell's.
  await new Promise((resolve) => setImmediate(resolve));
  if (error === null && run.failedElsewhere) error = "exception";
  current = undefined;
  for (const [, call] of run.calls)
    call.reject(new runtime.errors.Error("the cell ended before this tool call was answered"));
  run.calls.clear();
  run.pending.clear();
  const done = {
    type: "done",
    id: run.id,
    exitCode: error === null ? 0 : error === "interrupt" ? 130 : 1,
    displayedValue: run.displayed,
    error,
    out: outSoFar(),
  };
  if (run.asValue && run.value !== undefined) done.value = run.value;
  if (run.asValue && run.errorText) done.exception = run.errorText;
  send(done);
}

/** Before the code compiles: the run's directory, a new import generation, errors left by earlier cells. */
function prepare(run) {
  if (run.chdir) {
    try {
      process.chdir(run.chdir);
    } catch (e) {
      process.stderr.write(
        `[cannot change to ${run.chdir}: ${e.code || e.message}; the cell runs in ${process.cwd()}]\n`,
      );
    }
  }
  runtime.modules.nextGeneration();
  if (background.texts.length) {
    const more = background.more ? `[... and ${background.more} more]\n` : "";
    process.stderr.write(`[errors after an earlier cell ended]\n${background.texts.join("")}${more}`);
    background.texts = [];
    background.more = 0;
  }
}

/** A cell's value: JSON and images as displays, text as the cell's value (notebook cells) or as output. */
function show(run, value) {
  const item = runtime.helpers.shown(value);
  if (!item) return;
  run.displayed = true;
  if (item.kind === "text" && run.asValue) run.value = item.text;
  else if (item.kind === "text") process.stdout.write(item.text.endsWith("\n") ? item.text : `${item.text}\n`);
  else display(run, item);
}

function display(run, item) {
  send({ type: "display", id: run.id, ...item, out: outSoFar() });
}

/** An error no code of the cell caught (a timer's throw, a rejection nobody handled). */
function uncaught(value, origin) {
  const run = current;
  if (run && run.aborted && value === run.abortError) return; // the interrupt's own rejection, left unhandled
  const text = runtime.errors.format(value, origin === "unhandledRejection" ? "Uncaught (in promise) " : "Uncaught ");
  if (run) {
    run.failedElsewhere = true;
    run.error(text);
  } else if (background.texts.length < MAX_BACKGROUND) background.texts.push(text);
  else background.more += 1;
}

// ------------------------------------------------------------------------------------------------ start-up
function main() {
  const args = process.argv.slice(2);
  if (args.length !== 2 || args[0] !== "--mode" || args[1] !== "session") {
    return fatal(`usage: runner.js --mode session (got ${JSON.stringify(args)})`);
  }
  // Blocking writes: output a cell wrote before a crash or process.exit() is in the pipe, and before any frame.
  // Node makes process.stdout/stderr on first use (a few ms): they become blocking then.
  for (const name of ["stdout", "stderr"]) blockingWhenOpened(name);
  process.on("SIGINT", () => {}); // interrupts come as frames; a stray SIGINT must not end the session
  quietExperimentalWarnings();
  listen(receive);
  send({
    type: "ready",
    protocol: PROTOCOL,
    pid: process.pid,
    node: process.versions.node,
    executable: process.execPath,
    mode: "session",
  });
  // Work that can wait until the host reacts to `ready` (frames sent meanwhile wait in the socket).
  runtime = build();
  process.on("uncaughtException", (e) => uncaught(e, "uncaughtException"));
  process.on("unhandledRejection", (e) => uncaught(e, "unhandledRejection"));
}

function build() {
  const errorsModule = require("./errors.js");
  const modules = require("./modules.js");
  const { createContext } = require("./context.js");
  const helpers = require("./helpers.js");
  const cells = require("./cell-run.js");
  const rt = { modules, helpers, cells, current: () => current };
  const ctx = createContext(rt);
  rt.errors = { Error: ctx.Error, TypeError: ctx.TypeError, format: errorsModule.formatError };
  rt.global = ctx.global;
  const helperRuntime = {
    current: () => current,
    errors: rt.errors,
    display,
    call: (run, name, args) => calls.call(rt, run, name, args),
  };
  helpers.install(ctx.global, helperRuntime);
  require("./agents.js").install(ctx.global, helperRuntime); // agent(), parallel(), pipeline(), log(), phase(), budget
  cells.attach(rt);
  Error.stackTraceLimit = 25;
  ctx.global.Error.stackTraceLimit = 25;
  return rt;
}

/** Bytes written through process.stdout and process.stderr so far: `display` and `done` carry them (`out`), and the
 * host decodes such a frame only once that much output has arrived (the sockets are read in no fixed order). */
const written = { stdout: 0, stderr: 0 };

/** What `display` and `done` say was written before them. */
function outSoFar() {
  return [written.stdout, written.stderr];
}

function blockingWhenOpened(name) {
  const block = (stream) => {
    if (stream && stream._handle && typeof stream._handle.setBlocking === "function") stream._handle.setBlocking(true);
    if (stream && typeof stream.write === "function") {
      const write = stream.write;
      stream.write = function countedWrite(chunk, encoding, cb) {
        const ok = write.call(this, chunk, encoding, cb);
        if (typeof chunk === "string") {
          written[name] += Buffer.byteLength(
            chunk,
            typeof encoding === "string" && Buffer.isEncoding(encoding) ? encoding : "utf8",
          );
        } else if (chunk && typeof chunk.byteLength === "number") written[name] += chunk.byteLength;
        return ok;
      };
    }
    return stream;
  };
  const d = Object.getOwnPropertyDescriptor(process, name);
  if (!d || typeof d.get !== "function") return void block(process[name]);
  Object.defineProperty(process, name, {
    configurable: true,
    enumerable: d.enumerable,
    get() {
      Object.defineProperty(process, name, d);
      return block(d.get.call(process));
    },
  });
}

/** Node warns once that vm's default-loader option is experimental; that warning is ours, not the cell's output. */
function quietExperimentalWarnings() {
  const emit = process.emitWarning;
  process.emitWarning = function emitWarning(warning, ...rest) {
    const text = typeof warning === "string" ? warning : warning && warning.message;
    if (typeof text === "string" && /USE_MAIN_CONTEXT_DEFAULT_LOADER|registerHooks/.test(text)) return;
    return emit.call(this, warning, ...rest);
  };
}

main();
