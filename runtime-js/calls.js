"use strict";
// Nested calls of a cell (docs/protocol-js.md, "Helpers"): `tool.<name>(args)` and completion() become `tool.call`
// frames; `tool.result` frames settle them. A call belongs to the run that made it and ends with it.
const { writeBody } = require("./channel.js");

const MAX_ARGS = 8 << 20;
const MAX_WAITING_CALLS = 1024;

let callSeq = 0;

/** A nested call for `run`: resolves with the result's text; the host's refusals reject. `runtime`: `{current(),
 * errors}`. */
function call(runtime, run, name, args) {
  const errors = runtime.errors;
  if (run !== runtime.current())
    return Promise.reject(new errors.Error(`${name}: the cell that made this call has ended`));
  if (run.aborted) return Promise.reject(run.abortError);
  let json;
  try {
    json = JSON.stringify(args, (k, v) => {
      if (typeof v === "number" && !Number.isFinite(v))
        throw new errors.TypeError(`${name}: ${v} is not valid JSON, so it cannot be passed to a tool`);
      if (typeof v === "bigint")
        throw new errors.TypeError(`${name}: a BigInt cannot be passed to a tool (convert it to a number or a string)`);
      return v;
    });
  } catch (e) {
    return Promise.reject(
      e instanceof errors.TypeError
        ? e
        : new errors.TypeError(`${name}: the arguments cannot be encoded as JSON (${e.message})`),
    );
  }
  if (Buffer.byteLength(json) > MAX_ARGS) {
    return Promise.reject(
      new errors.Error(
        `${name}: the arguments are more than ${MAX_ARGS >> 20} MiB of JSON; pass a path to a file instead`,
      ),
    );
  }
  if (run.calls.size >= MAX_WAITING_CALLS) {
    return Promise.reject(
      new errors.Error(`${name}: ${MAX_WAITING_CALLS} tool calls are already waiting; limit the concurrency`),
    );
  }
  callSeq += 1;
  const id = `c${callSeq}`;
  return new Promise((resolve, reject) => {
    run.calls.set(id, { resolve, reject, name });
    const head = JSON.stringify({ type: "tool.call", id, run: run.id, name });
    writeBody(Buffer.from(`${head.slice(0, -1)},"args":${json}}`, "utf8"));
  });
}

/** A `tool.result` frame for the run executing now (answers to anything else are dropped). */
function answer(runtime, frame) {
  const run = runtime.current();
  const waiting = run && run.id === frame.run ? run.calls.get(frame.id) : undefined;
  if (!waiting) return; // cancelled, or its cell ended: the answer is dropped
  run.calls.delete(frame.id);
  const text = typeof frame.text === "string" ? frame.text : "";
  if (frame.status === "ok") return waiting.resolve(text);
  const e = frame.status === "invalid" ? new runtime.errors.TypeError(text) : new runtime.errors.Error(text);
  e.status = String(frame.status);
  if (frame.status === "blocked") e.name = "ToolBlockedError";
  waiting.reject(e);
}

module.exports = { call, answer };
