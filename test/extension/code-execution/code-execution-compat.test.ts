// pi-code-execution's details a user of it relies on, each through a real Pi session (faux model): an earlier
// session's references stay valid (the structured `sourceRef`, the XML-like and path-bearing placeholders in `code`,
// code_execution_output's `outputRef`), the context hook shows a placeholder as the sourceRef it names, a Pi tool's
// own truncated output is recovered whole (up to 5 MiB), and uv's certificate hint names UV_SYSTEM_CERTS.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { callAs } from "../../helpers/notebook.ts";
import { legacyOutputArtifactId } from "../../../store/legacy-artifacts.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const lines = (code: string) => code.split(/\r?\n/).length;

let pi: PiHarness;
before(async () => {
  pi = await startPi();
});
after(async () => {
  await pi.dispose();
});

/** Saves `code` as an earlier pi-code-execution did: `code-execution/<first 16 hex of its digest>.py`, private. */
function saveLegacySource(code: string): { artifactId: string; lines: number; sha256: string } {
  const dir = join(pi.agentDir, "code-execution");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const artifactId = `${sha256(code).slice(0, 16)}.py`;
  writeFileSync(join(dir, artifactId), code, { mode: 0o600 });
  return { artifactId, lines: lines(code), sha256: sha256(code) };
}

describe("legacy source references", () => {
  test("a structured sourceRef runs the saved script it names", async () => {
    const ref = saveLegacySource("print('from a legacy sourceRef', 6 * 7)");
    const [r] = await callAs(pi, [["code_execution", { sourceRef: ref }]]);
    assert.equal(textOf(r), "from a legacy sourceRef 42\n");
    assert.equal(r.details.status, "success");
  });

  test("a sourceRef whose file is gone is recovered from the code_execution call on this branch", async () => {
    const code = "print('recovered from the branch')";
    const [first] = await callAs(pi, [["code_execution", { code }]]);
    assert.equal(first.isError, false);
    const ref = { artifactId: `${sha256(code).slice(0, 16)}.py`, lines: 1, sha256: sha256(code).slice(0, 12) };
    const [r] = await callAs(pi, [["code_execution", { sourceRef: ref }]]);
    assert.equal(textOf(r), "recovered from the branch\n");
  });

  test("XML-like and path-bearing placeholders in code run the script they name", async () => {
    const code = "import sys\nprint('placeholder ran', sys.version_info[0])";
    const ref = saveLegacySource(code);
    const placeholders = [
      `<code_execution_source_redacted artifact="${ref.artifactId}" tool_call_id="call%2F1" lines="${ref.lines}" sha256="${ref.sha256}">`,
      `<code_execution_source_redacted path="/home/old/.pi/agent/code-execution/${ref.artifactId}" lines="${ref.lines}" sha256="${ref.sha256}">`,
      `# previous code_execution source saved to /home/old/.pi/agent/code-execution/${ref.artifactId} (${ref.lines} lines, sha256:${ref.sha256.slice(0, 12)})`,
    ];
    const results = await callAs(
      pi,
      placeholders.map((code) => ["code_execution", { code }] as [string, Record<string, unknown>]),
    );
    for (const r of results) assert.equal(textOf(r), "placeholder ran 3\n");
  });

  test("a placeholder that names no saved file is refused, saying what to send", async () => {
    const [r] = await callAs(pi, [
      ["code_execution", { code: "# code omitted after execution (3 lines, sha256:0123abcd)" }],
    ]);
    assert.equal(r.isError, true);
    assert.match(textOf(r), /placeholder for an earlier script that names no saved file; nothing was run/);
  });

  test("a sourceRef that does not match its file fails and says not to retry", async () => {
    const ref = saveLegacySource("print('the real one')");
    const [r] = await callAs(pi, [["code_execution", { sourceRef: { ...ref, lines: 9 } }]]);
    assert.equal(r.isError, true);
    assert.match(textOf(r), /does not match its reference.*Do not retry/);
  });

  test("a short sourceId also finds a script saved under its longer legacy name", async () => {
    const code = "print('found by its short id')";
    saveLegacySource(code);
    const [r] = await callAs(pi, [["code_execution", { sourceId: sha256(code).slice(0, 12) }]]);
    assert.equal(textOf(r), "found by its short id\n");
  });

  test("code_execution_source reads the script a legacy sourceRef names", async () => {
    const code = "x = 1\nprint(x)";
    const ref = saveLegacySource(code);
    const [r] = await callAs(pi, [["code_execution_source", { sourceRef: ref }]]);
    assert.match(
      textOf(r),
      new RegExp(`^\\[source ${sha256(code).slice(0, 12)} \\(was ${ref.artifactId}.*\\]\\nx = 1\\nprint\\(x\\)$`),
    );
  });

  test("the context hook shows a placeholder in code as the structured sourceRef it names", async () => {
    const ref = saveLegacySource("print('seen as a sourceRef')");
    const placeholder = `<code_execution_source_redacted artifact="${ref.artifactId}" lines="${ref.lines}" sha256="${ref.sha256}">`;
    let seen: any;
    pi.faux.setResponses([
      fauxAssistantMessage([fauxToolCall("code_execution", { code: placeholder }, { id: "legacy-1" })], {
        stopReason: "toolUse",
      }),
      (context: any) => {
        seen = context.messages
          .flatMap((m: any) => (m.role === "assistant" ? m.content : []))
          .find((b: any) => b.type === "toolCall" && b.id === "legacy-1");
        return fauxAssistantMessage("done");
      },
    ]);
    await pi.session.prompt("rerun the old script");
    assert.deepEqual(seen.arguments, { sourceRef: { ...ref, toolCallId: "legacy-1" } });
    assert.equal(textOf(pi.toolResults().at(-1)!), "seen as a sourceRef\n");
  });
});

