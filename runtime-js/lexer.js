"use strict";
// A small JavaScript tokenizer: enough to find a cell's top-level statements (runtime-js/cell-rewrite.js). Strings,
// template literals (their `${}` parts included), regular expressions and comments are single tokens or skipped, so
// nothing inside them is mistaken for code. It never throws: an unterminated literal ends the token list and sets
// `broken` (V8 then reports the real syntax error).

/** Keywords after which `/` starts a regular expression and `{` an object literal. */
const EXPRESSION_KEYWORDS = new Set([
  "return",
  "typeof",
  "instanceof",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "case",
  "do",
  "else",
  "yield",
  "await",
  "extends",
]);

const PUNCTUATORS = [
  ">>>=",
  "...",
  "===",
  "!==",
  "**=",
  "<<=",
  ">>=",
  ">>>",
  "&&=",
  "||=",
  "??=",
  "=>",
  "==",
  "!=",
  "<=",
  ">=",
  "&&",
  "||",
  "??",
  "?.",
  "++",
  "--",
  "+=",
  "-=",
  "*=",
  "/=",
  "%=",
  "&=",
  "|=",
  "^=",
  "**",
  "<<",
  ">>",
];

const isLineBreak = (c) => c === 10 || c === 13 || c === 0x2028 || c === 0x2029;
const isSpace = (c) =>
  c === 32 ||
  c === 9 ||
  c === 11 ||
  c === 12 ||
  c === 0xa0 ||
  c === 0xfeff ||
  (c > 0x1000 && /\s/.test(String.fromCharCode(c)));
const isIdentStart = (c) =>
  (c >= 97 && c <= 122) ||
  (c >= 65 && c <= 90) ||
  c === 36 ||
  c === 95 ||
  c === 92 ||
  (c > 127 && !isSpace(c) && !isLineBreak(c));
const isIdentPart = (c) => isIdentStart(c) || (c >= 48 && c <= 57);
const isDigit = (c) => c >= 48 && c <= 57;
const NUMBER = /(?:0[xXoObB][0-9a-fA-F_]+n?|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?n?)/y;

/**
 * Tokens: `{type, value, start, end, nl}` with type `name` (identifiers and keywords), `num`, `str`, `tpl`, `regex`
 * or `punct`; `nl` says a line break came before the token. `{`/`}` tokens get `brace: "block" | "expr"`.
 */
function tokenize(src) {
  const tokens = [];
  const state = { src, i: 0, broken: false };
  lex(state, tokens, false);
  return { tokens, broken: state.broken };
}

