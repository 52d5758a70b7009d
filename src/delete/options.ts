/**
 * The delete capability's one defaults object and the checks of its options (before any request).
 *
 * @module
 */
import { checkKnownOptions } from '../core/options.js';
import { checkDurationMs, checkServerId } from '../core/validate.js';
import { ValidationError, throwIfAborted } from '../errors/index.js';
import type { DeleteServerOptions, DeleteServersOptions, WaitForDeleteOptions } from './types.js';

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

const WAIT_KEYS = ['intervalMs', 'confirmIntervalMs', 'jitter', 'timeoutMs', 'signal', 'onProgress', 'onFailure', 'requestTimeoutMs', 'pollRetries'] as const;
const DELETE_KEYS = [...WAIT_KEYS, 'wait', 'redeleteAfterMs', 'forceSoftDeleted', 'confirmGoneMs', 'deleteRetries', 'force'] as const;
const DELETE_MANY_KEYS = [...DELETE_KEYS, 'concurrency', 'onSettled'] as const;

function checkNonNegativeInteger(name: string, value: unknown): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 0)) {
    throw new ValidationError(`${name} must be a non-negative integer, got ${String(value)}`);
  }
}

function checkBoolean(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') throw new ValidationError(`${name} must be a boolean, got ${String(value)}`);
}

function checkWaitValues(options: WaitForDeleteOptions): void {
  checkDurationMs('intervalMs', options.intervalMs, { allowInfinity: false, timer: true });
  checkDurationMs('confirmIntervalMs', options.confirmIntervalMs, { allowInfinity: false, timer: true });
  checkDurationMs('timeoutMs', options.timeoutMs, { timer: true });
  checkDurationMs('requestTimeoutMs', options.requestTimeoutMs, { timer: true });
  const jitter = options.jitter;
  if (jitter !== undefined && (typeof jitter !== 'number' || !(jitter >= 0 && jitter < 1))) {
    throw new ValidationError(`jitter must be a number in [0, 1), got ${String(jitter)}`);
  }
  checkNonNegativeInteger('pollRetries', options.pollRetries);
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') throw new ValidationError('onProgress must be a function');
  if (options.onFailure !== undefined && typeof options.onFailure !== 'function') throw new ValidationError('onFailure must be a function');
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new ValidationError('signal must be an AbortSignal');
}

/**
 * Check the options of `waitForDelete`.
 * @throws {@link ValidationError} for an unknown option name or a bad value; {@link AbortError} when `signal` is already aborted.
 */
export function checkWaitOptions(options: WaitForDeleteOptions): void {
  checkKnownOptions('waitForDelete options', options, WAIT_KEYS);
  checkWaitValues(options);
  throwIfAborted(options.signal);
}

/**
 * Check the options of `deleteServer` (the wait's included) without an id: what the reaper and the
 * quota guard check when they are given `deleteOptions`.
 * @throws {@link ValidationError} for an unknown option name or a bad value; {@link AbortError} when `signal` is already aborted.
 */
export function checkDeleteOptions(options: DeleteServerOptions, keys: readonly string[] = DELETE_KEYS): void {
  checkKnownOptions('deleteServer options', options, keys);
  checkWaitValues(options);
  checkDurationMs('redeleteAfterMs', options.redeleteAfterMs, { allowZero: true, timer: true });
  checkDurationMs('confirmGoneMs', options.confirmGoneMs, { allowZero: true });
  checkNonNegativeInteger('deleteRetries', options.deleteRetries);
  for (const name of ['wait', 'forceSoftDeleted', 'force'] as const) checkBoolean(name, options[name]);
  throwIfAborted(options.signal);
}

/** Check the ids and options of `deleteServers`. @throws {@link ValidationError} */
export function checkDeleteManyOptions(ids: unknown, options: DeleteServersOptions): asserts ids is readonly string[] {
  if (!Array.isArray(ids)) throw new ValidationError('deleteServers needs an array of server ids');
  checkDeleteOptions(options, DELETE_MANY_KEYS);
  for (const id of ids) checkServerId('server id', id);
  const c = options.concurrency;
  if (c !== undefined && (typeof c !== 'number' || !Number.isInteger(c) || c < 1)) throw new ValidationError(`concurrency must be a positive integer, got ${String(c)}`);
  if (options.onSettled !== undefined && typeof options.onSettled !== 'function') throw new ValidationError('onSettled must be a function');
}
