// The code_execution parameters. Names and meanings match the public pi-code-execution extension, so prompts
// written for it keep working. Pi validates the schema first; `checkParams` repeats the checks with messages that
// name the parameter, for callers that bypass Pi's validation.
import { Type, type Static } from "typebox";
import { Value } from "typebox/value";
import { SESSION_NAME_PATTERN } from "../../host/index.ts";
import { legacySourceRefSchema, placeholderRef, type LegacySourceRef } from "./legacy-refs.ts";

/** 1-64 of A-Z a-z 0-9 . _ -, not only dots (`.` and `..` are path names). */
export const SESSION_PATTERN = SESSION_NAME_PATTERN;
export const DEFAULT_TIMEOUT_S = 60;
export const MIN_TIMEOUT_S = 1;
export const MAX_CODE_BYTES = 8 * 1024 * 1024;
export const SOURCE_ID_PATTERN = "^[0-9a-f]{12}$";

/** The timeout ceiling: 3600 s unless PI_CODE_EXECUTION_MAX_TIMEOUT sets another (seconds, >= 1). */
export function maxTimeoutSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.PI_CODE_EXECUTION_MAX_TIMEOUT;
  const n = raw === undefined ? NaN : Number(raw);
  return Number.isFinite(n) && n >= MIN_TIMEOUT_S ? Math.floor(n) : 3600;
}

export function codeExecutionSchema(maxTimeout: number, defaultTimeout: number = DEFAULT_TIMEOUT_S) {
  return Type.Object(
    {
      code: Type.Optional(
        Type.String({
          description:
            "Python source to run. Top-level await is allowed; a final expression's value is shown. Give `code` or `sourceId`, not both.",
        }),
      ),
      sourceId: Type.Optional(
        Type.String({
          pattern: SOURCE_ID_PATTERN,
          description:
            "Rerun the exact saved script with this ID (12 hex characters, from an earlier call's `sourceId`) instead of `code`.",
        }),
      ),
      // pi-code-execution's earlier reference (resumed sessions show it): the script it names runs.
      sourceRef: Type.Optional(legacySourceRefSchema),
      session: Type.Optional(
        Type.String({
          pattern: SESSION_PATTERN,
          description:
            "Name of a persistent Python session (1-64 of A-Z a-z 0-9 . _ -, not only dots). Omit for a fresh process.",
        }),
      ),
      reset: Type.Optional(Type.Boolean({ description: "Stop the named session and start it fresh before running." })),
      timeout: Type.Optional(
        Type.Number({
          minimum: MIN_TIMEOUT_S,
          maximum: maxTimeout,
          description: `Seconds before the run is interrupted (default ${defaultTimeout}, ${MIN_TIMEOUT_S}..${maxTimeout}); dependency installation counts.`,
        }),
      ),
    },
    { additionalProperties: false },
  );
}

export type CodeExecutionParams = Static<ReturnType<typeof codeExecutionSchema>>;

export interface CheckedParams {
  /** Exactly one of `code`, `sourceId` and `sourceRef` (also what an earlier placeholder in `code` names). */
  code?: string;
  sourceId?: string;
  sourceRef?: LegacySourceRef;
  session?: string;
  reset: boolean;
  timeoutMs: number;
}

/** Validates parameters; the error names the parameter and says what is allowed. */
export function checkParams(
  params: unknown,
  maxTimeout: number,
  defaultTimeout: number = DEFAULT_TIMEOUT_S,
): { ok: true; value: CheckedParams } | { ok: false; error: string } {
  if (!params || typeof params !== "object")
    return { ok: false, error: "Parameters must be an object with `code` or `sourceId`." };
  const p = params as Record<string, unknown>;
  for (const key of Object.keys(p)) {
    if (!["code", "sourceId", "sourceRef", "session", "reset", "timeout"].includes(key))
      return { ok: false, error: `Unknown parameter \`${key}\`.` };
  }
  if (p.code !== undefined && p.sourceId !== undefined)
    return { ok: false, error: "Give either `code` or `sourceId`, not both." };
  if (p.sourceRef !== undefined && (p.code !== undefined || p.sourceId !== undefined))
    return { ok: false, error: "Give `sourceRef` alone: not with `code` or `sourceId`." };
  let sourceRef: LegacySourceRef | undefined;
  if (p.sourceRef !== undefined) {
    if (!Value.Check(legacySourceRefSchema, p.sourceRef))
      return {
        ok: false,
        error:
          "Parameter `sourceRef` must be an earlier result's reference as it was given ({artifactId, lines, sha256, toolCallId?}); prefer `sourceId`.",
      };
    sourceRef = p.sourceRef as LegacySourceRef;
  }
  // An earlier context hook's placeholder in `code` names a saved script: that script runs.
  const placeholder = typeof p.code === "string" ? placeholderRef(p.code) : undefined;
  if (placeholder === "unresolvable")
    return {
      ok: false,
      error:
        "Parameter `code` is a placeholder for an earlier script that names no saved file; nothing was run. Send the script itself, or its `sourceId`.",
    };
  if (placeholder) sourceRef = placeholder;
  if (p.sourceId !== undefined && (typeof p.sourceId !== "string" || !new RegExp(SOURCE_ID_PATTERN).test(p.sourceId)))
    return {
      ok: false,
      error: `Parameter \`sourceId\` must be 12 lowercase hex characters from an earlier result (got ${JSON.stringify(p.sourceId)}).`,
    };
  if (p.sourceId === undefined && sourceRef === undefined && typeof p.code !== "string")
    return {
      ok: false,
      error: "Parameter `code` (a string of Python source) or `sourceId` (a saved script's ID) is required.",
    };
  const bytes = typeof p.code === "string" ? Buffer.byteLength(p.code, "utf8") : 0;
  if (bytes > MAX_CODE_BYTES) {
    return {
      ok: false,
      error: `Parameter \`code\` is ${bytes} bytes; the limit is ${MAX_CODE_BYTES} bytes. Write large data to a file and read it from the script.`,
    };
  }
  if (p.session !== undefined && (typeof p.session !== "string" || !new RegExp(SESSION_PATTERN).test(p.session))) {
    return {
      ok: false,
      error: `Parameter \`session\` must be 1-64 characters of A-Z, a-z, 0-9, ".", "_" or "-", not only dots (got ${JSON.stringify(p.session)}).`,
    };
  }
  if (p.reset !== undefined && typeof p.reset !== "boolean")
    return { ok: false, error: "Parameter `reset` must be true or false." };
  if (p.reset === true && p.session === undefined)
    return { ok: false, error: "Parameter `reset` needs `session`: only a named session can be reset." };
  let timeout = Math.min(defaultTimeout, maxTimeout);
  if (p.timeout !== undefined) {
    if (
      typeof p.timeout !== "number" ||
      !Number.isFinite(p.timeout) ||
      p.timeout < MIN_TIMEOUT_S ||
      p.timeout > maxTimeout
    ) {
      return {
        ok: false,
        error: `Parameter \`timeout\` must be a number of seconds from ${MIN_TIMEOUT_S} to ${maxTimeout} (got ${JSON.stringify(p.timeout)}).`,
      };
    }
    timeout = p.timeout;
  }
  return {
    ok: true,
    value: {
      ...(sourceRef
        ? { sourceRef }
        : typeof p.code === "string"
          ? { code: p.code }
          : { sourceId: p.sourceId as string }),
      ...(typeof p.session === "string" ? { session: p.session } : {}),
      reset: p.reset === true,
      timeoutMs: Math.round(timeout * 1000),
    },
  };
}