/** Lexes from state.i; with `untilBrace`, stops after the `}` that closes a template's `${` (returns true). */
function lex(state, tokens, untilBrace) {
  const src = state.src;
  const n = src.length;
  let depth = 0;
  let nl = false;
  const braces = [];
  if (!untilBrace && src.startsWith("#!")) {
    while (state.i < n && !isLineBreak(src.charCodeAt(state.i))) state.i++;
  }
  while (state.i < n) {
    const i = state.i;
    const c = src.charCodeAt(i);
    if (isLineBreak(c)) {
      nl = true;
      state.i++;
      continue;
    }
    if (isSpace(c)) {
      state.i++;
      continue;
    }
    const next = src.charCodeAt(i + 1);
    if (c === 47 /* / */ && next === 47) {
      while (state.i < n && !isLineBreak(src.charCodeAt(state.i))) state.i++;
      continue;
    }
    if (c === 47 && next === 42 /* * */) {
      const end = src.indexOf("*/", i + 2);
      if (end < 0) {
        state.broken = true;
        state.i = n;
        return false;
      }
      if (/[\n\r\u2028\u2029]/.test(src.slice(i + 2, end))) nl = true;
      state.i = end + 2;
      continue;
    }
    const prev = tokens.length ? tokens[tokens.length - 1] : undefined;
    const push = (type, value, end, extra) => {
      const t = { type, value, start: i, end, nl };
      if (extra) Object.assign(t, extra);
      tokens.push(t);
      nl = false;
      state.i = end;
      return t;
    };
    if (c === 34 || c === 39) {
      const end = skipString(src, i, c);
      if (end < 0) return fail(state);
      push("str", src.slice(i, end), end);
      continue;
    }
    if (c === 96 /* ` */) {
      state.i = i + 1;
      if (!skipTemplate(state)) return fail(state);
      push("tpl", src.slice(i, state.i), state.i);
      continue;
    }
    if (isIdentStart(c) || (c === 35 /* # */ && isIdentStart(next))) {
      let j = i + 1;
      while (j < n && isIdentPart(src.charCodeAt(j))) j += src.charCodeAt(j) === 92 ? 2 : 1;
      push("name", src.slice(i, j), j);
      continue;
    }
    if (isDigit(c) || (c === 46 && isDigit(next))) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(src);
      push("num", m ? m[0] : src[i], i + (m ? m[0].length : 1));
      continue;
    }
    if (c === 47 && regexAllowed(prev)) {
      const end = skipRegex(src, i);
      if (end < 0) return fail(state);
      push("regex", src.slice(i, end), end);
      continue;
    }
    if (c === 123 /* { */) {
      braces.push(braceKind(prev, tokens));
      depth++;
      push("punct", "{", i + 1, { brace: braces[braces.length - 1] });
      continue;
    }
    if (c === 125 /* } */) {
      if (untilBrace && depth === 0) {
        state.i = i + 1;
        return true;
      }
      depth--;
      push("punct", "}", i + 1, { brace: braces.pop() || "block" });
      continue;
    }
    let p = "";
    for (const cand of PUNCTUATORS) {
      if (src.startsWith(cand, i) && !(cand === "?." && isDigit(src.charCodeAt(i + 2)))) {
        p = cand;
        break;
      }
    }
    push("punct", p || src[i], i + (p ? p.length : 1));
  }
  if (untilBrace) return fail(state);
  return true;
}

function fail(state) {
  state.broken = true;
  state.i = state.src.length;
  return false;
}

function skipString(src, i, quote) {
  for (let j = i + 1; j < src.length; j++) {
    const c = src.charCodeAt(j);
    if (c === 92) j++;
    else if (c === quote) return j + 1;
    else if (c === 10 || c === 13) return -1;
  }
  return -1;
}

/** From just after an opening backtick to just after the closing one; `${...}` parts are lexed recursively. */
function skipTemplate(state) {
  const src = state.src;
  while (state.i < src.length) {
    const c = src.charCodeAt(state.i);
    if (c === 92) state.i += 2;
    else if (c === 96) {
      state.i++;
      return true;
    } else if (c === 36 && src.charCodeAt(state.i + 1) === 123) {
      state.i += 2;
      if (!lex(state, [], true)) return false;
    } else state.i++;
  }
  return false;
}

function skipRegex(src, i) {
  let inClass = false;
  let j = i + 1;
  for (; j < src.length; j++) {
    const c = src.charCodeAt(j);
    if (c === 92) j++;
    else if (c === 10 || c === 13) return -1;
    else if (c === 91) inClass = true;
    else if (c === 93) inClass = false;
    else if (c === 47 && !inClass) break;
  }
  if (j >= src.length) return -1;
  j++;
  while (j < src.length && isIdentPart(src.charCodeAt(j))) j++;
  return j;
}

function regexAllowed(prev) {
  if (!prev) return true;
  switch (prev.type) {
    case "name":
      return EXPRESSION_KEYWORDS.has(prev.value);
    case "num":
    case "str":
    case "tpl":
    case "regex":
      return false;
    default:
      if (prev.value === "}") return prev.brace === "block";
      return !(prev.value === ")" || prev.value === "]" || prev.value === "++" || prev.value === "--");
  }
}

/** A `{` opens an object literal where an expression is expected, else a block (or a class or function body). */
function braceKind(prev) {
  if (!prev) return "block";
  if (prev.type === "name")
    return EXPRESSION_KEYWORDS.has(prev.value) && prev.value !== "do" && prev.value !== "else" ? "expr" : "block";
  if (prev.type !== "punct") return "block";
  if (prev.value === ")" || prev.value === ";" || prev.value === "=>" || prev.value === "}") return "block";
  if (prev.value === "]") return "block";
  return "expr";
}

module.exports = { tokenize, EXPRESSION_KEYWORDS };
