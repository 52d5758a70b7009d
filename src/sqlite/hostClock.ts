/**
 * The one clock every process of a host agrees on without the wall clock: the host's monotonic
 * clock (`CLOCK_MONOTONIC` on Linux, `mach_absolute_time` on macOS, `QueryPerformanceCounter` on
 * Windows, as libuv's `uv_hrtime` reads it: `process.hrtime.bigint()`). It counts from the host's
 * boot, the same for every process of the host, and NTP, `date -s` or a VM's clock correction after
 * a resume never step it (NTP only slews its rate by a few hundred ppm at most). Leases, place
 * leases, holder entries, the refresh lock and the kept reading's send time of the SQLite ledger
 * are stored in it, so a step of the wall clock, either way, ends or lengthens nothing.
 *
 * Read through the injectable clock: `now()` of a {@link Clock} plus the process's start on the
 * host's monotonic clock ({@link PROCESS_START_MS}, `hrtime - performance.now()`, a constant of the
 * process). With `systemClock` (`performance.now()`, itself `uv_hrtime` less the process's start)
 * that is the host's monotonic clock exactly; with a test clock it advances as that clock's `now()`
 * does, and every ledger of one process on the same clock agrees with the others.
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

/**
 * The process's start on the host's monotonic clock, in ms: `uv_hrtime` less `performance.now()`
 * (which counts from the process's start on that same clock), read once as the module loads.
 */
const PROCESS_START_MS = Number(process.hrtime.bigint()) / 1e6 - performance.now();

/**
 * The host's monotonic clock in ms (see the module description), read through `clock.now()`.
 * @param clock - The injectable clock; its `wallNow()` is never read.
 */
export function hostMonotonic(clock: Clock): () => number {
  return () => clock.now() + PROCESS_START_MS;
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
