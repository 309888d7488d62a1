// Output artifacts saved after the result: a run's result names its outputId (computed in memory) and the file is
// written once the result is on its way. A read of that output in this process waits for the write, and a write that
// failed is reported by the read with its reason, so a result never names an output that silently is not there.
import { ArtifactUnavailableError } from "./artifact-fs.ts";

/** Saves in flight, and failed ones (kept so a later read can say why), by `<root>\0<outputId>`. */
const saves = new Map<string, Promise<string | undefined>>();
/** Failed saves remembered at most (oldest forgotten first: a read then finds no file and says so). */
const MAX_FAILED = 100;
let failed: string[] = [];

const keyOf = (root: string, outputId: string) => `${root}\0${outputId}`;

/** Whether the last save that ended failed: then the next result waits for its save, so it can say why. */
let lastFailed = false;
export const savesFailing = (): boolean => lastFailed;

/** Starts `write` and remembers it until it lands; its failure stays known to reads. Resolves with the failure's
 * reason, or undefined once saved. */
export function saveInBackground(
  root: string,
  outputId: string,
  write: () => Promise<unknown>,
): Promise<string | undefined> {
  const key = keyOf(root, outputId);
  failed = failed.filter((k) => k !== key);
  const previous = saves.get(key);
  const done = (previous ?? Promise.resolve(undefined)).then(() =>
    write().then(
      () => undefined,
      (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 300),
    ),
  );
  saves.set(key, done);
  return done.then((error) => {
    lastFailed = error !== undefined;
    if (saves.get(key) !== done) return error;
    if (error === undefined) saves.delete(key);
    else {
      failed = [...failed.filter((k) => k !== key), key];
      while (failed.length > MAX_FAILED) saves.delete(failed.shift()!);
    }
    return error;
  });
}

/** Resolves when every save started so far has landed or failed (Pi's shutdown waits for them). */
export async function savesLanded(): Promise<void> {
  await Promise.all([...saves.values()]);
}

/** Waits for this process's save of the output, if one is in flight; a failed save is an unavailable artifact. */
export async function savedBeforeRead(root: string, outputId: string): Promise<void> {
  const pending = saves.get(keyOf(root, outputId));
  if (!pending) return;
  const error = await pending;
  if (error !== undefined) throw new ArtifactUnavailableError(`output ${outputId} could not be saved: ${error}`);
}