describe("legacy output references", () => {
  /** A transcript saved as an earlier pi-code-execution did: `<64 hex>.out`, named by its metadata, no sidecar. */
  function saveLegacyOutput(text: string) {
    const bytes = Buffer.from(text, "utf8");
    const meta = {
      emittedBytes: bytes.length,
      lines: lines(text.replace(/\n$/, "")),
      retainedBytes: bytes.length,
      retainedLines: lines(text.replace(/\n$/, "")),
      sha256: sha256(bytes),
      truncated: false,
    };
    const artifactId = legacyOutputArtifactId(meta);
    const dir = join(pi.agentDir, "code-execution-output");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, artifactId), bytes, { mode: 0o600 });
    return { artifactId, ...meta, toolCallId: "call-old" };
  }

  test("code_execution_output accepts an earlier session's outputRef and pages it", async () => {
    const outputRef = saveLegacyOutput("alpha\nbeta\n[stderr]\ngamma\n");
    const [all, tail] = await callAs(pi, [
      ["code_execution_output", { outputRef }],
      ["code_execution_output", { outputRef, offset: 11 }],
    ]);
    assert.equal(
      textOf(all),
      `[output ${outputRef.artifactId}: bytes 0-25 of 26; end of output]\nalpha\nbeta\n[stderr]\ngamma\n`,
    );
    assert.equal(all.details.artifactId, outputRef.artifactId);
    assert.equal(textOf(tail), `[output ${outputRef.artifactId}: bytes 11-25 of 26; end of output]\n[stderr]\ngamma\n`);
  });

  test("an outputRef whose metadata or file was changed is refused", async () => {
    const outputRef = saveLegacyOutput("kept\n");
    const [forged, wrongFile] = await callAs(pi, [
      ["code_execution_output", { outputRef: { ...outputRef, lines: 2, retainedLines: 2 } }],
      ["code_execution_output", { outputRef: saveLegacyOutput("other\n") }],
    ]);
    assert.equal(forged.isError, true);
    assert.match(textOf(forged), /artifactId does not match its metadata/);
    // The second file is fine; now make one that is readable by others.
    assert.equal(wrongFile.isError, false);
    const open = saveLegacyOutput("open to all\n");
    chmodSync(join(pi.agentDir, "code-execution-output", open.artifactId), 0o644);
    const [r] = await callAs(pi, [["code_execution_output", { outputRef: open }]]);
    assert.equal(r.isError, true);
    assert.match(textOf(r), /readable or writable by others/);
  });

  test("give outputId or outputRef, exactly one", async () => {
    const [r] = await callAs(pi, [["code_execution_output", {}]]);
    assert.equal(r.isError, true);
    assert.match(textOf(r), /give `outputId` \(or an earlier session's `outputRef`\), exactly one/);
  });
});

describe("a Pi tool's own truncated output", () => {
  test("bash output Pi truncated reaches Python whole (up to 5 MiB)", async () => {
    const [r] = await callAs(pi, [
      [
        "code_execution",
        { code: "out = await bash(command='seq 1 30000')\nls = out.splitlines()\nprint(len(ls), ls[0], ls[-1])" },
      ],
    ]);
    assert.equal(textOf(r), "30000 1 30000\n");
  });

  test("a full output over 5 MiB fails the call, saying to filter at the source", async () => {
    const [r] = await callAs(pi, [
      [
        "code_execution",
        {
          code: [
            "try:",
            "    await bash(command=\"head -c 6000000 /dev/zero | tr '\\\\0' 'a' | fold -w 100\")",
            "except RuntimeError as e:",
            "    print(str(e)[:400])",
          ].join("\n"),
        },
      ],
    ]);
    assert.match(
      textOf(r),
      /the full output is 60\d{5} bytes, over the 5 MiB code can recover .*Filter the output at the source/,
    );
  });
});

describe("uv's certificate hint", () => {
  test("a package index uv cannot verify gives the uv_certificate hint naming UV_SYSTEM_CERTS and UV_NATIVE_TLS", async () => {
    const dir = tempDir("pcs-uv-cert-");
    const uv = join(dir, "uv");
    writeFileSync(
      uv,
      "#!/bin/sh\necho 'error: Request failed after 3 retries' >&2\necho '  Caused by: invalid peer certificate: UnknownIssuer' >&2\nexit 2\n",
    );
    chmodSync(uv, 0o755);
    const old = process.env.PI_CODE_EXECUTION_UV;
    process.env.PI_CODE_EXECUTION_UV = uv;
    try {
      const [r] = await callAs(pi, [
        ["code_execution", { code: '# /// script\n# dependencies = ["tinypkg==9.9"]\n# ///\nprint(1)' }],
      ]);
      assert.equal(r.details.status, "setup_error");
      assert.match(textOf(r), /\[hint uv_certificate: .*SSL_CERT_FILE.*UV_SYSTEM_CERTS=1.*UV_NATIVE_TLS=1/);
    } finally {
      if (old === undefined) delete process.env.PI_CODE_EXECUTION_UV;
      else process.env.PI_CODE_EXECUTION_UV = old;
    }
  });
});
