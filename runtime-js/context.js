"use strict";
// The one `node:vm` context the cells of a session share (docs/protocol-js.md, "The context"): Node's globals
// (timers, Buffer, process, fetch, URL, ...), builtin modules as lazy globals (as in Node's REPL), `require` from the
// working directory, and the helpers. Its `Promise` is the context's own, watched: promises a cell creates while it
// runs can be rejected with an AbortError when the cell is interrupted (its pending awaits end, its cleanup runs).
const vm = require("node:vm");
const Module = require("node:module");
const { cellRequire } = require("./modules.js");

/** Host globals that a module has but a script does not: never copied into the context. */
const MODULE_ONLY = new Set(["module", "exports", "require", "__filename", "__dirname"]);

/**
 * `runtime`: `{current(): Run|undefined}` (the run executing). Returns `{global, Error, TypeError, track}`: the
 * context's global object, its error constructors, and `abortable(run)` that rejects a run's watched promises.
 */
function createContext(runtime) {
  const g = vm.createContext(vm.constants.DONT_CONTEXTIFY, { name: "js cells" });
  const own = new Set(vm.runInContext("Object.getOwnPropertyNames(globalThis)", g));
  const builtins = new Set(Module.builtinModules.filter((m) => !m.startsWith("_") && !m.includes("/")));
  // Node's globals, each read from the host global on first use (reading some loads a module: FormData, ~75 ms).
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    if (!own.has(name) && !MODULE_ONLY.has(name) && !builtins.has(name)) lazy(g, name, () => globalThis[name]);
  }
  g.global = g;
  g.require = cellRequire();
  // Builtin modules as globals, loaded on first use (as in Node's REPL); a cell may rebind the name.
  for (const name of builtins) if (!(name in g)) lazy(g, name, () => require(`node:${name}`));
  const intrinsics = vm.runInContext("({ Promise, Error, TypeError })", g);
  g.Promise = watchedPromise(intrinsics.Promise, runtime);
  // A cell's fetches end with it when it is interrupted (unless the caller passed its own signal, which is kept).
  // Node loads fetch on first use (~100 ms): it is looked up only when a cell calls it.
  if (Object.getOwnPropertyDescriptor(globalThis, "fetch")) {
    g.fetch = function fetch(input, init) {
      const run = runtime.current();
      if (!run) return globalThis.fetch(input, init);
      const signal = init && init.signal ? AbortSignal.any([init.signal, run.signal]) : run.signal;
      return globalThis.fetch(input, { ...init, signal });
    };
  }
  return { global: g, Error: intrinsics.Error, TypeError: intrinsics.TypeError };
}

/** The context's Promise constructor, with `new Promise(executor)` during a run remembered until it settles. */
function watchedPromise(Native, runtime) {
  return new Proxy(Native, {
    construct(target, args, newTarget) {
      const run = runtime.current();
      const executor = args[0];
      if (!run || typeof executor !== "function") return Reflect.construct(target, args, newTarget);
      return Reflect.construct(
        target,
        [
          (resolve, reject) => {
            const entry = (reason) => reject(reason);
            run.pending.add(entry);
            const settle = (fn) => (v) => {
              run.pending.delete(entry);
              fn(v);
            };
            try {
              executor(settle(resolve), settle(reject));
            } catch (e) {
              run.pending.delete(entry);
              throw e;
            }
          },
        ],
        newTarget,
      );
    },
  });
}

/** A global whose value is computed on first read; assigning it first just sets it. */
function lazy(g, name, compute) {
  const settle = (value) => {
    Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
    return value;
  };
  Object.defineProperty(g, name, {
    configurable: true,
    enumerable: false,
    get: () => settle(compute()),
    set: settle,
  });
}

module.exports = { createContext };
