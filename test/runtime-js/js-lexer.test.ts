// The JavaScript runtime's tokenizer and statement splitter (runtime-js/lexer.js, runtime-js/statements.js) on their
// own: what each token is and where each top-level statement ends, read as V8 reads the same code. The rewrite built
// on them is test/runtime-js/js-cell.test.ts's; here each rule of the reading has an input that needs it.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, test } from "node:test";

const require = createRequire(import.meta.url);
interface Token {
  type: string;
  value: string;
  start: number;
  end: number;
  nl: boolean;
  brace?: "block" | "expr";
}
const { tokenize, EXPRESSION_KEYWORDS } = require("../../runtime-js/lexer.js") as {
  tokenize(src: string): { tokens: Token[]; broken: boolean };
  EXPRESSION_KEYWORDS: Set<string>;
};
const { statements, patternNames } = require("../../runtime-js/statements.js") as {
  statements(tokens: Token[]): { from: number; to: number; kind: string }[];
  patternNames(tokens: Token[], from: number, to: number, names: string[]): void;
};

/** Each token as `type:value`, `^` when a line break came before it, `/block` or `/expr` on braces; ` BROKEN` last
 * when the tokenizer gave up. */
function read(src: string): string {
  const { tokens, broken } = tokenize(src);
  const shown = tokens.map((t) => `${t.type}:${t.value}${t.nl ? "^" : ""}${t.brace ? `/${t.brace}` : ""}`);
  return [...shown, ...(broken ? ["BROKEN"] : [])].join(" ");
}

/** Each top-level statement as `kind[its tokens]`. */
function split(src: string): string[] {
  const { tokens } = tokenize(src);
  return statements(tokens).map(
    (s) =>
      `${s.kind}[${tokens
        .slice(s.from, s.to)
        .map((t) => t.value)
        .join(" ")}]`,
  );
}

