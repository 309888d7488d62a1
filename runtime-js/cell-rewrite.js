"use strict";
// What a cell's code becomes before V8 compiles it (docs/protocol-js.md, "Cell semantics"). Top-level declarations
// must outlive the cell and may be repeated in later cells, as in a REPL: `const`/`let`/`class` become `var`s of the
// context (a function declaration already is one). A cell that awaits at top level, returns, or has static imports
// runs as an async function; its declarations are then hoisted as `var`s in front of it and turned into
// assignments inside it, and its imports into `import()` calls. Line numbers never move: edits stay on their line
// (and the wrapper's first line is compiled with lineOffset -1), so errors point at the user's lines.
const { tokenize } = require("./lexer.js");
const { statements, patternNames, matching, splitTop, findTop } = require("./statements.js");

// ------------------------------------------------------------------------------------------------ imports
/** `import ...` statement -> `{names, text}`: the assignment that replaces it, or undefined when it is malformed. */
function rewriteImport(src, tokens, st) {
  let k = st.from + 1;
  const end = tokens[st.to - 1] && tokens[st.to - 1].value === ";" ? st.to - 1 : st.to;
  let def;
  let ns;
  const named = [];
  const at = (j) => tokens[j] || { type: "eof", value: "" };
  if (at(k).type !== "str") {
    if (at(k).type === "name") {
      def = at(k).value;
      k++;
      if (at(k).value === ",") k++;
      else if (at(k).value !== "from") return undefined;
    }
    if (at(k).value === "*") {
      if (at(k + 1).value !== "as" || at(k + 2).type !== "name") return undefined;
      ns = at(k + 2).value;
      k += 3;
    } else if (at(k).value === "{") {
      const close = matching(tokens, k);
      for (const [a, b] of splitTop(tokens, k + 1, close, ",")) {
        if (a >= b) continue;
        const imported = tokens[a];
        let local = imported;
        if (b - a === 3 && tokens[a + 1].value === "as") local = tokens[a + 2];
        else if (b - a !== 1) return undefined;
        if (local.type !== "name") return undefined;
        named.push([imported.type === "str" ? imported.value : imported.value, local.value]);
      }
      k = close + 1;
    }
    if (at(k).value !== "from") return undefined;
    k++;
  }
  if (at(k).type !== "str") return undefined;
  const spec = at(k).value;
  k++;
  let options = "";
  if ((at(k).value === "with" || at(k).value === "assert") && at(k + 1).value === "{") {
    const close = matching(tokens, k + 1);
    options = `, { with: ${src.slice(tokens[k + 1].start, tokens[close].end)} }`;
    k = close + 1;
  }
  if (k !== end) return undefined;
  const call = `await import(${spec}${options})`;
  const names = [];
  let text;
  if (ns) {
    names.push(ns);
    text = `${ns} = ${call}`;
    if (def) {
      names.push(def);
      text += `, ${def} = ${ns}.default`;
    }
  } else if (named.length || def) {
    const props = named.map(([imported, local]) => (imported === local ? local : `${imported}: ${local}`));
    if (def) props.unshift(`default: ${def}`);
    names.push(...named.map(([, local]) => local));
    if (def) names.push(def);
    text = `({ ${props.join(", ")} } = ${call})`;
  } else {
    text = call;
  }
  // The leading `;` keeps the line above from going on into this one (it ended the statement as `import` did).
  return { names, text: `;${text};` };
}

// ------------------------------------------------------------------------------------------------ the transform
/** Replaces [start, end) with `text`, padded with the line breaks it removes so that lines keep their numbers. */
function edit(edits, start, end, text, src) {
  const lost = (src.slice(start, end).match(/\r\n|[\n\r\u2028\u2029]/g) || []).length;
  edits.push({ start, end, text: text + "\n".repeat(lost) });
}

function apply(src, edits) {
  edits.sort((a, b) => a.start - b.start || a.end - b.end);
  let out = "";
  let at = 0;
  for (const e of edits) {
    out += src.slice(at, e.start) + e.text;
    at = e.end;
  }
  return out + src.slice(at);
}

/**
 * The plan for one cell: `{source, lineOffset, wrapped, showsValue, fallback}`. `source` compiles as a script: in
 * script mode its completion value is the trailing expression's (when `showsValue`); wrapped, it evaluates to an
 * async function to call with the context's global as `this`. `fallback` is the untouched code in the same mode,
 * for when a misread of ours made `source` fail to compile while the user's code is fine.
 */
