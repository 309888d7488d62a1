// PEP 723 inline script metadata: the `# /// script` block, its TOML (parsed here with smol-toml, so the runner
// stays standard-library-only on Python 3.9/3.10 that lack tomllib), the dependency list normalized for cache keys,
// and the `requires-python` check. Pure functions; failures are values.
import { parse, TomlDate, TomlError } from "smol-toml";
import { fail, ok, type Result } from "./result.ts";

export interface ScriptMetadata {
  /** PEP 508 requirement strings, as written. */
  dependencies: string[];
  requiresPython?: string;
  /** Other top-level keys of the block (`tool`, ...): no effect here. */
  otherKeys: string[];
}

// The specification's regular expression (https://peps.python.org/pep-0723/#specification), on LF text.
const BLOCK = /^# \/\/\/ ([a-zA-Z0-9-]+)$\n((?:^#(?:| .*)$\n)+)^# \/\/\/$/gm;

/** Whether the code has what preparation reads as a PEP 723 block (valid or not): code without it needs none. */
export function mentionsScriptBlock(code: string): boolean {
  return code.includes("# /// script");
}

/** The script's metadata, undefined without a `script` block, or why the block is invalid. */
export function parseScriptMetadata(code: string): Result<ScriptMetadata | undefined> {
  if (!mentionsScriptBlock(code)) return ok(undefined);
  const text = code.replace(/\r\n?/g, "\n");
  const blocks = [...text.matchAll(BLOCK)].filter((m) => m[1] === "script");
  if (blocks.length === 0) {
    return fail("a `# /// script` line opens a PEP 723 block that is never closed by a `# ///` line");
  }
  if (blocks.length > 1) return fail("the script has more than one `# /// script` block (PEP 723 allows one)");
  const content = blocks[0][2]
    .split("\n")
    .map((line) => (line.startsWith("# ") ? line.slice(2) : line.slice(1)))
    .join("\n");
  // The block's first TOML line is the line after `# /// script`.
  const firstLine = text.slice(0, blocks[0].index).split("\n").length + 1;
  const parsed = parseBlock(content, firstLine);
  if (!parsed.ok) return fail(`the \`# /// script\` block is not valid TOML: ${parsed.error}`);
  const doc = parsed.value;
  const deps = doc.dependencies ?? [];
  if (!Array.isArray(deps) || deps.some((d) => typeof d !== "string")) {
    return fail("`dependencies` in the `# /// script` block must be an array of strings");
  }
  for (const d of deps as string[]) {
    const problem = requirementProblem(d);
    if (problem) return fail(`dependency ${JSON.stringify(d)} is not a valid requirement: ${problem}`);
  }
  const rp = doc["requires-python"];
  if (rp !== undefined && typeof rp !== "string") return fail("`requires-python` must be a string");
  return ok({
    dependencies: deps as string[],
    ...(rp !== undefined ? { requiresPython: rp } : {}),
    otherKeys: Object.keys(doc).filter((k) => k !== "dependencies" && k !== "requires-python"),
  });
}

/** The block's TOML, or the parser's message with the script line it points at. smol-toml leaves two checks to
 * its caller: integers past 64 bits (read as BigInt here) and impossible dates (JavaScript's Date rolls
 * 2023-02-30 over to 2023-03-02). */
function parseBlock(toml: string, firstLine: number): Result<Record<string, unknown>> {
  let doc: Record<string, unknown>;
  try {
    doc = parse(toml, { integersAsBigInt: "asNeeded" });
  } catch (e) {
    if (!(e instanceof TomlError)) return fail(e instanceof Error ? e.message : String(e));
    const what = e.message.split("\n")[0].replace(/^Invalid TOML document: /, "");
    const line = toml.split("\n")[e.line - 1] ?? "";
    return fail(`${what} (script line ${firstLine + e.line - 1}: \`# ${line}\`)`);
  }
  const problem = valueProblem(doc, toml);
  if (!problem) return ok(doc);
  const lines = toml.split("\n");
  const at = lines.findIndex(problem.on);
  return fail(at < 0 ? problem.message : `${problem.message} (script line ${firstLine + at}: \`# ${lines[at]}\`)`);
}

const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };

