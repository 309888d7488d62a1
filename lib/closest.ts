// "Did you mean ...?" for a name that is not known (a tool surface, a setting key, a backend): the known name a
// typo most likely meant, by edit distance with swapped neighbours counted as one edit (`pyhton` -> `python`), or
// nothing when no known name is near enough to be a guess worth making.

/** Edits between `a` and `b`: insertions, deletions, substitutions and swaps of two neighbours (optimal alignment). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The known name closest to `name` (case aside), if it is within a third of the longer one's length (at least one
 * edit); ties go to the first in `known`. */
export function closestName(name: string, known: Iterable<string>): string | undefined {
  const wanted = name.trim().toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const k of known) {
    const distance = editDistance(wanted, k.toLowerCase());
    if (distance === 0) return k;
    if (
      distance <= Math.max(1, Math.floor(Math.max(wanted.length, k.length) / 3)) &&
      (!best || distance < best.distance)
    )
      best = { name: k, distance };
  }
  return best?.name;
}

/** `; did you mean "python"?` when a known name is near, else an empty string: for the end of a warning. `prefix`
 * goes before `name` when the known names carry it (`sandbox.` before a nested key). */
export function didYouMean(name: string, known: Iterable<string>, prefix = ""): string {
  const guess = closestName(prefix + name, known);
  return guess === undefined ? "" : `; did you mean "${guess}"?`;
}
