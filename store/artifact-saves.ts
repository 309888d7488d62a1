// Output artifacts saved after the result: a run's result names its outputId (computed in memory) and the file is
// written once the result is on its way. A read of that output in this process waits for the write, and a write that
// failed is reported by the read with its reason, so a result never names an output that silently is not there.
import { ArtifactUnavailableError } from "./artifact-fs.ts";

/** The process's saves. Pi loads the extension with its own module loader and no module cache, so one process can
 * hold several copies of this module (the extension after a reload or a session switch, and whatever imports it
 * directly: a test, a bench, another extension through `pi-code-supervisor/host`); the saves in flight are the
 * process's, so every copy keeps them in this one place (a registered symbol on globalThis). */
interface Saves {
  /** Saves in flight, and failed ones (kept so a later read can say why), by `<root>\0<outputId>`. */
  saves: Map<string, Promise<string | undefined>>;
  /** Failed saves' keys, oldest first. */
  failed: string[];
  /** Whether the last save that ended failed: then the next result waits for its save, so it can say why. */
  lastFailed: boolean;
}
const SLOT = Symbol.for("pi-code-supervisor.artifact-saves");
const state: Saves = ((globalThis as { [SLOT]?: Saves })[SLOT] ??= { saves: new Map(), failed: [], lastFailed: false });
const { saves } = state;
/** Failed saves remembered at most (oldest forgotten first: a read then finds no file and says so). */
const MAX_FAILED = 100;

const keyOf = (root: string, outputId: string) => `${root}\0${outputId}`;

export const savesFailing = (): boolean => state.lastFailed;

/** Starts `write` and remembers it until it lands; its failure stays known to reads. Resolves with the failure's
 * reason, or undefined once saved. */
export function saveInBackground(
  root: string,
  outputId: string,
  write: () => Promise<unknown>,
): Promise<string | undefined> {
  const key = keyOf(root, outputId);
  state.failed = state.failed.filter((k) => k !== key);
  const previous = saves.get(key);
  const done = (previous ?? Promise.resolve(undefined)).then(() =>
    write().then(
      () => undefined,
      (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 300),
    ),
  );
  saves.set(key, done);
  return done.then((error) => {
    state.lastFailed = error !== undefined;
    if (saves.get(key) !== done) return error;
    if (error === undefined) saves.delete(key);
    else {
      state.failed = [...state.failed.filter((k) => k !== key), key];
      while (state.failed.length > MAX_FAILED) saves.delete(state.failed.shift()!);
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
