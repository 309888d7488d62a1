"use strict";
// Imports of cells (docs/protocol-js.md, "Imports"). A cell's `import()` goes to Node's own ESM loader with the
// cell's file (in the session's working directory) as referrer, so specifiers resolve as they would from a module
// there. Local files (anything outside node_modules) are loaded anew by each cell that imports them: a resolve hook
// tags their URLs with the importing cell's generation, and their imports inherit it, so one cell sees one
// consistent graph and the next cell sees the files as they are then. Packages and `node:` modules keep one instance.
const Module = require("node:module");
const path = require("node:path");
const { fileURLToPath } = require("node:url");

const RUNNER_DIR = __dirname + path.sep;
const PARAM = "pcs-cell";

let generation = 0;
let hooked = false;
/** A local CommonJS file was loaded through an import: its require() cache entries must go at the next cell. */
let localLoaded = false;

const isLocal = (file) => !file.includes(`${path.sep}node_modules${path.sep}`) && !file.startsWith(RUNNER_DIR);

function resolve(specifier, context, nextResolve) {
  const result = nextResolve(specifier, context);
  // require() keeps Node's cache semantics; only imports are versioned.
  if (!context.conditions || !context.conditions.includes("import")) return result;
  if (typeof result.url !== "string" || !result.url.startsWith("file:")) return result;
  const url = new URL(result.url);
  if (url.searchParams.has(PARAM)) return result;
  let file;
  try {
    file = fileURLToPath(url);
  } catch {
    return result;
  }
  if (!isLocal(file)) return result;
  let tag = String(generation);
  if (typeof context.parentURL === "string" && context.parentURL.startsWith("file:")) {
    const inherited = new URL(context.parentURL).searchParams.get(PARAM);
    if (inherited) tag = inherited;
  }
  url.searchParams.set(PARAM, tag);
  localLoaded = true;
  return { ...result, url: url.href };
}

/** Called as each cell starts: its imports of local files load them anew. */
function nextGeneration() {
  generation += 1;
  if (!hooked && typeof Module.registerHooks === "function") {
    hooked = true;
    Module.registerHooks({ resolve });
  }
  if (localLoaded) {
    localLoaded = false;
    // A local CommonJS module imported again re-runs only if require's cache forgot it (and its local requires).
    for (const key of Object.keys(require.cache)) if (isLocal(key)) delete require.cache[key];
  }
}

/** `require` for cells: resolves from the current working directory, like a module there. */
function cellRequire() {
  let base = "";
  let req;
  const get = () => {
    const cwd = process.cwd();
    if (cwd !== base) {
      base = cwd;
      req = Module.createRequire(path.join(cwd, "[cell]"));
    }
    return req;
  };
  const require = (id) => get()(id);
  require.resolve = (id, options) => get().resolve(id, options);
  require.resolve.paths = (id) => get().resolve.paths(id);
  Object.defineProperty(require, "cache", { get: () => Module._cache, enumerable: true });
  Object.defineProperty(require, "main", { get: () => undefined, enumerable: true });
  return require;
}

module.exports = { nextGeneration, cellRequire, isLocal };
