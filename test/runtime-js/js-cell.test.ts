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
    const script = new vm.Script(plan.source, { lineOffset: plan.lineOffset, filename: "cell.js" });
    let value = script.runInContext(g);
    if (plan.wrapped) value = await value.call(g);
    else if (!plan.showsValue) value = undefined;
    // Values of the context's realm compared as plain data.
    out.push(value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
  }
  return out;
}

describe("declarations last and may be repeated", () => {
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
