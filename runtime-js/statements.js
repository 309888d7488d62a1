"use strict";
// A cell's top-level statements, read from its tokens (runtime-js/lexer.js): where each one starts and ends (with
// JavaScript's automatic semicolon insertion as V8 applies it), what kind it is, and the names a declaration's
// pattern binds. runtime-js/cell-rewrite.js rewrites the cell from these.
const { EXPRESSION_KEYWORDS } = require("./lexer.js");

/** Statements that end with a block: after its closing `}` a new statement starts (unless else/catch/...). */
const BLOCK_STATEMENTS = new Set(["function", "class", "if", "for", "while", "try", "switch", "with", "{"]);
/** Words after a block statement's `}` that go on with it (a `do`'s block is not one: its `while` always follows). */
const GOES_ON = new Set(["else", "catch", "finally"]);
/** Tokens that go on with the statement after a line break. */
const CONTINUERS = new Set(["else", "catch", "finally", "in", "instanceof"]);
/** `name (` heads whose parenthesis is followed by the statement's body. */
const HEADS = new Set(["if", "for", "while", "with", "switch", "catch", "function"]);
/** What may follow an import's `}` or specifier on the next line and still belong to it. */
const IMPORT_GOES_ON = new Set(["from", "with", "assert"]);
const RESTRICTED = new Set(["return", "break", "continue", "throw", "yield"]);
/** Words that start a statement that is no expression (declarations, classes, functions and imports have kinds
 * of their own). */
const NOT_EXPRESSION = new Set([
  "if",
  "for",
  "while",
  "do",
  "switch",
  "try",
  "return",
  "throw",
  "break",
  "continue",
  "with",
  "debugger",
  "export",
  "else",
  "catch",
  "finally",
  "case",
  "default",
]);

function endsExpression(t) {
  if (t.type !== "punct") return t.type !== "name" || !EXPRESSION_KEYWORDS.has(t.value);
  return t.value === ")" || t.value === "]" || t.value === "}" || t.value === "++" || t.value === "--";
}

function startsStatement(t) {
  if (t.type === "name") return !CONTINUERS.has(t.value);
  if (t.type === "num" || t.type === "str") return true;
  return (
    t.value === "{" || t.value === "++" || t.value === "--" || t.value === "!" || t.value === "~" || t.value === ";"
  );
}

/** Top-level statements as token index ranges `{from, to}` (`to` exclusive), with the kind of each. */
function statements(tokens) {
  const out = [];
  let from = 0;
  let depth = 0;
  /** Depth-0 parentheses of a statement head (`if (...)`): the token after the `)` continues the statement. */
  let headParen = -1;
  let bodyNext = false;
  let classHead = false;
  /** A `do` whose `while` has not come yet: where its body ends (`do x++; while (c)`, or a block), nothing does. */
  let doWaits = false;
  /** A `do`'s `while` came: the `)` of its condition ends the statement, whatever the next line holds. */
  let doCondition = false;
  const close = (to) => {
    doCondition = false;
    bodyNext = false;
    classHead = false;
    headParen = -1;
    if (doWaits) return;
    if (to > from) out.push(describe(tokens, from, to));
    from = to;
  };
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    if (depth === 0 && k > from && t.nl && !bodyNext && !classHead) {
      const p = tokens[k - 1];
      // An import declaration ends with its specifier (or attributes), and only there: whatever the next line
      // holds then starts anew, and before it a line break ends nothing (`import { a }` / `from "x"`).
      if (firstWord(tokens, from) === "import" && isImportDeclaration(tokens, from)) {
        if ((p.type === "str" || p.value === "}") && !IMPORT_GOES_ON.has(t.value)) close(k);
      } else if ((p.type === "name" && RESTRICTED.has(p.value)) || (endsExpression(p) && startsStatement(t))) close(k);
    }
    bodyNext = false;
    if (t.type === "punct") {
      const v = t.value;
      if (v === "(" || v === "[" || v === "{") {
        const head = k > 0 && tokens[k - 1].type === "name" && HEADS.has(tokens[k - 1].value);
        // `do {} while (...)` ends with its condition: no body follows that `while`.
        if (depth === 0 && v === "(" && head && !(tokens[k - 1].value === "while" && firstWord(tokens, from) === "do"))
          headParen = k;
        if (depth === 0 && v === "(" && k > 1 && tokens[k - 2].value === "function" && tokens[k - 1].type === "name")
          headParen = k;
        if (v === "{") classHead = false;
        depth++;
        continue;
      }
      if (v === ")" || v === "]" || v === "}") {
        depth = Math.max(0, depth - 1);
        if (depth === 0 && v === ")" && doCondition) {
          // A `;` after it is the statement's own; otherwise a semicolon is inserted here, as V8 does.
          if (!tokens[k + 1] || tokens[k + 1].value !== ";") close(k + 1);
          continue;
        }
        if (depth === 0 && v === ")" && headParen >= 0) {
          headParen = -1;
          bodyNext = true;
        }
        if (depth === 0 && v === "}" && t.brace === "block" && BLOCK_STATEMENTS.has(firstWord(tokens, from))) {
          const n = tokens[k + 1];
          if (!n || !GOES_ON.has(n.value)) close(k + 1);
        }
        continue;
      }
      if (depth === 0 && v === ";") {
        close(k + 1);
        continue;
      }
    } else if (t.type === "name" && depth === 0) {
      // `else` and `do` need no mark: they take an expression after them, so no statement ends there anyway.
      if (t.value === "try" || t.value === "finally") bodyNext = true;
      if (t.value === "do" && k === from) doWaits = true;
      else if (t.value === "while" && doWaits) {
        doWaits = false;
        doCondition = true;
      }
      if (t.value === "class" && (k === from || tokens[k - 1].value === "=" || tokens[k - 1].value === "("))
        classHead = true;
    }
  }
  close(tokens.length);
  return out;
}

