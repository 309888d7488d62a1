// Every example marked runnable in README.md and docs/*.md runs as written, through a real Pi session driven by the
// faux model (issue 29). A fence's info string marks it: ```python runnable=code_execution, ```json runnable=python,
// ```json runnable=eval, ```js runnable=codemode, ```sh runnable=exec_command, ```json runnable=settings,
// ```sql runnable=journal; a ```text output block right after one is the text its result must show (`...` stands for
// any text). The faux model answers the completion() calls an example makes.
// The convention and the rule for what stays unmarked are in docs/development.md, "Runnable examples".
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "../helpers/pi-session.ts";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { callAs } from "../helpers/notebook.ts";
import { scriptedUI } from "../helpers/scripted-ui.ts";
import { waitUntil } from "../helpers/procs.ts";
import { PYTHON } from "../helpers/pythons.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const ROOT = resolve(import.meta.dirname, "../..");
/** What each `runnable=` value runs, and the fence languages it takes. */
const KINDS: Record<string, string[]> = {
  code_execution: ["python"],
  python: ["json"],
  eval: ["json"],
  codemode: ["js"],
  exec_command: ["sh", "bash"],
  settings: ["json"],
  journal: ["sql"],
};
/** The Debian interpreter the set-up installs python3-matplotlib for: every Python example runs on it. */

export interface Example {
  file: string;
  line: number;
  lang: string;
  kind: string;
  /** `requires=<module>`: a Python module outside the standard library the example imports. */
  requires?: string;
  code: string;
  /** The ```text output block that follows it, if any. */
  output?: string;
}

/** The fenced blocks of a Markdown text with their info strings, and the runnable ones paired with their outputs. */
export function extractExamples(file: string, text: string): Example[] {
  const blocks: {
    line: number;
    lang: string;
    attrs: Map<string, string>;
    flags: Set<string>;
    code: string;
    end: number;
  }[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,}|~{3,})\s*(.*)$/.exec(lines[i]);
    if (!open) continue;
    const [lang = "", ...words] = open[2].trim().split(/\s+/);
    const attrs = new Map<string, string>();
    const flags = new Set<string>();
    for (const w of words) {
      const eq = w.indexOf("=");
      if (eq > 0) attrs.set(w.slice(0, eq), w.slice(eq + 1));
      else if (w) flags.add(w);
    }
    let j = i + 1;
    while (j < lines.length && !lines[j].startsWith(open[1])) j++;
    assert.ok(j < lines.length, `${file}:${i + 1}: a fence that is never closed`);
    blocks.push({ line: i + 1, lang, attrs, flags, code: lines.slice(i + 1, j).join("\n"), end: j });
    i = j;
  }
  const examples: Example[] = [];
  for (const [n, b] of blocks.entries()) {
    const where = `${file}:${b.line}`;
    if (b.flags.has("output")) {
      const prev = blocks[n - 1];
      const between = prev ? lines.slice(prev.end + 1, b.line - 1) : [];
      assert.ok(
        prev?.attrs.has("runnable") && between.every((l) => l.trim() === ""),
        `${where}: an output block must follow a runnable example directly`,
      );
      continue;
    }
    const kind = b.attrs.get("runnable");
    if (kind === undefined) continue;
    assert.ok(KINDS[kind], `${where}: unknown runnable=${kind} (known: ${Object.keys(KINDS).join(", ")})`);
    assert.ok(
      KINDS[kind].includes(b.lang),
      `${where}: runnable=${kind} takes ${KINDS[kind].join(" or ")}, not ${b.lang}`,
    );
    const next = blocks[n + 1];
    const output =
      next?.flags.has("output") && lines.slice(b.end + 1, next.line - 1).every((l) => l.trim() === "")
        ? next.code
        : undefined;
    examples.push({
      file,
      line: b.line,
      lang: b.lang,
      kind,
      code: b.code,
      ...(b.attrs.get("requires") ? { requires: b.attrs.get("requires") } : {}),
      ...(output !== undefined ? { output } : {}),
    });
  }
  return examples;
}

/** A documented output as a pattern: the text itself, where `...` or `…` stands for any text. */
export function outputPattern(expected: string): RegExp {
  const parts = expected.trim().split(/\.\.\.|…/);
  return new RegExp(`^${parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[\\s\\S]*?")}$`);
}

const DOC_FILES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const EXAMPLES = DOC_FILES.flatMap((f) => extractExamples(f, readFileSync(join(ROOT, f), "utf8")));
const TOOL_KINDS = new Set(["code_execution", "python", "eval", "codemode", "exec_command"]);

/** Whether the interpreter the examples run on can import a module (a Debian package the set-up installs). */
function importable(module: string): boolean {
  return spawnSync(PYTHON, ["-c", `import ${module}`]).status === 0;
}

