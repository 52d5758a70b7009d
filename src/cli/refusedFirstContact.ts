/**
 * Giving up on a Nova that refuses every connection from the first, for `server delete`: the delete
 * functions try a refused DELETE again until their timeout (a Nova that restarts is waited for),
 * which at the first contact of a command line only hides a wrong URL or a stopped Nova for
 * minutes. While Nova has never answered the CLI (no response, no `x-openstack-request-id`), the
 * first refused request (`ECONNREFUSED`) arms a timer of `limitMs`; when it fires with still no
 * answer, {@link RefusedFirstContact.signal} aborts (the command then reports the refusal with
 * "is Nova running at URL?"). Any answer, or a failure that is not a refusal (a timeout, a 503: a
 * listener is there), disarms it for good. A refused DELETE never reached Nova: nothing was deleted
 * behind the command's back.
 *
 * @module
 */
import type { TimerHandle } from '../core/clock.js';
import { NovaNetworkError } from '../errors/index.js';
import type { NovaClient } from '../nova/client.js';

/** See the module. */
export class RefusedFirstContact {
  readonly #controller = new AbortController();
  readonly #client: Pick<NovaClient, 'clock' | 'lastRequestId'>;
  readonly #limitMs: number;
  #timer: TimerHandle | undefined;
  #done = false;
  /** The refusal it gave up on (set when {@link signal} aborts). */
  refusal: NovaNetworkError | undefined;

  /**
   * @param client - Its clock times the wait; its `lastRequestId` tells whether Nova ever answered.
   * @param limitMs - How long refusals may go on before giving up, in ms.
   */
  constructor(client: Pick<NovaClient, 'clock' | 'lastRequestId'>, limitMs: number) {
    this.#client = client;
    this.#limitMs = limitMs;
    if (client.lastRequestId !== undefined) this.#done = true;
  }

  /** True while refusals are being timed (Nova never answered): the command says nothing of them yet. */
  get pending(): boolean {
    return !this.#done && this.#timer !== undefined;
  }

  /** Aborts when the command should give up on a Nova that never answered. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** A failed request: a refusal arms the timer (once); anything else disarms it. */
  failed(error: unknown): void {
    if (this.#done) return;
    if (!(error instanceof NovaNetworkError) || error.code !== 'ECONNREFUSED' || this.#client.lastRequestId !== undefined) {
      this.answered();
      return;
    }
    this.refusal = error;
    this.#timer ??= this.#client.clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#done || this.#client.lastRequestId !== undefined) return;
      this.#done = true;
      this.#controller.abort(this.refusal);
    }, this.#limitMs);
  }

  /** Nova answered (an observation, a settled deletion): never give up from here on. */
  answered(): void {
    if (this.#done) return;
    this.#done = true;
    this.dispose();
  }

  /** Clear the timer. */
  dispose(): void {
    this.#client.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
