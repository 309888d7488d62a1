'use strict';
// What a cell's code becomes before V8 compiles it (docs/protocol-js.md, "Cell semantics"). Top-level declarations
// must outlive the cell and may be repeated in later cells, as in a REPL: `const`/`let`/`class` become `var`s of the
// context (a function declaration already is one). A cell that awaits at top level, returns, or has static imports
// runs as an async function; its declarations are then hoisted as `var`s in front of it and turned into
// assignments inside it, and its imports into `import()` calls. Line numbers never move: edits stay on their line
// (and the wrapper's first line is compiled with lineOffset -1), so errors point at the user's lines.
const { tokenize, EXPRESSION_KEYWORDS } = require('./lexer.js');

/** Statements that end with a block: after its closing `}` a new statement starts (unless else/catch/...). */
const BLOCK_STATEMENTS = new Set(['function', 'class', 'if', 'for', 'while', 'try', 'switch', 'with', 'do', '{']);
/** Tokens that go on with the statement after a line break. */
const CONTINUERS = new Set(['else', 'catch', 'finally', 'in', 'instanceof', 'of']);
/** `name (` heads whose parenthesis is followed by the statement's body. */
const HEADS = new Set(['if', 'for', 'while', 'with', 'switch', 'catch', 'function']);
const RESTRICTED = new Set(['return', 'break', 'continue', 'throw', 'yield']);
const NOT_EXPRESSION = new Set([
  'if', 'for', 'while', 'do', 'switch', 'try', 'return', 'throw', 'break', 'continue', 'with', 'debugger', 'var',
  'let', 'const', 'class', 'function', 'import', 'export', 'else', 'catch', 'finally', 'case', 'default',
]);

function endsExpression(t) {
  if (t.type !== 'punct') return t.type !== 'name' || !EXPRESSION_KEYWORDS.has(t.value) || t.value === 'this';
  return t.value === ')' || t.value === ']' || t.value === '}' || t.value === '++' || t.value === '--';
}

function startsStatement(t) {
  if (t.type === 'name') return !CONTINUERS.has(t.value);
  if (t.type === 'num' || t.type === 'str') return true;
  return t.value === '{' || t.value === '++' || t.value === '--' || t.value === '!' || t.value === '~' || t.value === ';';
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
  const close = (to) => {
    if (to > from) out.push(describe(tokens, from, to));
    from = to;
    bodyNext = false;
    classHead = false;
    headParen = -1;
  };
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    if (depth === 0 && k > from && t.nl && !bodyNext && !classHead) {
      const p = tokens[k - 1];
      // An import declaration ends with its specifier (or attributes): whatever the next line holds starts anew.
      const importEnd = firstWord(tokens, from) === 'import' && isImportDeclaration(tokens, from) &&
        (p.type === 'str' || p.value === '}') && t.value !== 'with' && t.value !== 'assert' && t.value !== 'from';
      if (importEnd || (p.type === 'name' && RESTRICTED.has(p.value)) || (endsExpression(p) && startsStatement(t))) close(k);
    }
    bodyNext = false;
    if (t.type === 'punct') {
      const v = t.value;
      if (v === '(' || v === '[' || v === '{') {
        const head = k > 0 && tokens[k - 1].type === 'name' && HEADS.has(tokens[k - 1].value);
        // `do {} while (...)` ends with its condition: no body follows that `while`.
        if (depth === 0 && v === '(' && head && !(tokens[k - 1].value === 'while' && firstWord(tokens, from) === 'do')) headParen = k;
        if (depth === 0 && v === '(' && k > 1 && tokens[k - 2].value === 'function' && tokens[k - 1].type === 'name') headParen = k;
        if (v === '{') classHead = false;
        depth++;
        continue;
      }
      if (v === ')' || v === ']' || v === '}') {
        depth = Math.max(0, depth - 1);
        if (depth === 0 && v === ')' && headParen >= 0) {
          headParen = -1;
          bodyNext = true;
        }
        if (depth === 0 && v === '}' && t.brace === 'block' && BLOCK_STATEMENTS.has(firstWord(tokens, from))) {
          const n = tokens[k + 1];
          const goesOn = n && n.type === 'name' && (n.value === 'else' || n.value === 'catch' || n.value === 'finally' ||
            (n.value === 'while' && firstWord(tokens, from) === 'do'));
          if (!goesOn) close(k + 1);
        }
        continue;
      }
      if (depth === 0 && v === ';') {
        close(k + 1);
        continue;
      }
      if (depth === 0 && v === '=>') bodyNext = true;
    } else if (t.type === 'name' && depth === 0) {
      if (t.value === 'else' || t.value === 'do' || t.value === 'try' || t.value === 'finally') bodyNext = true;
      if (t.value === 'class' && (k === from || tokens[k - 1].value === '=' || tokens[k - 1].value === '(')) classHead = true;
    }
  }
  close(tokens.length);
  return out;
}

