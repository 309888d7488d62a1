// Names the tool sets runs expose. A run's events carry the set's id and the tools' names only; the runner sends a
// set's specs (signatures, descriptions) to its process the first time, then the id alone. Two lists of the same specs
// in the same order are one set (the extension usually hands over the very same objects, which compare at once).
import type { ExposedTool, ToolSpec } from "../machines/tool-events.ts";

/** How many recent sets are recognised (surfaces alternating between a few sets keep their ids). */
const RECENT = 8;

interface KnownSet {
  specs: ToolSpec[];
  toolSet: string;
  tools: ExposedTool[];
}

function same(a: ToolSpec, b: ToolSpec): boolean {
  return (
    a === b ||
    (a.name === b.name && a.python === b.python && a.signature === b.signature && a.description === b.description)
  );
}

export class ToolSets {
  private recent: KnownSet[] = [];
  private count = 0;

  /** The set's id and exposed names: an id already given when the specs are the same, in the same order. */
  of(specs: ToolSpec[]): { toolSet: string; tools: ExposedTool[] } {
    const known = this.recent.find((s) => s.specs.length === specs.length && s.specs.every((x, i) => same(x, specs[i]!)));
    if (known) return { toolSet: known.toolSet, tools: known.tools };
    const set = {
      specs,
      toolSet: `t${++this.count}`,
      tools: specs.map((s) => ({ name: s.name, python: s.python })),
    };
    this.recent = [set, ...this.recent.slice(0, RECENT - 1)];
    return { toolSet: set.toolSet, tools: set.tools };
  }
}
