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
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { DeleteLedger } from './ledger.js';
import { DELETE_DEFAULTS } from './options.js';
import type { WatchEnd, WatchSpec } from './types.js';

/** What a follow takes from the `deleteServer` call that started it (durations in ms). */
export interface FollowOptions {
  intervalMs?: number | undefined;
  confirmIntervalMs?: number | undefined;
  jitter?: number | undefined;
  timeoutMs?: number | undefined;
  requestTimeoutMs?: number | undefined;
  pollRetries?: number | undefined;
}

/** What follows need of their engine (`DeleteEngine` is one). */
export interface FollowEngine {
  /** Its ledger of unconfirmed deletions, whose listeners the follows are for. */
  readonly ledger: DeleteLedger;
  /** The engine's clock (a follow's deadline is on it). */
  readonly clock: Clock;
  /** Its client's logger: how each follow ended goes there (debug). */
  readonly api: { readonly logger: Logger };
  /** Start a wait on `serverId` (`DeleteEngine.watch`): a follow is one. */
  watch(serverId: string, spec: WatchSpec): Promise<WatchEnd>;
}

/** The follows of one delete engine (see the module): `DeleteEngine.follows`. */
export class Follows {
  readonly #engine: FollowEngine;
  /** The stop signal of the follows (aborted when the last listener leaves; a new one after). */
  #stop: AbortController | undefined;

  constructor(engine: FollowEngine) {
    this.#engine = engine;
  }

  /**
   * Follow the accepted deletion of `serverId` until Nova's 404 (see the module), when anyone listens
   * for confirmed deletions on the engine; otherwise nothing. Never rejects, never throws.
   */
  follow(serverId: string, options: FollowOptions): void {
    const engine = this.#engine;
    if (!engine.ledger.listened) return;
    if (!this.#stop || this.#stop.signal.aborted) this.#stop = new AbortController();
    const intervalMs = options.intervalMs ?? DELETE_DEFAULTS.intervalMs;
    engine
      .watch(serverId, {
        intervalMs,
        confirmIntervalMs: options.confirmIntervalMs ?? Math.min(intervalMs, DELETE_DEFAULTS.confirmIntervalMs),
        jitter: options.jitter ?? DELETE_DEFAULTS.jitter,
        deadlineAt: engine.clock.now() + (options.timeoutMs ?? DELETE_DEFAULTS.timeoutMs),
        requestTimeoutMs: options.requestTimeoutMs,
        pollRetries: options.pollRetries ?? DELETE_DEFAULTS.pollRetries,
        signal: this.#stop.signal,
      })
      .then(
        (end) => engine.api.logger.debug({ serverId, outcome: end.outcome }, 'followed deletion ended'),
        (e: unknown) => engine.api.logger.debug({ serverId, err: e instanceof Error ? e.message : String(e) }, 'followed deletion stopped'),
      );
  }

  /**
   * Listen for confirmed deletions on the engine; the function returned unsubscribes and, when it was
   * the last listener, stops the follows.
   */
  listen(listener: (serverId: string) => void): () => void {
    const off = this.#engine.ledger.onConfirmed(listener);
    return () => {
      off();
      if (!this.#engine.ledger.listened) this.#stop?.abort(new Error('no listener for confirmed deletions is left'));
    };
  }
}
