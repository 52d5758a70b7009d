/**
 * What `NovaClient.requestDelete` does after Nova's 404 to its DELETE: the same check every delete
 * function runs (see `presenceCheck.ts`), bounded by the request's time limit.
 *
 * @module
 */
import { timeoutSignal } from '../core/clock.js';
import { MAX_TIMER_MS, is } from '../core/validate.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import { AbortError, DeleteTimeoutError, ValidationError } from '../errors/index.js';
import type { DeleteEngine } from './engine.js';

/** Options of {@link confirmNotFound} (durations in ms). */
export interface ConfirmNotFoundOptions {
  /** How long the check may take, its listings included. */
  timeoutMs: number;
  /** The caller's abort. */
  signal?: AbortSignal | undefined;
}

/** What {@link confirmNotFound} takes. */
const CONFIRM_NOT_FOUND_SPEC: OptionsSpec<ConfirmNotFoundOptions> = { timeoutMs: is.durationMs(), signal: is.signal };

/**
 * After Nova's 404 to the DELETE of `serverId`: resolves when a listing (`GET /servers`, Nova API
 * reference "List Servers") confirms Nova no longer lists it; a failed listing is sent again (backoff
 * from 1 s) within `timeoutMs`.
 * @throws {@link OrphanedServerError} when Nova still lists it (an orphaned instance mapping);
 * {@link DeleteTimeoutError} (`lastStatus` `NOT_FOUND`) when no listing succeeded within `timeoutMs`;
 * {@link AbortError} (its `serverId` set) when `signal` aborts.
 */
export async function confirmNotFound(engine: DeleteEngine, serverId: string, options: ConfirmNotFoundOptions): Promise<void> {
  if (!options || typeof options !== 'object') throw new ValidationError('confirmNotFound needs options ({ timeoutMs })');
  checkOptions('confirmNotFound options', options, CONFIRM_NOT_FOUND_SPEC);
  if (options.timeoutMs === undefined) throw new ValidationError('confirmNotFound: timeoutMs is required (ms)');
  const clock = engine.clock;
  const startedAt = clock.now();
  const limit = timeoutSignal(clock, Math.min(options.timeoutMs, MAX_TIMER_MS), () => new Error('deadline'));
  const signal = options.signal ? AbortSignal.any([options.signal, limit.signal]) : limit.signal;
  try {
    await engine.confirmGone(serverId, signal, 1);
  } catch (e) {
    if (options.signal?.aborted) throw new AbortError(`Deletion of server ${serverId} was aborted`, { cause: options.signal.reason, serverId });
    if (limit.signal.aborted) {
      const elapsedMs = Math.round(clock.now() - startedAt);
      throw new DeleteTimeoutError({ serverId, lastStatus: 'NOT_FOUND', lastTaskState: null, polls: 0, elapsedMs, timeoutMs: options.timeoutMs });
    }
    throw e;
  } finally {
    limit.dispose();
  }
}
