/**
 * The one clock every process of a host agrees on without the wall clock: the host's monotonic
 * clock (`CLOCK_MONOTONIC` on Linux, `mach_absolute_time` on macOS, `QueryPerformanceCounter` on
 * Windows, as libuv's `uv_hrtime` reads it: `process.hrtime.bigint()`). It counts from the host's
 * boot, the same for every process of the host, and NTP, `date -s` or a VM's clock correction after
 * a resume never step it (NTP only slews its rate by a few hundred ppm at most). Leases, place
 * leases, holder entries, the refresh lock and the kept reading's send time of the SQLite ledger
 * are stored in it, so a step of the wall clock, either way, ends or lengthens nothing.
 *
 * Read through the injectable clock: `now()` of a {@link Clock} plus an origin taken once per
 * clock object (`hrtime - clock.now()` at its first use). With `systemClock` (`performance.now()`,
 * itself `uv_hrtime` less the process's start) that is the host's monotonic clock exactly; with a
 * test clock it advances as that clock's `now()` does, and every ledger of one process on the same
 * clock object agrees with the others.
 *
 * It restarts at a reboot: the file keeps the boot id (`/proc/sys/kernel/random/boot_id` on Linux)
 * and the highest reading any process wrote; a new boot id, or a reading below the highest by more
 * than {@link REBOOT_SLACK_MS}, moves every stored time by the difference, so each lease keeps what
 * was left of it (see `store.ts`).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import type { Clock } from '../core/index.js';

/** A reading below the file's highest by more than this, in ms, is a new boot (the clock restarted). */
export const REBOOT_SLACK_MS = 60_000;

const origins = new WeakMap<Clock, number>();

/** The host's monotonic clock in ms, as `uv_hrtime` reads it. */
function hrtimeMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * The host's monotonic clock in ms (see the module description), read through `clock.now()`.
 * @param clock - The injectable clock; its `wallNow()` is never read.
 */
export function hostMonotonic(clock: Clock): () => number {
  let origin = origins.get(clock);
  if (origin === undefined) {
    origin = hrtimeMs() - clock.now();
    origins.set(clock, origin);
  }
  const o = origin;
  return () => clock.now() + o;
}

let boot: string | undefined;

/** The host's boot id (Linux: `/proc/sys/kernel/random/boot_id`); `''` where it cannot be read. */
export function bootId(): string {
  if (boot !== undefined) return boot;
  try {
    boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    boot = '';
  }
  return boot;
}