/** A minimal value of a JSON Schema: what the faux model answers a `completion(..., schema=...)` with. */
export function instanceOf(schema: any): unknown {
  if (schema?.enum) return schema.enum[0];
  switch (schema?.type) {
    case "object":
      return Object.fromEntries(
        Object.entries(schema.properties ?? {})
          .filter(([k]) => (schema.required ?? []).includes(k))
          .map(([k, s]) => [k, instanceOf(s)]),
      );
    case "array":
      return [];
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return true;
    default:
      return "2026-12-02";
  }
}

/** The faux model's answer to a completion() an example makes: through the `respond` tool when it is given one
 * (a schema), else a line of text. The turn after the tool result gets it too, and ends there. */
function modelAnswer(context: any) {
  const respond = context.messages?.flatMap((m: any) => m.toolsAdded ?? []).find((t: any) => t.name === "respond");
  return respond
    ? fauxAssistantMessage([fauxToolCall("respond", instanceOf(respond.parameters) as never)], {
        stopReason: "toolUse",
      })
    : fauxAssistantMessage("A one-line answer.");
}

/** One prompt: the faux model makes the example's call, then answers whatever completion() calls it makes. */
async function runExample(pi: PiHarness, e: Example): Promise<ToolResultMessage | undefined> {
  const before = pi.toolResults().length;
  const [tool, args] = callOf(e);
  pi.faux.setResponses([
    fauxAssistantMessage([fauxToolCall(tool, args as never)], { stopReason: "toolUse" }),
    ...Array.from({ length: 8 }, () => modelAnswer),
  ]);
  await pi.session.prompt("run the example");
  return pi.toolResults()[before];
}

/** The tool call a tool example is, as the model would make it. */
function callOf(e: Example): [string, Record<string, unknown>] {
  if (e.kind === "code_execution") return ["code_execution", { code: e.code }];
  if (e.kind === "codemode") return ["codemode", { code: e.code }];
  if (e.kind === "exec_command") return ["exec_command", { cmd: e.code, yield_time_ms: 60_000 }];
  return [e.kind, JSON.parse(e.code)];
}

