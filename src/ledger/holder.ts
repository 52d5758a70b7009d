/**
 * The checks every ledger makes of its `clock` and `holder` options, and the default holder name.
 *
 * @module
 */
import { hostname } from 'node:os';
import type { Clock } from '../core/clock.js';

/** True when `clock` has the four functions of a {@link Clock}. */
export function isClock(clock: unknown): clock is Clock {
  if (clock === null || typeof clock !== 'object') return false;
  const c = clock as Record<string, unknown>;
  return ['now', 'wallNow', 'setTimeout', 'clearTimeout'].every((k) => typeof c[k] === 'function');
}

/** True when `holder` is a holder name a ledger takes: a non-empty string without commas. */
export function isHolderName(holder: unknown): holder is string {
  return typeof holder === 'string' && holder.trim() !== '' && !holder.includes(',');
}

/** The default holder name: host and process. */
export function defaultHolder(): string {
  return `${hostname()}:${process.pid}`;
}
