/**
 * Deletions nobody waits for, followed by the watcher: after a `deleteServer` without `wait`, the
 * client's watcher (its delete engine) keeps looking at the server until Nova's 404, as long as
 * anyone listens for confirmed deletions on the client (a `QuotaGuard` on it). The 404 confirms the
 * deletion in the client's ledger, which tells the listeners: the guard wakes its waiting creates
 * then, instead of at its next `/limits` read. Until then Nova still counts the server's cores, and
 * so does the guard (its headroom is read from Nova).
 *
 * A follow is an ordinary wait of the engine (the same listings, rules of evidence, schedule, rate
 * limit and pace), with the caller's `intervalMs` and `timeoutMs`; it ends at the 404, at its
 * deadline, on a failure (the server then stays in the unconfirmed deletions, as after any
 * `deleteServer` without `wait`), or when the last listener leaves (`QuotaGuard.close()`): nothing
 * is left running for a client nobody listens to.
 *
 * @module
 */
import type { DeleteEngine } from './engine.js';
import { DELETE_DEFAULTS } from './options.js';

/** What a follow takes from the `deleteServer` call that started it (durations in ms). */
export interface FollowOptions {
  intervalMs?: number | undefined;
  confirmIntervalMs?: number | undefined;
  jitter?: number | undefined;
  timeoutMs?: number | undefined;
  requestTimeoutMs?: number | undefined;
  pollRetries?: number | undefined;
}

/** The stop signal of each engine's follows (aborted when its last listener leaves). */
const stops = new WeakMap<DeleteEngine, AbortController>();

/**
 * Follow the accepted deletion of `serverId` until Nova's 404 (see the module), when anyone listens
 * for confirmed deletions on `engine`; otherwise nothing. Never rejects, never throws.
 */
export function followDeletion(engine: DeleteEngine, serverId: string, options: FollowOptions): void {
  if (!engine.ledger.listened) return;
  let stop = stops.get(engine);
  if (!stop || stop.signal.aborted) {
    stop = new AbortController();
    stops.set(engine, stop);
  }
  const intervalMs = options.intervalMs ?? DELETE_DEFAULTS.intervalMs;
  engine
    .watch(serverId, {
      intervalMs,
      confirmIntervalMs: options.confirmIntervalMs ?? Math.min(intervalMs, DELETE_DEFAULTS.confirmIntervalMs),
      jitter: options.jitter ?? DELETE_DEFAULTS.jitter,
      deadlineAt: engine.clock.now() + (options.timeoutMs ?? DELETE_DEFAULTS.timeoutMs),
      requestTimeoutMs: options.requestTimeoutMs,
      pollRetries: options.pollRetries ?? DELETE_DEFAULTS.pollRetries,
      signal: stop.signal,
    })
    .then(
      (end) => engine.api.logger.debug({ serverId, outcome: end.outcome }, 'followed deletion ended'),
      (e: unknown) => engine.api.logger.debug({ serverId, err: e instanceof Error ? e.message : String(e) }, 'followed deletion stopped'),
    );
}

/**
 * Listen for confirmed deletions on `engine`; the function returned unsubscribes and, when it was
 * the last listener, stops the engine's follows.
 */
export function listenForConfirmed(engine: DeleteEngine, listener: (serverId: string) => void): () => void {
  const off = engine.ledger.onConfirmed(listener);
  return () => {
    off();
    if (!engine.ledger.listened) stops.get(engine)?.abort(new Error('no listener for confirmed deletions is left'));
  };
}
