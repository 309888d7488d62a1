// What the tools keep on disk, decided behind the host: each script under its sourceId, a run's transcript when its
// result leaves output out, and eval's files (its directories, its whole output when the text is cut). The extension
// decides what a result says and asks here for anything to be written; the store does the writing and the extension
// reads it back itself (test/system/architecture.test.ts holds extension/ to reads of store/).
import { afterResults, whenResultsDone } from "../lib/after-results.ts";
import type { ChannelCapture } from "../lib/run-output.ts";
import { outputArtifact, outputRoot, writeOutputArtifact, type OutputRef } from "../store/artifacts.ts";
import { saveInBackground, savesFailing } from "../store/artifact-saves.ts";
import { knownSourceId, saveSource, sourceIdOf } from "../store/sources.ts";

export { evalDirs, prepareEvalDirs, type EvalDirs } from "../store/eval-files.ts";
/** Saves a script (idempotent) and resolves with its sourceId; rejects when it cannot be saved (a collision, an
 * unwritable directory), for a caller that then leaves the script where it was. */
export { saveSource as saveScript } from "../store/sources.ts";
/** Resolves when every transcript save started so far has landed or failed (Pi's shutdown waits for them). */
export { savesLanded as artifactsLanded } from "../store/artifact-saves.ts";
/** Saves a cut eval output whole, as an artifact of the Pi session (read back with output("<id>")). */
export { saveEvalOutput as keepEvalOutput } from "../store/eval-files.ts";

/** How a transcript's save went, for the head-tail text: its reference, or why it could not be saved. */
export type ArtifactOutcome = { ok: true; ref: OutputRef } | { ok: false; error: string };

/** A script about to run: its sourceId at once (its digest, so every live update can name it), saved while it runs
 * (off the start-up path). A `sourceId` the call gave names a script verified when it was loaded: nothing is
 * written. A script this process saved before is only checked for after the result (saved again if it was removed
 * meanwhile). `saved` resolves with the sourceId, or undefined when the script could not be saved. */
export function keepScript(code: string, sourceId?: string): { sourceId: string; saved: Promise<string | undefined> } {
  if (sourceId !== undefined) return { sourceId, saved: Promise.resolve(sourceId) };
  const known = knownSourceId(code);
  if (known) {
    afterResults(() => void saveSource(code).catch(() => undefined));
    return { sourceId: known, saved: Promise.resolve(known) };
  }
  return { sourceId: sourceIdOf(code), saved: saveSource(code).catch(() => undefined) };
}

/** Puts back a script found elsewhere (an earlier session's legacy file, the session branch) under its sourceId, the
 * ID it is shown by from now on; a failure does not stop the run that uses it. */
export async function restoreScript(code: string): Promise<void> {
  await saveSource(code).catch(() => undefined);
}

/** Keeps a run's retained transcript, whose result leaves output out, so it can be read back without rerunning.
 * It is written after the result (its outputId is its digest, known now); code_execution_output waits for the save,
 * and says why if it failed. After a failed save, saves come before the result again, so the result can say why. */
export async function keepOutput(capture: {
  stdout: ChannelCapture;
  stderr: ChannelCapture;
}): Promise<ArtifactOutcome> {
  const artifact = outputArtifact(capture);
  const root = outputRoot();
  const failing = savesFailing();
  const write = () => writeOutputArtifact(artifact, root);
  const writing = saveInBackground(root, artifact.ref.outputId, failing ? write : () => whenResultsDone().then(write));
  const error = failing ? await writing : undefined;
  return error === undefined ? { ok: true, ref: artifact.ref } : { ok: false, error };
}
