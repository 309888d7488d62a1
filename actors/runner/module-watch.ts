// Watching a session's local modules. After each run the runner reports the modules it imported from files since
// the previous run; those under the session's working directory are watched (chokidar). When one changes on
// disk, the next run's frame names it, the runner reloads it before the code runs (importlib.reload, in import
// order) and the result says which modules were reloaded. The limits of importlib.reload apply (README: objects
// created from the old module keep the old class; `from m import x` names keep the old object).
import { realpathSync } from "node:fs";
import { stat } from "node:fs/promises";
import { sep } from "node:path";
import { watch, type FSWatcher } from "chokidar";

export interface ModuleWatch {
  /** The runner's `modules` report: `[name, file, mtimeNs]`; those under the working directory are watched. */
  track(modules: unknown): void;
  /** Modules whose files changed since the last call, in import order; the set is then cleared. */
  take(): string[];
  /** Modules being watched (for status and tests). */
  watched(): string[];
  close(): void;
}

const CATCH_UP_MS = 300;

/** Directories under the working directory whose modules are not the user's own. */
const FOREIGN = /[/\\](?:\.venv|venv|\.tox|node_modules|__pypackages__|\.git)[/\\]/;

export function watchModules(cwd: string): ModuleWatch {
  const roots = new Set<string>([cwd]);
  try {
    roots.add(realpathSync(cwd));
  } catch {
    // The directory is gone: nothing will match.
  }
  const prefixes = [...roots].map((r) => (r.endsWith(sep) ? r : r + sep));
  /** file -> module names (a file can be imported under two names), in import order. */
  const files = new Map<string, string[]>();
  const changed = new Set<string>();
  /** file -> the modification time last accounted for (the runner's, then each change's). */
  const known = new Map<string, string>();
  let watcher: FSWatcher | undefined;
  let closed = false;

  /** A file counts as changed when its mtime differs from the last one accounted for: one edit that produces
   * several events reloads once. */
  const check = (path: string) => {
    if (!files.has(path)) return;
    void stat(path, { bigint: true }).then(
      (st) => {
        const mtime = String(st.mtimeNs);
        if (closed || known.get(path) === mtime) return;
        known.set(path, mtime);
        for (const name of files.get(path) ?? []) changed.add(name);
      },
      () => {},
    );
  };
  /** Setting up a watch takes a moment: an edit made before it is caught by comparing the mtime the runner saw. */
  const catchUp = (added: string[]) => {
    const timer = setTimeout(() => added.forEach(check), CATCH_UP_MS);
    timer.unref();
  };

  return {
    track(modules) {
      if (closed || !Array.isArray(modules)) return;
      const added: string[] = [];
      for (const m of modules) {
        if (!Array.isArray(m) || typeof m[0] !== "string" || typeof m[1] !== "string") continue;
        const [name, file, mtime] = m as [string, string, unknown];
        if (!prefixes.some((p) => file.startsWith(p)) || FOREIGN.test(file)) continue;
        const names = files.get(file);
        if (names) {
          if (!names.includes(name)) names.push(name);
          continue;
        }
        files.set(file, [name]);
        added.push(file);
        if (typeof mtime === "string") known.set(file, mtime);
      }
      if (added.length === 0) return;
      if (!watcher) {
        watcher = watch(added, { ignoreInitial: true, atomic: 50 });
        watcher.on("change", check);
        watcher.on("add", check);
        watcher.on("error", () => {});
      } else watcher.add(added);
      catchUp(added);
    },
    take() {
      if (changed.size === 0) return [];
      const order: string[] = [];
      for (const names of files.values()) for (const n of names) if (changed.has(n)) order.push(n);
      changed.clear();
      return order;
    },
    watched() {
      return [...files.values()].flat();
    },
    close() {
      closed = true;
      void watcher?.close();
      watcher = undefined;
    },
  };
}
