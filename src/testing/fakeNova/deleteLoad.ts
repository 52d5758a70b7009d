/**
 * How long a deleted server shows status `DELETED` before its 404, as a function of the load on the
 * compute side.
 *
 * Measured on a real Nova 26.2 (Zed) with the fake virt driver and one nova-compute: a single
 * DELETE shows `DELETED` (`vm_state` `deleted`, `task_state` null) for 20 to 100 ms before GET
 * answers 404; with 40 DELETEs in flight the window lasts seconds (median 7 s, up to 12 s), because
 * the compute host finishes the deletes one after another. Nova keeps counting the server's cores,
 * RAM and instance (in `/limits` and the quota-set detail `in_use`) until the 404: usage drops in the
 * same step as `instance.destroy()` (Nova API reference, "Delete Server": the 204 only starts the delete).
 *
 * @module
 */
import { MAX_TIMER_MS } from '../../core/validate.js';

/** A `DELETED` window: fixed, or a function of the number of deletes in flight. */
export type DeletedWindow = number | ((inFlightDeletes: number) => number);

/** Base of {@link realNovaDeletedWindowMs}: the window of a delete that is alone, in ms. */
export const REAL_NOVA_DELETED_WINDOW_BASE_MS = 50;
/** Slope of {@link realNovaDeletedWindowMs}: added per other delete in flight, in ms. */
export const REAL_NOVA_DELETED_WINDOW_PER_DELETE_MS = 300;

/**
 * Real Nova's `DELETED` window under load: `50 + 300 * (inFlightDeletes - 1)` ms, so 50 ms for a
 * delete that is alone, about 6 s for 20 in flight and 11.75 s for 40 (measured on Nova 26.2 with
 * the fake virt driver: 20 to 100 ms alone; median 7 s, up to 12 s, with 40 in flight).
 *
 * @param inFlightDeletes - Deletes the compute side is working on (this one included): accepted
 *   by the API, not yet destroyed (404), failed or soft-deleted. Values below 1 count as 1.
 * @returns the window in milliseconds.
 */
export function realNovaDeletedWindowMs(inFlightDeletes: number): number {
  return REAL_NOVA_DELETED_WINDOW_BASE_MS + REAL_NOVA_DELETED_WINDOW_PER_DELETE_MS * Math.max(0, inFlightDeletes - 1);
}

/**
 * The window function of an option value: a number is a fixed window; a function's result is kept
 * within 0 to 2147483647 ms (NaN or negative = 0), so a test's function cannot break the fake's timers.
 */
export function windowFunction(value: DeletedWindow): (inFlightDeletes: number) => number {
  if (typeof value === 'number') return () => value;
  return (n) => {
    const ms = value(n);
    return typeof ms === 'number' && ms > 0 ? Math.min(ms, MAX_TIMER_MS) : 0;
  };
}