/** What went wrong with a tool example's result, or undefined when it ran. */
function failureOf(e: Example, r: ToolResultMessage | undefined): string | undefined {
  if (!r) return "no tool result";
  const text = textOf(r);
  if (r.isError) return `a tool error:\n${text}`;
  if (e.kind === "code_execution" && r.details?.status !== "success") return `status ${r.details?.status}:\n${text}`;
  if (e.kind === "codemode" && /\b(Error|Exception)\b/.test(text)) return `the script threw:\n${text}`;
  if (e.kind === "exec_command" && (r.details?.running || r.details?.exit_code !== 0))
    return `exit ${r.details?.exit_code}${r.details?.running ? " (still running)" : ""}:\n${text}`;
  if (e.kind === "exec_command" && /^node .*--test /m.test(e.code) && !/^# pass [1-9]/m.test(text))
    return `a test command that ran no test:\n${text}`;
  if (e.output !== undefined && !outputPattern(e.output).test(text.trim()))
    return `its output differs from the documented one:\n--- documented\n${e.output}\n--- actual\n${text}`;
  return undefined;
}

describe("the extraction", () => {
  test("runnable blocks, their outputs, and mistakes in marking are found", () => {
    const md = [
      "```python runnable=code_execution requires=matplotlib",
      "print(1)",
      "```",
      "",
      "```text output",
      "1",
      "```",
      "```python",
      "not marked",
      "```",
    ].join("\n");
    assert.deepEqual(extractExamples("x.md", md), [
      {
        file: "x.md",
        line: 1,
        lang: "python",
        kind: "code_execution",
        requires: "matplotlib",
        code: "print(1)",
        output: "1",
      },
    ]);
    assert.throws(() => extractExamples("x.md", "```python runnable=pyhton\nx\n```"), /unknown runnable=pyhton/);
    assert.throws(() => extractExamples("x.md", "```js runnable=code_execution\nx\n```"), /takes python, not js/);
    assert.throws(() => extractExamples("x.md", "```python\nx\n```\n```text output\n1\n```"), /must follow a runnable/);
    assert.throws(() => extractExamples("x.md", "```python runnable=code_execution\nx\n"), /never closed/);
  });

  test("an output's `...` stands for any text, and nothing else is loose", () => {
    assert.match("=> ['a', 'b', 'c']", outputPattern("=> ['a', ...]"));
    assert.doesNotMatch("=> ['b', 'c']", outputPattern("=> ['a', ...]"));
    assert.doesNotMatch("1.5", outputPattern("1x5"));
  });

  test("the documents mark examples of every kind", () => {
    const kinds = new Set(EXAMPLES.map((e) => e.kind));
    for (const kind of Object.keys(KINDS)) assert.ok(kinds.has(kind), `an example marked runnable=${kind}`);
  });
});

describe("every runnable example in README.md and docs/ runs as written", () => {
  let pi: PiHarness;
  let journal: string;
  const testContext = process.env.NODE_TEST_CONTEXT;
  before(async () => {
    // A `node --test` example in a shell would otherwise report to this runner and run nothing.
    delete process.env.NODE_TEST_CONTEXT;
    // The checkout is the working directory: the examples read its package.json and list its files.
    journal = join(tempDir("pcs-doc-journal-"), "journal.sqlite");
    process.env.PI_CODE_EXECUTION_JOURNAL = journal;
    process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,python,eval,exec";
    process.env.PI_PYTHON = PYTHON;
    const { createCodemodeExtension } = await import("@earendil-works/pi-coding-agent");
    // Pi's bash stays (the code_execution examples call it), as `pi --keep-builtin-bash` keeps it beside exec.
    pi = await startPi({
      cwd: ROOT,
      extensionFactories: [createCodemodeExtension()],
      flags: { "keep-builtin-bash": true },
    });
    pi.session.setActiveToolsByName([...pi.session.getActiveToolNames(), "codemode", "read"]);
  });
  after(async () => {
    await pi?.dispose();
    delete process.env.PI_CODE_EXECUTION_TOOLS;
    delete process.env.PI_CODE_EXECUTION_JOURNAL;
    delete process.env.PI_PYTHON;
    if (testContext !== undefined) process.env.NODE_TEST_CONTEXT = testContext;
  });

  for (const e of EXAMPLES.filter((x) => TOOL_KINDS.has(x.kind))) {
    test(`${e.file}:${e.line} (${e.kind})`, async (t) => {
      if (e.requires && !importable(e.requires))
        return t.skip(`${PYTHON} lacks ${e.requires} (scripts/setup.sh installs it as root)`);
      const r = await runExample(pi, e);
      assert.equal(failureOf(e, r), undefined);
    });
  }

  for (const e of EXAMPLES.filter((x) => x.kind === "journal")) {
    test(`${e.file}:${e.line} (journal): every query runs on the journal the examples above wrote`, async () => {
      assert.ok(await waitUntil(() => existsSync(journal), 10_000), "the journal was created");
      // Through Pi too: code_execution's Python opens the journal read-only and runs each statement.
      const code = [
        "import sqlite3",
        `con = sqlite3.connect(${JSON.stringify(`file:${journal}?mode=ro`)}, uri=True)`,
        `sql = ${JSON.stringify(e.code)}`,
        "stmts, buf = [], ''",
        "for line in sql.splitlines(keepends=True):",
        "    buf += line",
        "    if sqlite3.complete_statement(buf):",
        "        stmts.append(buf.strip()); buf = ''",
        "assert not buf.strip(), 'an unfinished statement: ' + buf",
        "for s in stmts:",
        "    con.execute(s).fetchall()",
        "print(len(stmts), 'queries')",
      ].join("\n");
      const [r] = await callAs(pi, [["code_execution", { code }]]);
      const statements = (e.code.match(/;\s*(\n|$)/g) ?? []).length;
      assert.equal(r.details?.status, "success", textOf(r));
      assert.match(textOf(r), new RegExp(`^${statements} queries\\n`));
    });
  }
});

describe("every settings example is a file Pi reads without a warning", () => {
  for (const e of EXAMPLES.filter((x) => x.kind === "settings")) {
    test(`${e.file}:${e.line} (settings)`, async () => {
      const agentDir = tempDir("pcs-doc-settings-");
      const file = join(agentDir, "pi-code-execution", "settings.json");
      mkdirSync(join(file, ".."), { recursive: true });
      writeFileSync(file, e.code);
      const ui = scriptedUI();
      const pi = await startPi({ agentDirEnv: agentDir, uiContext: ui.ui });
      try {
        assert.deepEqual(
          ui.notices.filter((n) => n.level === "warning" || n.level === "error"),
          [],
          "no warning at start-up",
        );
        // Each key it sets is read from that file (/code-status says where every value came from).
        const keys = Object.keys(JSON.parse(e.code)).filter((k) => !k.startsWith("$"));
        const before = ui.notices.length;
        await pi.session.prompt("/code-status");
        const status = ui.notices
          .slice(before)
          .map((n) => n.text)
          .join("\n");
        assert.doesNotMatch(status, /unknown key|is ignored|must be/, status);
        for (const key of keys)
          assert.match(status, new RegExp(`${key}\\S*.*global`), `${key} from the file:\n${status}`);
      } finally {
        await pi.dispose();
      }
    });
  }
});
