/**
 * Small numeric helpers of the benchmarks: a seeded PRNG, a log-normal draw, mean and percentiles.
 *
 * @module
 */

/** Compute API microversion of every benchmark client (as current CI workers send). */
export const MICROVERSION = '2.79';

/** mulberry32: a small seeded PRNG returning floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A log-normal draw with the given median and sigma (of the underlying normal), Box-Muller. */
export function logNormal(random: () => number, median: number, sigma: number): number {
  const u = Math.max(random(), 1e-12);
  const v = random();
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  return median * Math.exp(sigma * z);
}

/** Arithmetic mean (NaN for no values). */
export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** The p-th percentile (0-100), nearest rank. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)));
  return s[rank - 1]!;
}

/** Round to `digits` decimals. */
export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