/** A value smol-toml accepted that TOML does not, and how to find its line. */
function valueProblem(value: unknown, toml: string): { message: string; on: (line: string) => boolean } | undefined {
  if (typeof value === "bigint") {
    if (value >= INT64.min && value <= INT64.max) return undefined;
    const literal = (token: string) => {
      try {
        return BigInt(token.replace(/_/g, "").replace(/^\+/, "")) === value;
      } catch {
        return false;
      }
    };
    return {
      message: `integer ${value} does not fit in 64 bits`,
      on: (line) => (line.match(/[+-]?(?:0x[\da-fA-F_]+|0o[0-7_]+|0b[01_]+|\d[\d_]*)/g) ?? []).some(literal),
    };
  }
  if (value instanceof TomlDate) {
    if (value.isTime()) return undefined;
    // A date that does not exist was rolled over to one that the block does not contain.
    const day = value.toISOString().slice(0, 10);
    if (toml.includes(day)) return undefined;
    const literal = [...toml.matchAll(/\b(\d{4})-(\d{2})-(\d{2})/g)].find(
      ([, y, m, d]) => Number(d) > new Date(Date.UTC(Number(y), Number(m), 0)).getUTCDate(),
    )?.[0];
    return {
      message: `impossible date ${literal ?? `(read as ${day})`}`,
      on: (line) => literal !== undefined && line.includes(literal),
    };
  }
  if (typeof value === "object" && value !== null) {
    for (const v of Object.values(value)) {
      const problem = valueProblem(v, toml);
      if (problem) return problem;
    }
  }
  return undefined;
}

const NAME = /^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)/;

function requirementProblem(req: string): string | undefined {
  if (!req.trim()) return "it is empty";
  if (!NAME.test(req)) return "it does not start with a project name";
  if (/^\s*-/.test(req)) return "installer options are not requirements";
  return undefined;
}

/** PEP 503 name normalization. */
export function canonicalName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

/** One canonical form per requirement (name normalized, whitespace removed), sorted and deduplicated: the same
 * set written differently shares a cached environment. */
export function normalizeDependencies(deps: readonly string[]): string[] {
  const out = new Set<string>();
  for (const d of deps) {
    const m = NAME.exec(d);
    const rest = m ? d.slice(m[0].length) : d;
    const [spec, marker] = splitMarker(rest);
    const name = m ? canonicalName(m[1]) : d.trim();
    out.add(
      `${name}${spec.replace(/\s+/g, "").toLowerCase()}${marker ? `; ${marker.trim().replace(/\s+/g, " ")}` : ""}`,
    );
  }
  return [...out].sort();
}

function splitMarker(rest: string): [string, string | undefined] {
  const i = rest.indexOf(";");
  return i < 0 ? [rest, undefined] : [rest.slice(0, i), rest.slice(i + 1)];
}

// ---- requires-python (PEP 440 specifiers, the subset that names Python versions) ----

function parseVersion(v: string): number[] | undefined {
  const m = /^\s*v?(\d+(?:\.\d+)*)/.exec(v);
  return m ? m[1].split(".").map(Number) : undefined;
}

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/** Whether Python `version` (e.g. `3.11.2`) satisfies `spec` (e.g. `>=3.10,<4`); undefined when `spec` cannot be
 * read (the caller then does not block the run on it). */
export function satisfiesRequiresPython(version: string, spec: string): boolean | undefined {
  const have = parseVersion(version);
  if (!have) return undefined;
  for (const raw of spec.split(",")) {
    const clause = raw.trim();
    if (!clause) continue;
    const m = /^(~=|===|==|!=|<=|>=|<|>)\s*(\S+)$/.exec(clause);
    if (!m) return undefined;
    const [, op, target] = m;
    if ((op === "==" || op === "!=") && target.endsWith(".*")) {
      const prefix = parseVersion(target.slice(0, -2));
      if (!prefix) return undefined;
      const same = compare(have.slice(0, prefix.length), prefix) === 0;
      if (same !== (op === "==")) return false;
      continue;
    }
    const want = parseVersion(target);
    if (!want) return undefined;
    const c = compare(have, want);
    const pass =
      op === "==" || op === "==="
        ? c === 0
        : op === "!="
          ? c !== 0
          : op === "<="
            ? c <= 0
            : op === ">="
              ? c >= 0
              : op === "<"
                ? c < 0
                : op === ">"
                  ? c > 0
                  : // ~=X.Y: >= X.Y and == X.*
                    c >= 0 && want.length >= 2 && compare(have.slice(0, want.length - 1), want.slice(0, -1)) === 0;
    if (!pass) return false;
  }
  return true;
}
