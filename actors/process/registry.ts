// Every live runner process group, kept outside XState: no error path in the actor tree can orphan Python
// (a root that errors does not stop its invoked children, xstate#5153). Pi exiting kills whatever is left.
// Pi loads the extension's modules afresh for every Pi session, so module state is per session: the registry is
// process-wide (one per process, under a global symbol), and its `exit` hook is there only while it holds a group.
export interface GroupOwner {
  host: string;
  owner: string;
}

interface Registry {
  groups: Map<number, GroupOwner>;
  killAll: () => void;
}

const KEY = Symbol.for("pi-code-supervisor.process-groups");

const registry: Registry = ((globalThis as Record<symbol, Registry | undefined>)[KEY] ??= (() => {
  const groups = new Map<number, GroupOwner>();
  return {
    groups,
    killAll: () => {
      for (const pgid of groups.keys()) killGroup(pgid, "SIGKILL");
      groups.clear();
    },
  };
})());
const groups = registry.groups;

export function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function registerGroup(pgid: number, owner: GroupOwner): void {
  if (groups.size === 0) process.on("exit", registry.killAll);
  groups.set(pgid, owner);
}

export function unregisterGroup(pgid: number): void {
  if (groups.delete(pgid) && groups.size === 0) process.removeListener("exit", registry.killAll);
}

/** Live process groups, all of them or those of one host (optionally only those of owners matching `owner`). */
export function liveGroups(host?: string, owner?: RegExp): number[] {
  return [...groups]
    .filter(([, o]) => (host === undefined || o.host === host) && (owner === undefined || owner.test(o.owner)))
    .map(([pgid]) => pgid);
}

/** SIGTERM now, SIGKILL after `killMs` if any member survives; the group leaves the registry once it is empty. */
export function stopGroup(pgid: number, killMs: number): Promise<void> {
  killGroup(pgid, "SIGTERM");
  return new Promise((resolve) => {
    const started = Date.now();
    const poll = () => {
      if (!groupAlive(pgid)) {
        unregisterGroup(pgid);
        return resolve();
      }
      if (Date.now() - started >= killMs) {
        killGroup(pgid, "SIGKILL");
        unregisterGroup(pgid);
        return resolve();
      }
      setTimeout(poll, 10);
    };
    poll();
  });
}
