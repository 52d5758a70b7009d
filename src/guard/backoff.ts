/**
 * The guard's backoff: p-retry's exponential schedule, with the documented ±jitter.
 *
 * p-retry waits `round(minTimeout × factor^n)`, at most `maxTimeout`, before retry `n + 1` (with
 * `randomize: false`). The guard gives it `factor` 2, `maxTimeout` = `maxDelayMs` and, as
 * `minTimeout`, the call's first delay: `baseDelayMs` spread by `jitter` ({@link jitteredMs}, the one
 * jitter formula), at least `minDelayMs`, drawn once per guarded call. Every delay of a call is then
 * within ±`jitter` of `baseDelayMs × 2^n`, the calls of different workers are spread apart, and the
 * delays of one call grow (docs/field-cases.md, "Several workers, one quota", "Default
 * timings"). p-retry's own `randomize` (a factor in [1, 2)) is not used: it cannot give that ±spread.
 *
 * {@link backoffDelayMs} is the same formula as a plain function, for the guard's waits p-retry does
 * not schedule (waiting for headroom, the pause after a rate limit) and for callers.
 *
 * @module
 */
import { jitteredMs } from '../core/jitter.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import { is } from '../core/validate.js';

/** Backoff parameters (all durations in milliseconds). */
export interface BackoffPolicy {
  /** Delay of the first wait before jitter. */
  baseDelayMs: number;
  /** Floor of every delay (also when Nova sends `Retry-After: 0`). */
  minDelayMs: number;
  /** Ceiling of every delay. */
  maxDelayMs: number;
  /** Random spread: the first delay is `baseDelayMs` times a factor in [1 - jitter, 1 + jitter]. */
  jitter: number;
}

/**
 * The first delay of a call: `baseDelayMs` times a random factor in [1 - jitter, 1 + jitter]
 * ({@link jitteredMs}), clamped to [minDelayMs, maxDelayMs]. Not rounded.
 *
 * @param random - A number in [0, 1); default `Math.random()`.
 */
export function firstDelayMs(policy: BackoffPolicy, random: number = Math.random()): number {
  return Math.min(policy.maxDelayMs, Math.max(policy.minDelayMs, jitteredMs(policy.baseDelayMs, policy.jitter, random)));
}

/** The names of a {@link BackoffPolicy}, each a duration in ms but `jitter` (a fraction in [0, 1)). */
const BACKOFF_POLICY_SPEC: OptionsSpec<BackoffPolicy> = {
  baseDelayMs: is.durationMs({ allowZero: true, allowInfinity: false }),
  minDelayMs: is.durationMs({ allowZero: true, allowInfinity: false }),
  maxDelayMs: is.durationMs({ allowZero: true }),
  jitter: is.number({ min: 0, max: 1, maxExclusive: true }),
};

/**
 * Delay of wait number `step` (0-based), as p-retry computes it from the options of
 * `retrySchedule`: `round(first × 2^step)`, at most `maxDelayMs`, where `first` is
 * `firstDelayMs``(policy, random)`. So the delays are within ±jitter of `baseDelayMs × 2^step`,
 * never below `minDelayMs` nor above `maxDelayMs`, rounded to whole ms.
 *
 * @param step - 0 for the first wait.
 * @param random - A number in [0, 1); default `Math.random()`. One call uses one draw for all its steps.
 */
export function backoffDelayMs(step: number, policy: BackoffPolicy, random: number = Math.random()): number {
  checkOptions('backoffDelayMs policy', policy, BACKOFF_POLICY_SPEC);
  return stepDelayMs(firstDelayMs(policy, random), step, policy.maxDelayMs);
}

/** p-retry's delay before retry `step + 1` for `minTimeout` = `firstMs`, factor 2, `maxTimeout` = `maxDelayMs`. */
export function stepDelayMs(firstMs: number, step: number, maxDelayMs: number): number {
  return Math.min(maxDelayMs, Math.round(firstMs * 2 ** Math.min(Math.max(0, step), 52)));
}

/** The p-retry options of a call's schedule (see the module description). */
export interface RetrySchedule {
  factor: number;
  minTimeout: number;
  maxTimeout: number;
  randomize: false;
}

/**
 * p-retry's backoff options for one guarded call: retry `n + 1` comes
 * {@link stepDelayMs}`(firstMs, n, maxDelayMs)` ms after attempt `n + 1` failed.
 *
 * @param firstMs - The call's first delay (`firstDelayMs`).
 */
export function retrySchedule(firstMs: number, maxDelayMs: number): RetrySchedule {
  return { factor: 2, minTimeout: firstMs, maxTimeout: maxDelayMs, randomize: false };
}
