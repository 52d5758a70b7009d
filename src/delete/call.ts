/**
 * One delete call's time and cancellation (`deleteServer`, each server of `deleteServers`): its
 * start, its deadline (`timeoutMs`) on the engine's clock, and one signal that aborts on the
 * caller's abort, at the deadline, and when the call settles (so nothing it started runs on).
 *
 * @module
 */
import { timeoutSignal } from '../core/clock.js';
import type { DeleteEngine } from './engine.js';
import { DELETE_DEFAULTS } from './options.js';
import type { DeleteServerOptions } from './types.js';

/** One call's time and cancellation: the caller's signal, the deadline, and the call's own end. */
export interface Call {
  readonly startedAt: number;
  readonly timeoutMs: number;
  /** Aborts on the caller's abort, at the deadline, and when the call settles. */
  readonly signal: AbortSignal;
  elapsedMs(): number;
  timeLeftMs(): number;
  timedOut(): boolean;
  dispose(): void;
}

/** Start the clock of one call (see the module). */
export function startCall(engine: DeleteEngine, options: DeleteServerOptions): Call {
  const clock = engine.clock;
  const startedAt = clock.now();
  const timeoutMs = options.timeoutMs ?? DELETE_DEFAULTS.timeoutMs;
  const ended = new AbortController();
  const deadline = Number.isFinite(timeoutMs) ? timeoutSignal(clock, timeoutMs, () => new Error('deadline')) : undefined;
  const signals = [ended.signal, ...(deadline ? [deadline.signal] : []), ...(options.signal ? [options.signal] : [])];
  return {
    startedAt,
    timeoutMs,
    signal: AbortSignal.any(signals),
    elapsedMs: () => Math.round(clock.now() - startedAt),
    timeLeftMs: () => Math.max(1, startedAt + timeoutMs - clock.now()),
    timedOut: () => deadline?.signal.aborted === true && options.signal?.aborted !== true,
    dispose: () => {
      deadline?.dispose();
      ended.abort(new Error('call settled'));
    },
  };
}
