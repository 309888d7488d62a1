"use strict";
// Compiling and running one cell in the session's context (docs/protocol-js.md, "Cell semantics"). The cell's file
// name is placed in the current working directory, so that its imports resolve from there and its stack frames
// name it (`cell-3.js:2:7`).
const vm = require("node:vm");
const path = require("node:path");
const { transform } = require("./cell-rewrite.js");
const { remember, formatSyntaxError } = require("./errors.js");

/** The cell's code does not compile: `text` is the report (location, the line, a caret, the message). */
class CellSyntaxError extends Error {
  constructor(text) {
    super("syntax error");
    this.text = text;
  }
}

let rt;

function attach(runtime) {
  rt = runtime;
}

function compile(source, file, lineOffset) {
  return new vm.Script(source, {
    filename: file,
    lineOffset,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
}

const isThenable = (v) =>
  v !== null && (typeof v === "object" || typeof v === "function") && typeof v.then === "function";

/** Runs `run.code`: `{shown, value}` (whether the cell has a value to show, and the value). Throws what it threw. */
async function run(r) {
  const file = path.join(process.cwd(), r.filename);
  remember(file, r.filename, r.code);
  const plan = transform(r.code);
  let script;
  let showsValue = plan.showsValue;
  try {
    script = compile(plan.source, file, plan.lineOffset);
  } catch (e) {
    // Our rewrite may have misread valid code: the user's code as is, in the same mode, decides.
    if (plan.fallback === undefined) throw new CellSyntaxError(formatSyntaxError(e, file, r.filename, r.code));
    try {
      script = compile(plan.fallback, file, plan.wrapped ? -1 : 0);
      showsValue = false;
    } catch (e2) {
      throw new CellSyntaxError(formatSyntaxError(e2, file, r.filename, r.code));
    }
  }
  const g = rt.global;
  let value = script.runInContext(g, { displayErrors: false });
  if (plan.wrapped) {
    value = await value.call(g);
    return { shown: value !== undefined, value };
  }
  if (!showsValue) return { shown: false, value: undefined };
  if (isThenable(value)) value = await value;
  return { shown: true, value };
}

module.exports = { attach, run, CellSyntaxError };
