// Python names and signatures of exposed tools (extension/shared/python-names.ts), checked against a real interpreter:
// every name must be an identifier that is no keyword and shadows no builtin.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, test } from "node:test";
import { pythonName, pythonNames, pythonType, signature } from "../../../extension/shared/python-names.ts";
import { PYTHON } from "../../helpers/runner-driver.ts";

describe("Python names", () => {
  test("sanitized, never a keyword, soft keyword, builtin, helper or dunder; unique in order", () => {
    const registered = [
      "read",
      "print",
      "class",
      "match",
      "type",
      "_",
      "available_tools",
      "__import__",
      "2fa",
      "mcp__docs__search",
      "my-tool",
      "my_tool",
      "my.tool",
      "héllo",
      "",
      "open",
      "open_",
    ];
    const names = pythonNames(registered);
    assert.deepEqual(names, [
      "read",
      "print_",
      "class_",
      "match_",
      "type_",
      "tool_",
      "available_tools_",
      "tool___import__",
      "tool_2fa",
      "mcp__docs__search",
      "my_tool",
      "my_tool_2",
      "my_tool_3",
      "h_llo",
      "tool",
      "open_",
      "open__2",
    ]);
    // The interpreter agrees: identifiers, no keywords, nothing from builtins.
    const check = execFileSync(
      PYTHON,
      [
        "-c",
        "import builtins, keyword, sys, json\nnames = json.loads(sys.argv[1])\n" +
          "bad = [n for n in names if not n.isidentifier() or keyword.iskeyword(n) or keyword.issoftkeyword(n)]\n" +
          "bad += [n for n in names if hasattr(builtins, n)]\nprint(json.dumps(bad))",
        JSON.stringify(names),
      ],
      { encoding: "utf8" },
    );
    assert.deepEqual(JSON.parse(check), []);
  });

  test("one name at a time is stable", () => {
    assert.equal(pythonName("bash"), "bash");
    assert.equal(pythonName("input"), "input_");
  });
});

describe("signatures", () => {
  test("required parameters first, Python type names, keyword-only", () => {
    const schema = {
      type: "object",
      properties: {
        limit: { type: "integer" },
        path: { type: "string" },
        mode: { enum: ["r", "w"] },
        tags: { type: "array", items: { type: "string" } },
        when: { anyOf: [{ type: "string" }, { type: "null" }] },
        flag: { type: "boolean", default: true },
        "max-results": { type: "number" },
        from: { type: "string" },
        anything: {},
      },
      required: ["path", "from"],
    };
    assert.equal(
      signature("grep", schema),
      'grep(*, path: str, "from": str, limit: int = None, mode: Literal["r", "w"] = None, tags: list[str] = None, ' +
        'when: str | None = None, flag: bool = True, "max-results": float = None, anything: Any = None)',
    );
    assert.equal(signature("ping", { type: "object", properties: {} }), "ping()");
    assert.equal(signature("odd", undefined), "odd()");
  });

  test("types of nested and unusual schemas", () => {
    assert.equal(pythonType({ type: ["string", "integer"] }), "str | int");
    assert.equal(pythonType({ const: 3 }), "Literal[3]");
    assert.equal(pythonType({ type: "object" }), "dict");
    assert.equal(
      pythonType({ type: "array", items: { type: "array", items: { type: "number" } } }),
      "list[list[float]]",
    );
    assert.equal(pythonType({ oneOf: [{ type: "string" }, {}] }), "Any");
    assert.equal(pythonType({ enum: Array.from({ length: 20 }, (_, i) => i), type: "integer" }), "int");
  });
});
