// A seeded PRNG (mulberry32): small, fast, and the same sequence for the same seed on every platform, so a fuzz
// test or a soak that prints its seed can be replayed exactly.
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return {
    next,
    int,
    chance: (p: number) => next() < p,
    pick: <T>(xs: readonly T[]): T => xs[int(xs.length)]!,
    bytes: (n: number) => Buffer.from(Array.from({ length: n }, () => int(256))),
  };
}

export type Rng = ReturnType<typeof prng>;
