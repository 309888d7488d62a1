"use strict";
// eval's orchestration helpers in JavaScript (oh-my-pi's prelude, docs/eval.md): agent(), parallel(), pipeline(),
// log(), phase() and budget. agent() and the budget are nested calls of reserved tools (`__agent__`, `__budget__`)
// the host answers; the pools' width comes from the host too (`__concurrency__`, setting eval.poolWidth; 0 = every
// item at once). log() and phase() are status events: display items of kind `status`, never output.
const { runningRun } = require("./helpers.js");

const AGENT_CALL = "__agent__";
const BUDGET_CALL = "__budget__";
const POOL_CALL = "__concurrency__";

const isNil = (v) => v === undefined || v === null;
const isPlain = (v) =>
  v !== null && typeof v === "object" && !Array.isArray(v) && Object.prototype.toString.call(v) === "[object Object]";

/**
 * Installs the helpers on the context's global `g`. `runtime`: `current()`, `display(run, item)`, `call(run, name,
 * args)` (a promise of the result's text), `errors`.
 */
function install(g, runtime) {
  const errors = runtime.errors;
  const running = (name) => runningRun(runtime, name);
  /** A reserved call; outside eval the host does not expose it. */
  const reserved = async (helper, name, args) => {
    const run = running(helper);
    try {
      return await runtime.call(run, name, args);
    } catch (e) {
      if (e && typeof e.message === "string" && e.message.startsWith(`${name} is not exposed to Python in this run`))
        throw new errors.Error(`${helper}() works in eval cells only`);
      throw e;
    }
  };

  const KEYS = ["agent", "model", "label", "schema"];
  const agent = async (prompt, ...rest) => {
    if (typeof prompt !== "string" || !prompt.trim())
      throw new errors.TypeError("agent(): the prompt must be a non-empty string");
    let opts = {};
    if (rest.length === 1 && isPlain(rest[0])) {
      opts = rest[0];
      const unknown = Object.keys(opts).filter((k) => !KEYS.includes(k));
      if (unknown.length)
        throw new errors.TypeError(`agent(): unknown option ${unknown.join(", ")} (it takes ${KEYS.join(", ")})`);
    } else {
      if (rest.length > KEYS.length)
        throw new errors.TypeError(`agent() takes at most ${KEYS.length + 1} arguments (or a trailing options object)`);
      KEYS.forEach((k, i) => {
        if (!isNil(rest[i])) opts[k] = rest[i];
      });
    }
    const args = { prompt };
    for (const k of KEYS) if (!isNil(opts[k])) args[k] = opts[k];
    const text = await reserved("agent", AGENT_CALL, args);
    return args.schema === undefined ? text : JSON.parse(text);
  };

  const width = async (helper) => {
    const limit = JSON.parse(await reserved(helper, POOL_CALL, {})).limit;
    return Number.isInteger(limit) && limit > 0 ? limit : 0;
  };

  /** fn over items, at most `limit` at once; results in item order; all settle, then the first failure rejects. */
  const poolMap = async (helper, items, fn) => {
    if (items.length === 0) return [];
    const limit = await width(helper);
    const n = limit ? Math.min(limit, items.length) : items.length;
    const results = new Array(items.length);
    const failures = new Map();
    let next = 0;
    const worker = async () => {
      while (next < items.length) {
        const i = next++;
        try {
          results[i] = await fn(items[i], i);
        } catch (e) {
          failures.set(i, e);
        }
      }
    };
    await Promise.all(Array.from({ length: n }, worker));
    if (failures.size) throw failures.get(Math.min(...failures.keys()));
    return results;
  };

  const parallel = async (thunks) => {
    running("parallel");
    const list = Array.from(thunks ?? []);
    list.forEach((t, i) => {
      if (typeof t !== "function")
        throw new errors.TypeError(
          `parallel(): item ${i} is not a function; pass thunks like () => agent("...") (got ${typeof t})`,
        );
    });
    return poolMap("parallel", list, (t) => t());
  };

  const pipeline = async (items, ...stages) => {
    running("pipeline");
    stages.forEach((s, i) => {
      if (typeof s !== "function") throw new errors.TypeError(`pipeline(): stage ${i + 1} is not a function`);
    });
    let current = Array.from(items ?? []);
    for (const stage of stages) current = await poolMap("pipeline", current, (x) => stage(x));
    return current;
  };

  const status = (helper, op, data) => {
    const run = running(helper);
    runtime.display(run, { kind: "status", text: JSON.stringify({ ...data, op }) });
  };
  const log = (message) => status("log", "log", { message: String(message) });
  const phase = (title) => status("phase", "phase", { title: String(title) });

  const snap = async (helper) => {
    const s = JSON.parse(await reserved(`budget.${helper}`, BUDGET_CALL, {}));
    return s && typeof s === "object" ? s : {};
  };
  const budget = Object.freeze({
    total: async () => (await snap("total")).total ?? null,
    spent: async () => Number((await snap("spent")).spent ?? 0),
    remaining: async () => {
      const s = await snap("remaining");
      return s.total == null ? Infinity : Number(s.remaining ?? 0);
    },
    hard: async () => Boolean((await snap("hard")).hard),
  });

  for (const [name, value] of Object.entries({ agent, parallel, pipeline, log, phase, budget })) {
    Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
  }
}

module.exports = { install, AGENT_CALL, BUDGET_CALL, POOL_CALL };
