// The cell rewrite (runtime-js/cell-rewrite.js, docs/protocol-js.md "Cell semantics") on its own: each sample is rewritten,
// compiled and run in a real vm context, and must behave as the user's code would, with lasting declarations.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import vm from "node:vm";
import { describe, test } from "node:test";

const require = createRequire(import.meta.url);
const { transform } = require("../../runtime-js/cell-rewrite.js") as {
  transform(code: string): {
    source: string;
    lineOffset: number;
    wrapped: boolean;
    showsValue: boolean;
    fallback?: string;
  };
};

/** Runs cells in one context the way runtime-js/cell-run.js does; returns each cell's shown value. */
async function cells(...codes: string[]): Promise<unknown[]> {
  const g = vm.createContext(vm.constants.DONT_CONTEXTIFY);
  const out: unknown[] = [];
  for (const code of codes) {
    const plan = transform(code);
    const script = new vm.Script(plan.source, {
      lineOffset: plan.lineOffset,
      filename: "cell.js",
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    });
    let value = script.runInContext(g);
    if (plan.wrapped) value = await value.call(g);
    else if (!plan.showsValue) value = undefined;
    // Values of the context's realm compared as plain data.
    out.push(value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
  }
  return out;
}

describe("declarations last and may be repeated", () => {
  test("a let without a value in a plain cell is declared, undefined", async () => {
    assert.deepEqual(await cells("let q", "typeof q", "q = 1; let q\nq"), [undefined, "undefined", 1]);
  });

  test("const, let, var, class and function, in plain and async cells", async () => {
    assert.deepEqual(
      await cells(
        "const a = 1\nlet b = 2\nvar c = 3\nclass K { v() { return 4 } }\nfunction f() { return 5 }",
        "[a, b, c, new K().v(), f()]",
        "const a = await 10\nlet b = 20\nclass K { v() { return 40 } }\nasync function f() { return 50 }",
        "[a, b, c, new K().v(), await f()]",
      ),
      [undefined, [1, 2, 3, 4, 5], undefined, [10, 20, 3, 40, 50]],
    );
  });

  test("destructuring patterns bind every name", async () => {
    const [, v] = await cells(
      "await null\nconst { a, b: [c, , d = 4], ...rest } = { a: 1, b: [3], x: 9 }, [e, { f }] = [5, { f: 6 }];\nlet g, h = 8",
      "[a, c, d, rest, e, f, g, h]",
    );
    assert.deepEqual(v, [1, 3, 4, { x: 9 }, 5, 6, null, 8]); // (undefined is null as JSON)
  });

  test("a line without a semicolon before a rewritten declaration does not run into it", async () => {
    const [, v] = await cells(
      "const x = 1\nawait null\nconst y = x + 1\nclass Z {}\nconst [p] = [y]",
      "[x, y, typeof Z, p]",
    );
    assert.deepEqual(v, [1, 2, "function", 2]);
  });
});

describe("values", () => {
  test("the trailing expression, return, nothing after a declaration", async () => {
    assert.deepEqual(await cells("1 + 1", "const q = 3", "await 1; 'a' + 'b'", "if (true) return 7\n8", "x = 5"), [
      2,
      undefined,
      "ab",
      7,
      5,
    ]);
  });

  test("statements that are not expressions show nothing", async () => {
    assert.deepEqual(await cells("for (const i of [1]) { i }", "if (1) { 2 }", "{ 3 }", "label: 4"), [
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe("the tokenizer reads JavaScript as V8 does", () => {
  const samples: [string, string, unknown][] = [
    ["regex after return", "function r(s) { return /a\\/b/.test(s) }\nr('a/b')", true],
    ["division chains", "const n = 12 / 2 / 3\nn", 2],
    ["regex with a slash in a class", "const m = 'x/y'.match(/[/]/)[0]\nm", "/"],
    ["templates with nested templates and braces", "const t = `a${`b${ {k: 'c'}.k }`}d`\nt", "abcd"],
    ["comments with fake code", "const u = 1 // const u = 2\n/* let v = 3 */\nu", 1],
    ["strings with fake code", "const w = 'const z = 1; await x'\nw.length", 20],
    ["an arrow body on the next line", "const g = () =>\n  42\ng()", 42],
    ["Allman braces", "let s = 0\nif (true)\n{\n  s = 1\n}\nelse\n{\n  s = 2\n}\ns", 1],
    ["a call on the next line is one statement", "const h = (x) => x\nconst k = h\n(5)\nk", 5],
    ["object literal value", "({ a: 1 })", { a: 1 }],
    ["keyword-like properties", "const o = { await: 1, return: 2, class: 3 }\no.await + o.return + o.class", 6],
    ["do-while", "let i = 0\ndo { i++ } while (i < 3)\ni", 3],
    ["do-while with a one-statement body, then a value in parentheses", "let n = 0\ndo n++; while (n < 4)\n(n)", 4],
    ["postfix then a new line", "let j = 1\nj++\nj", 2],
  ];
  for (const [name, code, expected] of samples) {
    test(name, async () => {
      const [v] = await cells(code);
      assert.deepEqual(v, expected);
    });
  }
});

describe("imports", () => {
  test("static imports become import() in an async cell; names are bound and last", async () => {
    const plan = transform(
      "import def, { join as j, sep } from 'node:path'\nimport * as fs from \"node:fs\"\nimport 'node:os'",
    );
    assert.equal(plan.wrapped, true);
    assert.match(plan.source, /^var j, sep, def, fs; \(async function/);
    assert.match(plan.source, /;\(\{ default: def, join: j, sep \} = await import\('node:path'\)\);/);
    assert.match(plan.source, /;fs = await import\("node:fs"\);/);
    assert.match(plan.source, /;await import\('node:os'\);/);
  });

  test("an import declaration ends with its specifier: the next line starts anew, whatever it begins with", () => {
    const plan = transform("import { a } from 'x'\n`${a}`\nimport b from 'y'\n(b)");
    assert.match(
      plan.source,
      /;\(\{ a \} = await import\('x'\)\);\nreturn \(`\$\{a\}`\)|;\(\{ a \} = await import\('x'\)\);\n`\$\{a\}`/,
    );
    assert.match(plan.source, /;\(\{ default: b \} = await import\('y'\)\);\nreturn \(\(b\)\)/);
  });

  test("import attributes pass through", () => {
    const plan = transform("import data from './d.json' with { type: 'json' }");
    assert.match(plan.source, /await import\('\.\/d\.json', \{ with: \{ type: 'json' \} \}\)/);
  });

  test("a rewrite keeps every line on its line", () => {
    const code = "import {\n  a,\n  b\n} from 'x'\nconst c = 1\nthrow new Error('here')";
    const plan = transform(code);
    const lines = plan.source.split("\n").slice(1);
    assert.equal(lines[5], "throw new Error('here')");
  });
});

describe("imports, form by form", () => {
  const bodyOf = (code: string) => transform(code).source;

  test("a default with a namespace, a namespace alone, strings as imported names, an empty list", () => {
    assert.equal(
      bodyOf("import def, * as ns from 'x'"),
      "var ns, def; (async function () { \n;ns = await import('x'), def = ns.default;\n})",
    );
    assert.equal(bodyOf("import * as ns from 'x';"), "var ns; (async function () { \n;ns = await import('x');\n})");
    assert.equal(
      bodyOf(`import {"s t" as s, a as b, c} from 'x';`),
      `var s, b, c; (async function () { \n;({ "s t": s, a: b, c } = await import('x'));\n})`,
    );
    assert.equal(bodyOf("import {} from 'x'"), "(async function () { \n;await import('x');\n})");
    assert.equal(
      bodyOf("import a from 'x' assert { type: 'json' }"),
      "var a; (async function () { \n;({ default: a } = await import('x', { with: { type: 'json' } }));\n})",
    );
  });

  test("an import it cannot read is left as written, for V8 to report", () => {
    for (const code of [
      "import * ns from 'x'",
      "import * as 1 from 'x'",
      "import {a b} from 'x'",
      "import {a as 1} from 'x'",
      "import def 'x'",
      "import def, 'x'",
      "import {a} 'x'",
      "import 'x' junk",
      "import x from y",
    ]) {
      const plan = transform(code);
      assert.equal(plan.source, `(async function () { \n${code}\n})`, code);
      assert.throws(() => new vm.Script(plan.source), SyntaxError, code);
    }
  });

  test("imports run: a namespace, a default, named ones renamed", async () => {
    const [, v] = await cells(
      "import * as p from 'node:path'\nimport u, { format as f } from 'node:util'",
      "[typeof p.join, typeof u.format, f('%d', 7)]",
    );
    assert.deepEqual(v, ["function", "function", "7"]);
  });
});

describe("an async cell's declarations", () => {
  test("let without a value is undefined, var without one keeps its value, a pattern binding nothing stays", async () => {
    const [, , v] = await cells(
      "var y = 1; var z = 2",
      "await 1; let x; var y; const {} = {}; let [a] = [3], b\nb",
      "[typeof x, y, a, typeof b]",
    );
    assert.deepEqual(v, ["undefined", 1, 3, "undefined"]);
    const plan = transform("await 1; let x; var y; const {} = o; let [a] = [1], b\nb");
    assert.equal(
      plan.source,
      "var x, y, a, b; (async function () { \nawait 1; ;(  x = undefined); ;(  y); const {} = o; ;(  [a] = [1], b = undefined);\nreturn (b)\n})",
    );
  });

  test("generator and async functions are hoisted and kept; an anonymous class is not", async () => {
    const [, v] = await cells(
      "await 1; function* g() { yield 1 } async function* h() { yield 2 } async function k() { return 3 }",
      "const out = [...g()]; for await (const x of h()) out.push(x); out.push(await k()); out",
    );
    assert.deepEqual(v, [1, 2, 3]);
    assert.equal(
      transform("await 1; class extends B {}").source,
      "(async function () { \nawait 1; class extends B {}\n})",
    );
  });

  test("a member named await does not make the cell async; a return inside a function does not either", () => {
    assert.equal(transform("x.await; y?.await").wrapped, false);
    for (const inside of [
      "function f() { return 1 }",
      "const g = (a) => { if (a) { return 1 } }",
      "const o = { m(a) { return a }, get p() { return 2 } }",
      "class C { m() { for (;;) { return 3 } } }",
      "[1].map(function (x) { return x })",
      "function h() { const a = [1]; return a }",
    ])
      assert.equal(transform(inside).wrapped, false, inside);
  });

  test("a return inside the cell's own blocks ends the cell early", async () => {
    const early = [
      "if (true) { return 1 }\n2",
      "for (const x of [3]) { return x }",
      "while (true) { return 4 }",
      "try { return 5 } finally {}",
      "switch (1) { case 1: { return 6 } }",
      "{ return 7 }",
      "for await (const x of [8]) { return x }",
      "do { return 9 } while (false)",
      "if (false) {} else { return 10 }",
      "try { throw 1 } catch (e) { return 11 }",
      "with ({ v: 12 }) { return v }",
    ];
    for (const code of early) assert.equal(transform(code).wrapped, true, code);
    assert.deepEqual(await cells(...early), [1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  test("a class rewritten in an async cell ends where it did: a next line in parentheses is not a call of it", async () => {
    assert.deepEqual(await cells("await 1\nclass K {}\n(1)", "typeof K"), [1, "function"]);
  });

  test("a value ending in a semicolon is returned without it", () => {
    assert.equal(transform("await 1\nx + 1;").source, "(async function () { \nawait 1\nreturn (x + 1);\n})");
  });

  test("line breaks a rewrite removes are put back, CRLF counted as one", () => {
    const plan = transform("import {\r\n  a,\r\n  b\r\n} from 'x'\r\nthrow new Error('here')");
    const lines = plan.source.split(/\r\n|\n/);
    assert.equal(lines.indexOf("throw new Error('here')"), 5);
  });
});

describe("what the rewrite cannot read", () => {
  test("an unterminated literal is left for V8 to report", () => {
    const plan = transform("const s = 'open\nawait x");
    assert.throws(() => new vm.Script(plan.source), SyntaxError);
  });

  test("the fallback is the user's code as written, in the same mode", () => {
    const plan = transform("await f()\nconst x = 1");
    assert.equal(plan.fallback, "(async function () {\nawait f()\nconst x = 1\n})");
  });
});
