/**
 * The delete capability's one defaults object and the checks of its options (before any request).
 *
 * @module
 */
import { checkOptions, type OptionCheck, type OptionsSpec } from '../core/options.js';
import { checkServerId, is } from '../core/validate.js';
import { ValidationError, throwIfAborted } from '../errors/index.js';
import type { DeleteEngineOptions, DeleteServerOptions, DeleteServersOptions, WaitForDeleteOptions } from './types.js';

/** Defaults of `waitForDelete`, `deleteServer` and `deleteServers` (durations in ms). */
export const DELETE_DEFAULTS = Object.freeze({
  /** osc-lib's `sleep_time`. */
  intervalMs: 5000,
  /** Observation interval once the server shows DELETED: `min(intervalMs, confirmIntervalMs)`. */
  confirmIntervalMs: 1000,
  jitter: 0.1,
  /** osc-lib's `timeout`. */
  timeoutMs: 300_000,
  pollRetries: 4,
  redeleteAfterMs: 30_000,
  deleteRetries: 3,
  concurrency: 10,
});

/** What `waitForDelete` takes (see {@link WaitForDeleteOptions}). */
const WAIT_SPEC: OptionsSpec<WaitForDeleteOptions> = {
  intervalMs: is.durationMs({ allowInfinity: false, timer: true }),
  confirmIntervalMs: is.durationMs({ allowInfinity: false, timer: true }),
  jitter: is.number({ min: 0, max: 1, maxExclusive: true }),
  timeoutMs: is.durationMs({ timer: true }),
  signal: is.signal,
  onProgress: is.function,
  onFailure: is.function,
  requestTimeoutMs: is.durationMs({ timer: true }),
  pollRetries: is.integer(),
};

/** What `deleteServer` takes (see {@link DeleteServerOptions}). */
const DELETE_SPEC: OptionsSpec<DeleteServerOptions> = {
  ...WAIT_SPEC,
  wait: is.boolean,
  redeleteAfterMs: is.durationMs({ allowZero: true, timer: true }),
  forceSoftDeleted: is.boolean,
  confirmGoneMs: is.durationMs({ allowZero: true }),
  deleteRetries: is.integer(),
  force: is.boolean,
};

/** What `deleteServers` takes (see {@link DeleteServersOptions}). */
const DELETE_MANY_SPEC: OptionsSpec<DeleteServersOptions> = {
  ...DELETE_SPEC,
  concurrency: is.integer({ min: 1 }),
  onSettled: is.function,
};

/** What a `DeleteEngine` takes (see {@link DeleteEngineOptions}). */
const DELETE_ENGINE_SPEC: OptionsSpec<DeleteEngineOptions> = {
  coalesce: is.boolean,
  watchIntervalMs: is.durationMs({ timer: true }),
  maxRequestsPerSecond: (value, name) => {
    if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) throw new ValidationError(`${name} must be a positive number (or Infinity), got ${String(value)}`);
  },
};

/**
 * Check the options of a `DeleteEngine`.
 * @throws {@link ValidationError} for an unknown option name or a bad value.
 */
export function checkEngineOptions(options: DeleteEngineOptions): void {
  checkOptions('DeleteEngine options', options, DELETE_ENGINE_SPEC);
}

/**
 * Check the options of `waitForDelete`.
 * @throws {@link ValidationError} for an unknown option name or a bad value; {@link AbortError} when `signal` is already aborted.
 */
export function checkWaitOptions(options: WaitForDeleteOptions): void {
  checkOptions('waitForDelete options', options, WAIT_SPEC);
  throwIfAborted(options.signal);
}

/**
 * Check the options of `deleteServer` (the wait's included) without an id: what the reaper and the
 * quota guard check when they are given `deleteOptions`.
 * @param keys - The option names allowed (default: every `deleteServer` option); a caller that sets
 *   some itself (the reaper sets `wait`, `timeoutMs`, `intervalMs`, `signal`) leaves them out.
 * @throws {@link ValidationError} for an unknown option name or a bad value; {@link AbortError} when `signal` is already aborted.
 */
export function checkDeleteOptions(options: DeleteServerOptions, keys: readonly string[] = Object.keys(DELETE_SPEC)): void {
  const all = DELETE_MANY_SPEC as Record<string, OptionCheck | null>;
  checkOptions('deleteServer options', options, Object.fromEntries(keys.map((k) => [k, all[k] ?? null])));
  throwIfAborted(options.signal);
}

/** Check the ids and options of `deleteServers`. @throws {@link ValidationError} */
export function checkDeleteManyOptions(ids: unknown, options: DeleteServersOptions): asserts ids is readonly string[] {
  if (!Array.isArray(ids)) throw new ValidationError('deleteServers needs an array of server ids');
  checkOptions('deleteServers options', options, DELETE_MANY_SPEC);
  throwIfAborted(options.signal);
  for (const id of ids) checkServerId('server id', id);
}
