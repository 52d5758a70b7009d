/**
 * The one jitter formula of nova-guard's own schedules (poll intervals, listing ticks). Backoff
 * between retries is p-retry's (`randomize`), not this.
 *
 * @module
 */

/**
 * `baseMs` spread uniformly over `[baseMs * (1 - jitter), baseMs * (1 + jitter)]`.
 * @param baseMs - The nominal delay, in ms.
 * @param jitter - Spread factor in [0, 1); 0 returns `baseMs`.
 * @param random - A number in [0, 1); default `Math.random()`.
 */
export function jitteredMs(baseMs: number, jitter: number, random: number = Math.random()): number {
  return baseMs * (1 + (random * 2 - 1) * jitter);
}
