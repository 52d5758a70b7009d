/**
 * The delete engine's request-rate limit (`maxRequestsPerSecond`): p-throttle paces the turns, and
 * the requests waiting for one wait in a queue of their own that an aborted request leaves at once.
 *
 * p-throttle books a turn when it is called and cannot give one back: a request aborted while it
 * waited would hold its turn, and every later request would wait behind it. So p-throttle is asked
 * for one turn at a time, and each turn goes to whichever request is first in the queue when it
 * comes (none left: the turn goes unused).
 *
 * Nova's pause goes first: while a `Retry-After` lasts (`NovaPause`, noted from every failed
 * request sent here), no request asks for a turn; each waits the pause out on the clock.
 *
 * @module
 */
import pThrottle from 'p-throttle';
import { AbortError } from '../errors/index.js';
import type { NovaPause } from './pause.js';

/** Turns of a rate limit, handed out in order to the requests still waiting. */
export class RateTurns {
  /** Asks p-throttle for the next turn (`undefined`: no limit). */
  readonly #askTurn: (() => unknown) | undefined;
  /** Requests waiting for a turn, in order. */
  readonly #waiting: Array<() => void> = [];
  #turnAsked = false;
  readonly #pause: NovaPause | undefined;

  /**
   * @param rps - Requests per second; `Infinity`: no limit.
   * @param pause - Nova's pause, noted from every failed request and waited out before each turn.
   */
  constructor(rps: number, pause?: NovaPause) {
    this.#pause = pause;
    if (!Number.isFinite(rps)) return;
    const limit = Math.max(1, Math.floor(rps));
    this.#askTurn = pThrottle({ limit, interval: Math.round((1000 * limit) / rps), strict: true })(() => this.#grantTurn());
  }

  /** Clock time until which Nova's pause holds every request back (in the past, or -Infinity, when none). */
  get pausedUntil(): number {
    return this.#pause?.until ?? Number.NEGATIVE_INFINITY;
  }

  /** Requests waiting for a turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Call `fn` at its turn. Rejects with {@link AbortError} as soon as `signal` aborts, also while
   * waiting; `fn` is then never called, and the turn it waited for goes to the next request.
   */
  send<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const pause = this.#pause;
    if (!pause) return this.#send(fn, signal);
    if (pause.active) return pause.over(signal).then(() => this.send(fn, signal));
    return this.#send(fn, signal).catch((e: unknown) => {
      pause.note(e);
      throw e;
    });
  }

  #send<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const aborted = (): AbortError => new AbortError(undefined, { cause: signal?.reason });
    if (signal?.aborted) return Promise.reject(aborted());
    if (!this.#askTurn) return fn();
    return new Promise<T>((resolve, reject) => {
      const start = (): void => {
        signal?.removeEventListener('abort', onAbort);
        new Promise<T>((run) => run(fn())).then(resolve, reject);
      };
      const onAbort = (): void => {
        const at = this.#waiting.indexOf(start);
        if (at >= 0) this.#waiting.splice(at, 1);
        reject(aborted());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(start);
      this.#pump();
    });
  }

  /** Ask for a turn when a request waits and none is asked for yet. */
  #pump(): void {
    if (this.#turnAsked || this.#waiting.length === 0 || !this.#askTurn) return;
    this.#turnAsked = true;
    void this.#askTurn();
  }

  /** A turn came: the first waiting request goes now. */
  #grantTurn(): void {
    this.#turnAsked = false;
    this.#waiting.shift()?.();
    this.#pump();
  }
}