function isImportDeclaration(tokens, from) {
  const n = tokens[from + 1];
  return Boolean(n) && n.value !== "(" && n.value !== ".";
}

/** The word that decides a statement's kind (`async function` counts as `function`). */
function firstWord(tokens, from) {
  const t = tokens[from];
  if (!t) return "";
  if (t.type === "punct") return t.value;
  if (t.type !== "name") return "";
  const n = tokens[from + 1];
  if (t.value === "async" && n && n.value === "function" && !n.nl) return "function";
  return t.value;
}

function describe(tokens, from, to) {
  const t = tokens[from];
  const n = tokens[from + 1];
  const word = firstWord(tokens, from);
  let kind = "expression";
  if (t.type === "punct" && t.value === ";") kind = "empty";
  else if (word === "import")
    kind = isImportDeclaration(tokens, from) ? "import" : "expression"; // or import(), import.meta
  else if (
    word === "const" ||
    word === "var" ||
    (word === "let" && n && (n.type === "name" || n.value === "[" || n.value === "{"))
  )
    kind = "declaration";
  else if (word === "class" || word === "function") kind = word;
  else if (t.type === "punct" && t.value === "{") kind = "block";
  else if (t.type === "name" && NOT_EXPRESSION.has(word)) kind = "statement";
  else if (t.type === "name" && n && n.value === ":" && !n.nl) kind = "statement"; // a label
  return { from, to, kind };
}

// ------------------------------------------------------------------------------------------------ binding names
/** Names bound by a declaration pattern in tokens[from, to). */
function patternNames(tokens, from, to, names) {
  const t = tokens[from];
  if (!t) return;
  if (t.type === "name") {
    names.push(t.value);
    return;
  }
  if (t.value !== "{" && t.value !== "[") return;
  const object = t.value === "{";
  for (const [a, b] of splitTop(tokens, from + 1, matching(tokens, from), ",")) {
    let s = a;
    if (s >= b) continue;
    if (tokens[s].value === "...") {
      patternNames(tokens, s + 1, b, names);
      continue;
    }
    if (object) {
      const colon = findTop(tokens, s, b, ":");
      if (colon < 0) {
        if (tokens[s].type === "name") names.push(tokens[s].value); // shorthand, maybe `= default`
        continue;
      }
      s = colon + 1;
    }
    const eq = findTop(tokens, s, b, "=");
    patternNames(tokens, s, eq < 0 ? b : eq, names);
  }
}

/** Index of the token closing the bracket at `k` (or the end). */
function matching(tokens, k) {
  let depth = 0;
  for (let j = k; j < tokens.length; j++) {
    const v = tokens[j].type === "punct" ? tokens[j].value : "";
    if (v === "(" || v === "[" || v === "{") depth++;
    else if (v === ")" || v === "]" || v === "}") {
      depth--;
      if (depth === 0) return j;
    }
  }
  return tokens.length;
}

/** Ranges of tokens[from, to) split at depth-0 `sep` punctuators. */
function splitTop(tokens, from, to, sep) {
  const parts = [];
  let depth = 0;
  let s = from;
  for (let j = from; j < to; j++) {
    const v = tokens[j].type === "punct" ? tokens[j].value : "";
    if (v === "(" || v === "[" || v === "{") depth++;
    else if (v === ")" || v === "]" || v === "}") depth--;
    else if (depth === 0 && v === sep) {
      parts.push([s, j]);
      s = j + 1;
    }
  }
  parts.push([s, to]);
  return parts;
}

function findTop(tokens, from, to, value) {
  let depth = 0;
  for (let j = from; j < to; j++) {
    const v = tokens[j].type === "punct" ? tokens[j].value : "";
    if (v === "(" || v === "[" || v === "{") depth++;
    else if (v === ")" || v === "]" || v === "}") depth--;
    else if (depth === 0 && v === value) return j;
  }
  return -1;
}

module.exports = { statements, patternNames, matching, splitTop, findTop };
