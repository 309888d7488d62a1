// Where a tool's work ran, in its result's details: every surface marks a result that did not run on this machine
// (code_execution's runs, notebook cells, shell sessions), and the renderers show the mark.
import type { BackendInfo } from "../../host/index.ts";

/** Where a run executed, when not on this machine: the renderers mark such results (`runs on sandbox (bwrap, no
 * network)`, `runs on remote ssh user@host:/srv`). */
export interface BackendMark {
  kind: "sandbox" | "remote";
  label: string;
}

/** `{backend}` for a result's details, or nothing for the local backend. */
export function backendDetails(b: BackendInfo | undefined): { backend?: BackendMark } {
  return b && b.kind !== "local" ? { backend: { kind: b.kind, label: b.label } } : {};
}