describe("tokens", () => {
  const samples: [string, string, string][] = [
    ["a line feed before a token", "a\nb", "name:a name:b^"],
    ["a carriage return", "a\rb", "name:a name:b^"],
    ["a line separator", "a\u2028b", "name:a name:b^"],
    ["a paragraph separator", "a\u2029b", "name:a name:b^"],
    ["spaces of every kind are skipped", "a\t\v\f\u00a0\ufeff\u3000b", "name:a name:b"],
    ["a line comment ends at the line break", "a // c = 1\nb", "name:a name:b^"],
    ["a block comment on one line", "a /* c */ b", "name:a name:b"],
    ["a block comment across lines counts as a line break", "a /* c\n*/ b", "name:a name:b^"],
    ["an unterminated block comment", "a /* open", "name:a BROKEN"],
    ["strings with escaped quotes", "\"s\\\"q\" + 't\\'x'", "str:\"s\\\"q\" punct:+ str:'t\\'x'"],
    ["an escaped backslash ends before the quote", "'t\\\\' + 1", "str:'t\\\\' punct:+ num:1"],
    ["an unterminated string", 'x = "open', "name:x punct:= BROKEN"],
    ["a line break inside a string", 'x = "a\nb"', "name:x punct:= BROKEN"],
    ["a carriage return inside a string", "x = 'a\rb'", "name:x punct:= BROKEN"],
    [
      "a template with nested templates and an escaped backtick",
      "`t${a + `u${b}`}v\\`` + 1",
      "tpl:`t${a + `u${b}`}v\\`` punct:+ num:1",
    ],
    ["a template whose part holds an object", "`${ {k: 1}.k }` + 2", "tpl:`${ {k: 1}.k }` punct:+ num:2"],
    ["an unterminated template", "`open", "BROKEN"],
    ["an unterminated template part", "`x${a", "BROKEN"],
    [
      "identifiers: $, _, digits, escapes, letters beyond ASCII, private names",
      "$a _b c9 \\u0061b é this.#p #q",
      "name:$a name:_b name:c9 name:\\u0061b name:é name:this punct:. name:#p name:#q",
    ],
    [
      "numbers of every form",
      "0x1F 0o7 0b1 10n 1_000 .5 1e10 1.5e-3 2E+2",
      "num:0x1F num:0o7 num:0b1 num:10n num:1_000 num:.5 num:1e10 num:1.5e-3 num:2E+2",
    ],
    ["?. before a digit is a conditional", "a?.5:1", "name:a punct:? num:.5 punct:: num:1"],
    ["?. before a name is optional chaining", "a?.b", "name:a punct:?. name:b"],
    ["a shebang line is skipped", "#!/usr/bin/env node\n1", "num:1^"],
    [
      "a regex with a class, an escaped slash and flags",
      "x = /a[/]b\\/c/gi.test(s)",
      "name:x punct:= regex:/a[/]b\\/c/gi punct:. name:test punct:( name:s punct:)",
    ],
    ["an unterminated regex", "x = /open", "name:x punct:= BROKEN"],
    ["a line break in a regex", "x = /a\n/", "name:x punct:= BROKEN"],
    ["a regex at the start", "/r/.test(s)", "regex:/r/ punct:. name:test punct:( name:s punct:)"],
    [
      "division after a name, a number, a string, a template, a regex",
      "a / b; 1 / 2; 's' / 2; `t` / 2; /r/ / 2",
      "name:a punct:/ name:b punct:; num:1 punct:/ num:2 punct:; str:'s' punct:/ num:2 punct:; tpl:`t` punct:/ num:2 " +
        "punct:; regex:/r/ punct:/ num:2",
    ],
    [
      "division after ), ], ++ and --",
      "(a) / b; a[0] / b; i++ / 2; i-- / 2",
      "punct:( name:a punct:) punct:/ name:b punct:; name:a punct:[ num:0 punct:] punct:/ name:b punct:; name:i " +
        "punct:++ punct:/ num:2 punct:; name:i punct:-- punct:/ num:2",
    ],
    [
      "a regex after (, !, = and ,",
      "f(/a/, !/b/, x = /c/)",
      "name:f punct:( regex:/a/ punct:, punct:! regex:/b/ punct:, name:x punct:= regex:/c/ punct:)",
    ],
    [
      "a regex after a block's }, division after an object's",
      "{} /r/\nx = {} / 2",
      "punct:{/block punct:}/block regex:/r/ name:x^ punct:= punct:{/expr punct:}/expr punct:/ num:2",
    ],
    [
      "braces: a block first, an object after =, :, [, (, , and return",
      "{ x = { a: { b: [{}] } }; f({}, {}) }\nfunction g() { return {} }",
      "punct:{/block name:x punct:= punct:{/expr name:a punct:: punct:{/expr name:b punct:: punct:[ punct:{/expr " +
        "punct:}/expr punct:] punct:}/expr punct:}/expr punct:; name:f punct:( punct:{/expr punct:}/expr punct:, " +
        "punct:{/expr punct:}/expr punct:) punct:}/block name:function^ name:g punct:( punct:) punct:{/block " +
        "name:return punct:{/expr punct:}/expr punct:}/block",
    ],
    [
      "braces: a block after ), ;, =>, }, ], do, else and a name",
      "if (a) {} ; {} () => {} x {} do {} while (0); if (a) {} else {} [] {}",
      "name:if punct:( name:a punct:) punct:{/block punct:}/block punct:; punct:{/block punct:}/block punct:( " +
        "punct:) punct:=> punct:{/block punct:}/block name:x punct:{/block punct:}/block name:do punct:{/block " +
        "punct:}/block name:while punct:( num:0 punct:) punct:; name:if punct:( name:a punct:) punct:{/block " +
        "punct:}/block name:else punct:{/block punct:}/block punct:[ punct:] punct:{/block punct:}/block",
    ],
    [
      "braces: a block after a number or a string",
      "1 {} 's' {}",
      "num:1 punct:{/block punct:}/block str:'s' punct:{/block punct:}/block",
    ],
    ["a } without its { is a block's", "} a", "punct:}/block name:a"],
  ];
  for (const [name, src, expected] of samples) test(name, () => assert.equal(read(src), expected));

  test("every punctuator is one token, the longest that matches", () => {
    const all = [">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=", "=>", "==", "!="];
    all.push("<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "**");
    all.push("<<", ">>", "=", "<", ">", "+", "-", "*", "%", "&", "|", "^", "!", "~", "?", ":", ",", ".");
    for (const p of all) assert.equal(read(`a ${p} b`), `name:a punct:${p} name:b`, p);
  });

  test("after a keyword that takes an expression, / starts a regex and { an object; after other names, division", () => {
    assert.equal(EXPRESSION_KEYWORDS.size, 15);
    for (const kw of EXPRESSION_KEYWORDS) {
      assert.equal(read(`${kw} /a/g`), `name:${kw} regex:/a/g`, kw);
      const brace = kw === "do" || kw === "else" ? "block" : "expr";
      assert.equal(read(`${kw} {}`), `name:${kw} punct:{/${brace} punct:}/${brace}`, kw);
    }
    assert.equal(read("x /a/g"), "name:x punct:/ name:a punct:/ name:g");
    assert.equal(read("this /a/g"), "name:this punct:/ name:a punct:/ name:g");
  });

  test("each token knows where it is in the source", () => {
    const { tokens } = tokenize("let s = 'x' + `y`");
    assert.deepEqual(
      tokens.map((t) => [t.start, t.end]),
      [
        [0, 3],
        [4, 5],
        [6, 7],
        [8, 11],
        [12, 13],
        [14, 17],
      ],
    );
  });
});

describe("statements", () => {
  const samples: [string, string, string[]][] = [
    [
      "semicolons end statements; a lone one is empty",
      "a; b;; c",
      ["expression[a ;]", "expression[b ;]", "empty[;]", "expression[c]"],
    ],
    [
      "a line break ends a statement between an expression's end and a statement's start",
      "a\nb\n1\n's'\n{}\n++c\n--d\n!e\n~f\n;",
      [
        "expression[a]",
        "expression[b]",
        "expression[1]",
        "expression['s']",
        "block[{ }]",
        "expression[++ c]",
        "expression[-- d]",
        "expression[! e]",
        "expression[~ f]",
        "empty[;]",
      ],
    ],
    [
      "no break where the line cannot end: an operator before or after, a call, a member, an index",
      "a +\nb\nc\n+ d\ne\n(f)\ng\n.h\ni\n[0]",
      ["expression[a + b]", "expression[c + d]", "expression[e ( f )]", "expression[g . h]", "expression[i [ 0 ]]"],
    ],
    [
      "after ), ], }, ++ and -- a new line starts a statement",
      "f()\nx\na[0]\nx\no = {}\nx\ni++\nx\nj--\nx",
      [
        "expression[f ( )]",
        "expression[x]",
        "expression[a [ 0 ]]",
        "expression[x]",
        "expression[o = { }]",
        "expression[x]",
        "expression[i ++]",
        "expression[x]",
        "expression[j --]",
        "expression[x]",
      ],
    ],
    [
      "a keyword that takes an expression goes on; this ends one",
      "typeof\nx\nnew\nY\nawait\nz\nthis\nw",
      ["expression[typeof x]", "expression[new Y]", "expression[await z]", "expression[this]", "expression[w]"],
    ],
    [
      "instanceof, in and of go on after a line break",
      "a\ninstanceof B\nc\nin d\nfor (const k\nof e) {}",
      ["expression[a instanceof B]", "expression[c in d]", "statement[for ( const k of e ) { }]"],
    ],
    [
      "return, break, continue, throw and yield end at a line break, even before what could go on",
      "return\n-1\nbreak\n(x)\ncontinue\n[y]\nthrow\n+z\nyield\n(w)",
      [
        "statement[return]",
        "expression[- 1]",
        "statement[break]",
        "expression[( x )]",
        "statement[continue]",
        "expression[[ y ]]",
        "statement[throw]",
        "expression[+ z]",
        "expression[yield]",
        "expression[( w )]",
      ],
    ],
    [
      "statement heads: the body after the parenthesis goes on",
      "if (a)\nb()\nfor (;;)\nc()\nwhile (d)\ne()\nwith (f)\ng()\nswitch (h)\n{}\nfunction k(x)\n{ }\nx",
      [
        "statement[if ( a ) b ( )]",
        "statement[for ( ; ; ) c ( )]",
        "statement[while ( d ) e ( )]",
        "statement[with ( f ) g ( )]",
        "statement[switch ( h ) { }]",
        "function[function k ( x ) { }]",
        "expression[x]",
      ],
    ],
    [
      "try, catch, finally and else take the next line as their body",
      "try\n{} catch (e)\n{} finally\n{}\nif (a) b()\nelse\nc()\nx",
      ["statement[try { } catch ( e ) { } finally { }]", "statement[if ( a ) b ( ) else c ( )]", "expression[x]"],
    ],
    [
      "a block statement ends at its } whatever follows",
      "function f() {}\n(1)\nclass A {}\n[1]\nif (a) {}\n[2]\nfor (;;) {}\n(3)\nwhile (0) {}\n(4)\ntry {} catch {}\n(5)\n" +
        "switch (a) {}\n(6)\nwith (o) {}\n(7)\n{}\n(8)",
      [
        "function[function f ( ) { }]",
        "expression[( 1 )]",
        "class[class A { }]",
        "expression[[ 1 ]]",
        "statement[if ( a ) { }]",
        "expression[[ 2 ]]",
        "statement[for ( ; ; ) { }]",
        "expression[( 3 )]",
        "statement[while ( 0 ) { }]",
        "expression[( 4 )]",
        "statement[try { } catch { }]",
        "expression[( 5 )]",
        "statement[switch ( a ) { }]",
        "expression[( 6 )]",
        "statement[with ( o ) { }]",
        "expression[( 7 )]",
        "block[{ }]",
        "expression[( 8 )]",
      ],
    ],
    [
      "an else, catch, finally or a do's while keeps the block statement going",
      "if (a) {} else {}\ntry {} catch (e) {} finally {}\ndo {} while (a)\nx",
      [
        "statement[if ( a ) { } else { }]",
        "statement[try { } catch ( e ) { } finally { }]",
        "statement[do { } while ( a )]",
        "expression[x]",
      ],
    ],
    [
      "catch and finally on lines of their own; a function expression's body on the next line",
      "try {}\ncatch (e) {}\nfinally {}\nx\nconst f = function (a)\n{ return a }\ny",
      [
        "statement[try { } catch ( e ) { } finally { }]",
        "expression[x]",
        "declaration[const f = function ( a ) { return a }]",
        "expression[y]",
      ],
    ],
    [
      "a do-while ends at its condition's ), its body a block or one statement",
      "do x++; while (x < 3)\n(y)\ndo\nd()\nwhile (0)\nx\ndo {} while (a)\n(b)\ndo x++\nwhile (x < 3); y\ndo {}\nwhile (c)\nz",
      [
        "statement[do x ++ ; while ( x < 3 )]",
        "expression[( y )]",
        "statement[do d ( ) while ( 0 )]",
        "expression[x]",
        "statement[do { } while ( a )]",
        "expression[( b )]",
        "statement[do x ++ while ( x < 3 ) ;]",
        "expression[y]",
        "statement[do { } while ( c )]",
        "expression[z]",
      ],
    ],
    [
      "async function is a function",
      "async function f() {}\n(1)",
      ["function[async function f ( ) { }]", "expression[( 1 )]"],
    ],
    [
      "an arrow's body on the next line",
      "const g = () =>\n  42\nx",
      ["declaration[const g = ( ) => 42]", "expression[x]"],
    ],
    [
      "a class expression's body on the next line",
      "const C = class\n{\n}\nx\nf(class\n{})\ny",
      ["declaration[const C = class { }]", "expression[x]", "expression[f ( class { } )]", "expression[y]"],
    ],
    [
      "a named function's parameters on the next line",
      "function f\n(a)\n{ }\nx",
      ["function[function f ( a ) { }]", "expression[x]"],
    ],
    [
      "imports end with their specifier or attributes",
      "import a from 'a'\n(b)\nimport { c } from 'c'\n[d]\nimport 'e'\n`f`\nimport g from 'g' with { type: 'json' }\nh\n" +
        "import {\n  i\n} from 'i'\nx",
      [
        "import[import a from 'a']",
        "expression[( b )]",
        "import[import { c } from 'c']",
        "expression[[ d ]]",
        "import[import 'e']",
        "expression[`f`]",
        "import[import g from 'g' with { type : 'json' }]",
        "expression[h]",
        "import[import { i } from 'i']",
        "expression[x]",
      ],
    ],
    [
      "an import goes on over line breaks until its specifier or attributes",
      'import g from "g"\nwith { type: "json" }\nh\nimport j from "j"\nassert { type: "json" }\nk\nimport {\n  l\n}\nfrom "l"\nm\n' +
        'import n from "n" with { type: "json" }\n(p)\nimport q\nfrom "q"\n[r]',
      [
        'import[import g from "g" with { type : "json" }]',
        "expression[h]",
        'import[import j from "j" assert { type : "json" }]',
        "expression[k]",
        'import[import { l } from "l"]',
        "expression[m]",
        'import[import n from "n" with { type : "json" }]',
        "expression[( p )]",
        'import[import q from "q"]',
        "expression[[ r ]]",
      ],
    ],
    [
      "line breaks inside a body, a block or an object end nothing at the top",
      "function f() {\n  a()\n  return 1\n}\nif (x) {\n  b()\n  c()\n}\n{\n  d()\n  e()\n}\nconst o = {\n  k: 1,\n  m() { return 2 }\n}\ny",
      [
        "function[function f ( ) { a ( ) return 1 }]",
        "statement[if ( x ) { b ( ) c ( ) }]",
        "block[{ d ( ) e ( ) }]",
        "declaration[const o = { k : 1 , m ( ) { return 2 } }]",
        "expression[y]",
      ],
    ],
    [
      "import() and import.meta are expressions",
      "import('x')\nimport.meta.url",
      ["expression[import ( 'x' )]", "expression[import . meta . url]"],
    ],
    [
      "kinds",
      "const a = 1; let b; let [c] = d; let { e } = f; var g; class K {} function f() {} async function g() {} { } " +
        "if (a) {} debugger; label: x; ; z",
      [
        "declaration[const a = 1 ;]",
        "declaration[let b ;]",
        "declaration[let [ c ] = d ;]",
        "declaration[let { e } = f ;]",
        "declaration[var g ;]",
        "class[class K { }]",
        "function[function f ( ) { }]",
        "function[async function g ( ) { }]",
        "block[{ }]",
        "statement[if ( a ) { }]",
        "statement[debugger ;]",
        "statement[label : x ;]",
        "empty[;]",
        "expression[z]",
      ],
    ],
    [
      "let as a name is an expression",
      "let = 1; let(2); async; async\nfunction f() {}",
      [
        "expression[let = 1 ;]",
        "expression[let ( 2 ) ;]",
        "expression[async ;]",
        "expression[async]",
        "function[function f ( ) { }]",
      ],
    ],
    [
      "words that start a statement",
      "if (a) {} for (;;) {} while (a) {} do {} while (a); switch (a) {} try {} catch {} return; throw e; break; " +
        "continue; with (o) {} debugger; export default 1",
      [
        "statement[if ( a ) { }]",
        "statement[for ( ; ; ) { }]",
        "statement[while ( a ) { }]",
        "statement[do { } while ( a ) ;]",
        "statement[switch ( a ) { }]",
        "statement[try { } catch { }]",
        "statement[return ;]",
        "statement[throw e ;]",
        "statement[break ;]",
        "statement[continue ;]",
        "statement[with ( o ) { }]",
        "statement[debugger ;]",
        "statement[export default 1]",
      ],
    ],
  ];
  for (const [name, src, expected] of samples) test(name, () => assert.deepEqual(split(src), expected));

  test("the words a statement may start with that are not expressions", () => {
    for (const w of ["else", "catch", "finally", "case", "default", "export", "with", "debugger"]) {
      assert.equal(split(`${w} x`)[0]!.split("[")[0], "statement", w);
    }
  });
});

describe("the names a declaration's pattern binds", () => {
  const names = (pattern: string) => {
    const { tokens } = tokenize(pattern);
    const out: string[] = [];
    patternNames(tokens, 0, tokens.length, out);
    return out;
  };

  test("a name, arrays with holes, defaults and rest, objects with renames, defaults, rest and nesting", () => {
    assert.deepEqual(names("a"), ["a"]);
    assert.deepEqual(names("[b, , c = 1, ...d]"), ["b", "c", "d"]);
    assert.deepEqual(names("{ e, f: g, h = 2, 'i': j, [k]: l, m: { n: [o] }, ...p }"), [
      "e",
      "g",
      "h",
      "j",
      "l",
      "o",
      "p",
    ]);
    assert.deepEqual(names("[{ q = [1, 2] }, [r = { s: 3 }]]"), ["q", "r"]);
    assert.deepEqual(names("{ a = f(1, 2), b: [c] = [3, 4], d: { e } = { x: 1 }, ...g }"), ["a", "c", "e", "g"]);
    assert.deepEqual(names("[h = { x: 1, y: 2 }, [i] = [[1, 2]], j = (1, 2)]"), ["h", "i", "j"]);
    assert.deepEqual(names("{ k: l = 1, 'm': n }"), ["l", "n"]);
  });

  test("an unterminated pattern gives the names it has", () => {
    assert.deepEqual(names("[a, b"), ["a", "b"]);
    assert.deepEqual(names("{ c, d: [e"), ["c", "e"]);
  });

  test("what binds nothing", () => {
    assert.deepEqual(names(""), []);
    assert.deepEqual(names("1"), []);
    assert.deepEqual(names("[]"), []);
    assert.deepEqual(names("{}"), []);
  });
});
