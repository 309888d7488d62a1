"use strict";
// How a cell's error reads (docs/protocol-js.md, "Errors"): the stack is cut after the outermost frame of a cell,
// runner frames are dropped, cells are named by their file name (`cell-3.js:2:7`), and the cell line that threw is
// shown with a caret, as Node shows an uncaught error.
const path = require("node:path");
const util = require("node:util");

const RUNNER_DIR = __dirname + path.sep;
const FRAME = /^\s+at (?:(.*?) \()?(.+?):(\d+):(\d+)\)?$/;

/** The cells compiled so far: full path -> {name, lines}. */
const cells = new Map();

function remember(file, name, code) {
  cells.set(file, { name, lines: code.split(/\r\n|[\n\r\u2028\u2029]/) });
}

function fileOf(location) {
  return location.startsWith("file://") ? decodeURIComponent(location.slice(7).split("?")[0]) : location;
}

function parseFrame(line) {
  const m = FRAME.exec(line);
  if (!m) return { line, file: "" };
  return { line, fn: m[1], file: fileOf(m[2]), at: m[2], row: Number(m[3]), col: Number(m[4]) };
}

const ownFrame = (f) => f.file.startsWith(RUNNER_DIR);

/** The text of an uncaught value: a trimmed stack for errors, util.inspect for anything else. */
function formatError(value, prefix = "") {
  let stack;
  try {
    stack = isErrorLike(value) ? value.stack : undefined;
  } catch {
    stack = undefined;
  }
  if (typeof stack !== "string" || !stack) return `${prefix}${inspect(value)}\n`;
  const lines = stack.split("\n");
  let k = lines.findIndex((l) => /^\s+at /.test(l));
  if (k < 0) k = lines.length;
  const head = lines.slice(0, k).join("\n");
  const frames = lines.slice(k).map(parseFrame);
  let last = -1;
  frames.forEach((f, i) => {
    if (cells.has(f.file)) last = i;
  });
  // Without a cell frame (a module's timer, Node's own code), only frames of user files are worth showing.
  const kept = (
    last >= 0 ? frames.slice(0, last + 1) : frames.filter((f) => f.file && !f.file.startsWith("node:"))
  ).filter((f) => !ownFrame(f) && !/^node:vm\b/.test(f.file));
  const top = kept.find((f) => cells.has(f.file));
  const out = [];
  if (top) out.push(...snippet(top));
  out.push(prefix + head);
  for (const f of kept) {
    const cell = cells.get(f.file);
    out.push(cell ? f.line.replace(f.at, cell.name) : f.line);
  }
  return out.join("\n") + "\n";
}

/** `cell-3.js:2`, the source line, a caret under the column. */
function snippet(frame) {
  const cell = cells.get(frame.file);
  const text = cell && cell.lines[frame.row - 1];
  if (text === undefined) return [];
  return [`${cell.name}:${frame.row}`, text, `${" ".repeat(Math.max(0, frame.col - 1))}^`, ""];
}

/** A compile error of a cell: V8's location, with the user's own line (not our rewrite of it) above the caret. */
function formatSyntaxError(err, file, name, code) {
  const stack = String((err && err.stack) || err);
  const lines = stack.split("\n");
  const where = new RegExp(`^${escape(file)}:(\\d+)$`).exec(lines[0]);
  const message = lines.find((l) => /^\w*Error: /.test(l)) || `${err.name}: ${err.message}`;
  if (!where) return `${message}\n`;
  const row = Number(where[1]);
  const source = code.split(/\r\n|[\n\r\u2028\u2029]/)[row - 1];
  const caret = lines[2] !== undefined && /^\s*\^+\s*$/.test(lines[2]) ? lines[2] : "";
  return [`${name}:${row}`, source === undefined ? lines[1] : source, caret, "", message].join("\n") + "\n";
}

function escape(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function isErrorLike(v) {
  return v !== null && typeof v === "object" && (util.types.isNativeError(v) || typeof v.stack === "string");
}

function inspect(v) {
  try {
    return util.inspect(v, { depth: 4 });
  } catch (e) {
    return `[a value that cannot be shown: ${e && e.message}]`;
  }
}

module.exports = { remember, formatError, formatSyntaxError, inspect, cells };
