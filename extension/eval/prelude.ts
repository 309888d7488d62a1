// What eval's helpers need from the host (oh-my-pi's read/write/env/output, in both languages): where `local://`
// paths live and where the session's output artifacts are, one directory pair per Pi session under the agent dir.
// Both reach the runtimes through a reserved entry of the run's tool set (`__eval__`, never installed as a name and
// never callable): a run whose set carries it is an eval cell and gets the prelude; a run of another surface in the
// shared notebook session does not, and keeps Pi's `read`/`write` tools under those names.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { evalDirs, type EvalDirs, type RunTool, type RunTools } from "../../host/index.ts";
import { fail } from "../../lib/result.ts";

/** The reserved tool-set entry that marks an eval run and carries its helpers' directories. */
export const EVAL_PRELUDE = "__eval__";

/** The directories (store/eval-files.ts): made private before a cell runs, written by the host. */
export type PreludeDirs = EvalDirs;

/** The directories of this Pi session (created when first written). */
export function preludeDirs(ctx: ExtensionContext): PreludeDirs {
  return evalDirs(ctx.sessionManager.getSessionId());
}

/** The run's tools plus the prelude marker. */
export function withPrelude(tools: RunTools, dirs: PreludeDirs): RunTools {
  const marker: RunTool = {
    spec: {
      name: EVAL_PRELUDE,
      python: "eval_prelude",
      signature: "eval_prelude()",
      description: JSON.stringify(dirs),
    },
    validate: () => fail("eval's prelude entry is not a tool"),
    hooks: {
      dispatch: () => ({
        content: [{ type: "text", text: "eval's prelude entry is not a tool" }],
        isError: true,
      }),
    },
  };
  return { ...tools, tools: [...tools.tools, marker] };
}