function transform(code) {
  const { tokens, broken } = tokenize(code);
  const plain = (wrapped) => ({
    source: wrapped ? `(async function () {\n${code}\n})` : code,
    lineOffset: wrapped ? -1 : 0,
    wrapped,
    showsValue: false,
  });
  if (broken) return { ...plain(/\bawait\b|\breturn\b/.test(code)), fallback: undefined };
  const list = statements(tokens);
  const wrapped =
    list.some((s) => s.kind === "import") ||
    tokens.some(
      (t, k) =>
        t.type === "name" &&
        t.value === "await" &&
        !(k > 0 && (tokens[k - 1].value === "." || tokens[k - 1].value === "?.")),
    ) ||
    topLevelReturn(tokens);
  const edits = [];
  const hoisted = [];
  const published = [];
  let last;
  for (const st of list) if (st.kind !== "empty") last = st;
  for (const st of list) {
    const first = tokens[st.from];
    if (st.kind === "import" && wrapped) {
      const r = rewriteImport(code, tokens, st);
      if (!r) continue;
      hoisted.push(...r.names);
      edit(edits, first.start, tokens[st.to - 1].end, r.text, code);
    } else if (st.kind === "declaration") {
      declaration(code, tokens, st, wrapped, edits, hoisted);
    } else if (st.kind === "class") {
      const name = tokens[st.from + 1];
      if (!name || name.type !== "name" || name.value === "extends") continue;
      const end = tokens[st.to - 1];
      if (wrapped) {
        hoisted.push(name.value);
        edits.push({ start: first.start, end: first.start, text: `;${name.value} = ` });
      } else {
        edits.push({ start: first.start, end: first.start, text: `var ${name.value} = ` });
      }
      edits.push({ start: end.end, end: end.end, text: ";" });
    } else if (st.kind === "function" && wrapped) {
      const at = first.value === "async" ? st.from + 2 : st.from + 1;
      let nameTok = tokens[at];
      if (nameTok && nameTok.value === "*") nameTok = tokens[at + 1];
      if (nameTok && nameTok.type === "name") {
        hoisted.push(nameTok.value);
        published.push(nameTok.value);
      }
    }
  }
  const showsValue = Boolean(last && last.kind === "expression");
  if (wrapped && showsValue) {
    const lastTok = tokens[last.to - 1];
    const endTok = lastTok.value === ";" && last.to - 1 > last.from ? tokens[last.to - 2] : lastTok;
    edits.push({ start: tokens[last.from].start, end: tokens[last.from].start, text: "return (" });
    edits.push({ start: endTok.end, end: endTok.end, text: ")" });
  }
  const body = apply(code, edits);
  if (!wrapped) return { source: body, lineOffset: 0, wrapped, showsValue, fallback: edits.length ? code : undefined };
  const names = [...new Set(hoisted)];
  const head = names.length ? `var ${names.join(", ")}; ` : "";
  const publish = published.map((n) => `this.${n} = ${n}; `).join("");
  return {
    source: `${head}(async function () { ${publish}\n${body}\n})`,
    lineOffset: -1,
    wrapped,
    showsValue,
    fallback: `(async function () {\n${code}\n})`,
  };
}

/** Words whose parenthesis is followed by a block, not a function's body (`for await (...)` included). */
const BLOCK_HEADS = new Set(["if", "for", "while", "switch", "catch", "with", "await"]);

/** A top-level `return`: outside every function body, though maybe inside blocks (`if (x) { return 1 }`). A `{` opens
 * a function's body after `=>`, or after a `)` whose `(` follows no block head (a function's or method's parameters). */
function topLevelReturn(tokens) {
  const bodies = []; // per open bracket: whether it is a function's body
  const parens = []; // token indexes of the open parentheses
  let closedParen = -1; // the `(` of the last `)`
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    if (t.type === "name") {
      if (t.value === "return" && !bodies.includes(true)) return true;
      continue;
    }
    if (t.type !== "punct") continue;
    const v = t.value;
    if (v === "(") parens.push(k);
    if (v === "(" || v === "[") bodies.push(false);
    else if (v === "{") {
      const p = tokens[k - 1];
      const head = p && p.value === ")" ? tokens[closedParen - 1] : undefined;
      bodies.push(Boolean(p && (p.value === "=>" || (p.value === ")" && !(head && BLOCK_HEADS.has(head.value))))));
    } else if (v === ")" || v === "]" || v === "}") {
      bodies.pop();
      if (v === ")") closedParen = parens.pop() ?? -1;
    }
  }
  return false;
}

/** `const|let|var declarators`: script mode turns the keyword into `var`; wrapped, into assignments (hoisted). */
function declaration(src, tokens, st, wrapped, edits, hoisted) {
  const kw = tokens[st.from];
  if (!wrapped) {
    if (kw.value !== "var") edits.push({ start: kw.start, end: kw.end, text: "var".padEnd(kw.value.length) });
    return;
  }
  const hasSemi = tokens[st.to - 1].value === ";" && st.to - 1 > st.from;
  const end = hasSemi ? st.to - 1 : st.to;
  const names = [];
  for (const [a, b] of splitTop(tokens, st.from + 1, end, ",")) {
    if (a >= b) continue;
    const eq = findTop(tokens, a, b, "=");
    patternNames(tokens, a, eq < 0 ? b : eq, names);
    if (eq < 0 && kw.value !== "var" && tokens[a].type === "name") {
      edits.push({ start: tokens[b - 1].end, end: tokens[b - 1].end, text: " = undefined" });
    }
  }
  if (!names.length) return;
  hoisted.push(...names);
  // `;(` in place of the keyword: a statement still starts here (the line above cannot go on into it).
  edits.push({ start: kw.start, end: kw.end, text: ";(".padEnd(kw.value.length) });
  const last = tokens[end - 1];
  edits.push({ start: last.end, end: last.end, text: hasSemi ? ")" : ");" });
}

module.exports = { transform };