function isImportDeclaration(tokens, from) {
  const n = tokens[from + 1];
  return Boolean(n) && n.value !== '(' && n.value !== '.';
}

/** The word that decides a statement's kind (`async function` counts as `function`). */
function firstWord(tokens, from) {
  const t = tokens[from];
  if (!t) return '';
  if (t.type === 'punct') return t.value;
  if (t.type !== 'name') return '';
  const n = tokens[from + 1];
  if (t.value === 'async' && n && n.value === 'function' && !n.nl) return 'function';
  return t.value;
}

function describe(tokens, from, to) {
  const t = tokens[from];
  const n = tokens[from + 1];
  const word = firstWord(tokens, from);
  let kind = 'expression';
  if (t.type === 'punct' && t.value === ';') kind = 'empty';
  else if (word === 'import' && !(n && (n.value === '(' || n.value === '.'))) kind = 'import';
  else if (word === 'const' || word === 'var' || (word === 'let' && n && (n.type === 'name' || n.value === '[' || n.value === '{')))
    kind = 'declaration';
  else if (word === 'class' || word === 'function') kind = word;
  else if (t.type === 'punct' && t.value === '{') kind = 'block';
  else if (t.type === 'name' && NOT_EXPRESSION.has(word)) kind = 'statement';
  else if (t.type === 'name' && n && n.value === ':' && !n.nl) kind = 'statement'; // a label
  return { from, to, kind };
}

// ------------------------------------------------------------------------------------------------ binding names
/** Names bound by a declaration pattern in tokens[from, to). */
function patternNames(tokens, from, to, names) {
  const t = tokens[from];
  if (!t) return;
  if (t.type === 'name') {
    names.push(t.value);
    return;
  }
  if (t.value !== '{' && t.value !== '[') return;
  const object = t.value === '{';
  for (const [a, b] of splitTop(tokens, from + 1, matching(tokens, from), ',')) {
    let s = a;
    if (s >= b) continue;
    if (tokens[s].value === '...') {
      patternNames(tokens, s + 1, b, names);
      continue;
    }
    if (object) {
      const colon = findTop(tokens, s, b, ':');
      if (colon < 0) {
        if (tokens[s].type === 'name') names.push(tokens[s].value); // shorthand, maybe `= default`
        continue;
      }
      s = colon + 1;
    }
    const eq = findTop(tokens, s, b, '=');
    patternNames(tokens, s, eq < 0 ? b : eq, names);
  }
}

