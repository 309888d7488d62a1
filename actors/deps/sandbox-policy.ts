// What a PEP 723 install may do under the sandbox. The working directory is writable by sandboxed code, so anything
// built from it (a local path, a `file://` URL, a VCS checkout's build backend) would run code the sandboxed code
// wrote, with the environment directory writable: such requirements are refused with a hint, and the installer
// takes wheels only (pip `--only-binary :all:`, uv `--no-build`), so no build backend runs at install time. The
// local backend is left as it was (a user's own sdists and file:// requirements install there).
import type { Hint } from "../../machines/events.ts";
import { HINT_IDS } from "./hints.ts";
import type { Installer } from "./installer.ts";

/** Archive names pip installs as a local file when one by that name exists (pip's `is_archive_file`). */
const ARCHIVE = /\.(whl|zip|tar|tgz|tbz|txz|tlz|tar\.(gz|bz2|xz|lz|lzma)|pybundle)\s*$/i;
/** Direct references that build from something local or checked out (PEP 508 `name @ url`). */
const LOCAL_URL = /^(file:|(git|hg|svn|bzr)\+)/i;

/** Why the sandbox will not install `requirement`, or undefined when it may (a name, extras, versions, markers, or
 * a direct reference to a remote URL, which `--only-binary` still holds to wheels). */
export function sandboxRequirementProblem(requirement: string): string | undefined {
  const withoutMarker = requirement.split(";")[0]!.trim();
  const at = withoutMarker.indexOf("@");
  if (at >= 0) {
    const url = withoutMarker.slice(at + 1).trim();
    if (LOCAL_URL.test(url)) return `${url.split(":")[0]} URL`;
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return "a local path";
    return undefined;
  }
  if (/[/\\]/.test(withoutMarker) || /^[.~]/.test(withoutMarker)) return "a local path";
  if (ARCHIVE.test(withoutMarker)) return "a local archive";
  return undefined;
}

/** The refusal for a dependency list under the sandbox, or undefined when every requirement may be installed. */
export function sandboxRefusal(dependencies: readonly string[]): { message: string; hint: Hint } | undefined {
  const refused = dependencies
    .map((d) => [d, sandboxRequirementProblem(d)] as const)
    .filter((x): x is readonly [string, string] => x[1] !== undefined);
  if (refused.length === 0) return undefined;
  const list = refused.map(([d, why]) => `${JSON.stringify(d)} (${why})`).join(", ");
  return {
    message:
      `the sandbox does not install ${list}: building it would run code from a place sandboxed code can write, ` +
      "and nothing was installed; the code did not run",
    hint: {
      id: HINT_IDS.sandboxLocalRequirement,
      text:
        "Under the sandbox, PEP 723 dependencies install from wheels only, by name (from the package index, or a " +
        "find-links directory given with PIP_FIND_LINKS / UV_FIND_LINKS); local paths, file:// and VCS " +
        "requirements are refused. Build the wheel outside the sandbox and name the package, or run this on the " +
        "local backend.",
    },
  };
}

/** The installer arguments that keep an install under the sandbox to wheels (no build backend runs). */
export function wheelsOnly(installer: Installer, sandboxed: boolean): string[] {
  if (!sandboxed) return [];
  return installer.kind === "uv" ? ["--no-build"] : ["--only-binary", ":all:"];
}