/** Index of the token closing the bracket at `k` (or the end). */
function matching(tokens, k) {
  let depth = 0;
  for (let j = k; j < tokens.length; j++) {
    const v = tokens[j].type === 'punct' ? tokens[j].value : '';
    if (v === '(' || v === '[' || v === '{') depth++;
    else if (v === ')' || v === ']' || v === '}') {
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
    const v = tokens[j].type === 'punct' ? tokens[j].value : '';
    if (v === '(' || v === '[' || v === '{') depth++;
    else if (v === ')' || v === ']' || v === '}') depth--;
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
    const v = tokens[j].type === 'punct' ? tokens[j].value : '';
    if (v === '(' || v === '[' || v === '{') depth++;
    else if (v === ')' || v === ']' || v === '}') depth--;
    else if (depth === 0 && v === value) return j;
  }
  return -1;
}

// ------------------------------------------------------------------------------------------------ imports
/** `import ...` statement -> `{names, text}`: the assignment that replaces it, or undefined when it is malformed. */
function rewriteImport(src, tokens, st) {
  let k = st.from + 1;
  const end = tokens[st.to - 1] && tokens[st.to - 1].value === ';' ? st.to - 1 : st.to;
  let def;
  let ns;
  const named = [];
  const at = (j) => tokens[j] || { type: 'eof', value: '' };
  if (at(k).type !== 'str') {
    if (at(k).type === 'name') {
      def = at(k).value;
      k++;
      if (at(k).value === ',') k++;
      else if (at(k).value !== 'from') return undefined;
    }
    if (at(k).value === '*') {
      if (at(k + 1).value !== 'as' || at(k + 2).type !== 'name') return undefined;
      ns = at(k + 2).value;
      k += 3;
    } else if (at(k).value === '{') {
      const close = matching(tokens, k);
      for (const [a, b] of splitTop(tokens, k + 1, close, ',')) {
        if (a >= b) continue;
        const imported = tokens[a];
        let local = imported;
        if (b - a === 3 && tokens[a + 1].value === 'as') local = tokens[a + 2];
        else if (b - a !== 1) return undefined;
        if (local.type !== 'name') return undefined;
        named.push([imported.type === 'str' ? imported.value : imported.value, local.value]);
      }
      k = close + 1;
    }
    if (at(k).value !== 'from') return undefined;
    k++;
  }
  if (at(k).type !== 'str') return undefined;
  const spec = at(k).value;
  k++;
  let options = '';
  if ((at(k).value === 'with' || at(k).value === 'assert') && at(k + 1).value === '{') {
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
    text = `({ ${props.join(', ')} } = ${call})`;
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
  edits.push({ start, end, text: text + '\n'.repeat(lost) });
}

function apply(src, edits) {
  edits.sort((a, b) => a.start - b.start || a.end - b.end);
  let out = '';
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
    list.some((s) => s.kind === 'import') ||
    tokens.some((t, k) => t.type === 'name' && t.value === 'await' && !(k > 0 && (tokens[k - 1].value === '.' || tokens[k - 1].value === '?.'))) ||
    topLevelReturn(tokens);
  const edits = [];
  const hoisted = [];
  const published = [];
  let last;
  for (const st of list) if (st.kind !== 'empty') last = st;
  for (const st of list) {
    const first = tokens[st.from];
    if (st.kind === 'import' && wrapped) {
      const r = rewriteImport(code, tokens, st);
      if (!r) continue;
      hoisted.push(...r.names);
      edit(edits, first.start, tokens[st.to - 1].end, r.text, code);
    } else if (st.kind === 'declaration') {
      declaration(code, tokens, st, wrapped, edits, hoisted);
    } else if (st.kind === 'class') {
      const name = tokens[st.from + 1];
      if (!name || name.type !== 'name' || name.value === 'extends') continue;
      const end = tokens[st.to - 1];
      if (wrapped) {
        hoisted.push(name.value);
        edits.push({ start: first.start, end: first.start, text: `;${name.value} = ` });
      } else {
        edits.push({ start: first.start, end: first.start, text: `var ${name.value} = ` });
      }
      edits.push({ start: end.end, end: end.end, text: ';' });
    } else if (st.kind === 'function' && wrapped) {
      const at = first.value === 'async' ? st.from + 2 : st.from + 1;
      let nameTok = tokens[at];
      if (nameTok && nameTok.value === '*') nameTok = tokens[at + 1];
      if (nameTok && nameTok.type === 'name') {
        hoisted.push(nameTok.value);
        published.push(nameTok.value);
      }
    }
  }
  const showsValue = Boolean(last && last.kind === 'expression');
  if (wrapped && showsValue) {
    const lastTok = tokens[last.to - 1];
    const endTok = lastTok.value === ';' && last.to - 1 > last.from ? tokens[last.to - 2] : lastTok;
    edits.push({ start: tokens[last.from].start, end: tokens[last.from].start, text: 'return (' });
    edits.push({ start: endTok.end, end: endTok.end, text: ')' });
  }
  const body = apply(code, edits);
  if (!wrapped) return { source: body, lineOffset: 0, wrapped, showsValue, fallback: edits.length ? code : undefined };
  const names = [...new Set(hoisted)];
  const head = names.length ? `var ${names.join(', ')}; ` : '';
  const publish = published.map((n) => `this.${n} = ${n}; `).join('');
  return {
    source: `${head}(async function () { ${publish}\n${body}\n})`,
    lineOffset: -1,
    wrapped,
    showsValue,
    fallback: `(async function () {\n${code}\n})`,
  };
}

/** A top-level `return` (depth 0: outside every function body). */
function topLevelReturn(tokens) {
  let depth = 0;
  for (const t of tokens) {
    if (t.type === 'punct') {
      if (t.value === '(' || t.value === '[' || t.value === '{') depth++;
      else if (t.value === ')' || t.value === ']' || t.value === '}') depth--;
    } else if (depth === 0 && t.type === 'name' && t.value === 'return') return true;
  }
  return false;
}

/** `const|let|var declarators`: script mode turns the keyword into `var`; wrapped, into assignments (hoisted). */
function declaration(src, tokens, st, wrapped, edits, hoisted) {
  const kw = tokens[st.from];
  if (!wrapped) {
    if (kw.value !== 'var') edits.push({ start: kw.start, end: kw.end, text: 'var'.padEnd(kw.value.length) });
    return;
  }
  const hasSemi = tokens[st.to - 1].value === ';' && st.to - 1 > st.from;
  const end = hasSemi ? st.to - 1 : st.to;
  const names = [];
  for (const [a, b] of splitTop(tokens, st.from + 1, end, ',')) {
    if (a >= b) continue;
    const eq = findTop(tokens, a, b, '=');
    patternNames(tokens, a, eq < 0 ? b : eq, names);
    if (eq < 0 && kw.value !== 'var' && tokens[a].type === 'name') {
      edits.push({ start: tokens[b - 1].end, end: tokens[b - 1].end, text: ' = undefined' });
    }
  }
  if (!names.length) return;
  hoisted.push(...names);
  // `;(` in place of the keyword: a statement still starts here (the line above cannot go on into it).
  edits.push({ start: kw.start, end: kw.end, text: ';('.padEnd(kw.value.length) });
  const last = tokens[end - 1];
  edits.push({ start: last.end, end: last.end, text: hasSemi ? ')' : ');' });
}

module.exports = { transform, statements, tokenize };
