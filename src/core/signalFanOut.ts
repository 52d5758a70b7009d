/**
 * A caller's AbortSignal shared by many calls, listened to once. Each call of an owning object (a
 * `NovaClient`, a `QuotaGuard`) takes a per-call signal from the object's {@link SignalFanOut}: it
 * aborts, with the same reason, when one of the call's parent signals aborts, and everything the call
 * runs (p-retry, p-timeout, axios, the clock's sleeps) listens to it instead of to the caller's
 * signal. The caller's signal then carries one listener per owning object, however many calls share
 * it (a worker pool's shutdown signal given to 50 creates: no `MaxListenersExceededWarning`), and the
 * call's membership ends when the call settles ({@link CallSignal.release}), so nothing stays
 * listening after it.
 *
 * @module
 */
import { AbortGroups } from './abortGroups.js';

/** A call's own signal, from {@link SignalFanOut.child}. */
export interface CallSignal {
  /** Aborts when one of the parents does (with that parent's reason); `undefined` when no parent was given. */
  readonly signal: AbortSignal | undefined;
  /** The call is over: stop following the parents (the last call of a parent removes its one listener). Idempotent. */
  release(): void;
}

/** An AbortSignal (or one of another realm): something to listen to. */
function isSignal(p: unknown): p is AbortSignal {
  return typeof p === 'object' && p !== null && typeof (p as AbortSignal).addEventListener === 'function' && typeof (p as AbortSignal).aborted === 'boolean';
}

/** One call's controller and the parents it follows. */
interface Member {
  readonly controller: AbortController;
  readonly parents: readonly AbortSignal[];
}

/** One listener per parent signal for all the calls of one owning object: see the module description. */
export class SignalFanOut {
  readonly #groups = new AbortGroups<Member>((m, parent) => {
    this.#leave(m);
    m.controller.abort(parent.reason);
  });

  /**
   * A signal for one call that follows `parents` (the caller's signal; also the owner's own, e.g. a
   * guard's close). `undefined` parents are skipped, and so is a value that is not an AbortSignal
   * (the caller then passes on what it was given, for its own validation to refuse); with none left
   * the call gets no signal (`signal: undefined`). A parent already aborted aborts it at once.
   * Call {@link CallSignal.release} when the call settles.
   */
  child(...parents: Array<AbortSignal | undefined>): CallSignal {
    const given = parents.filter(isSignal);
    if (given.length === 0) return { signal: undefined, release: () => undefined };
    const controller = new AbortController();
    const aborted = given.find((p) => p.aborted);
    if (aborted) {
      controller.abort(aborted.reason);
      return { signal: controller.signal, release: () => undefined };
    }
    const member: Member = { controller, parents: given };
    for (const p of given) this.#groups.add(p, member);
    return { signal: controller.signal, release: () => this.#leave(member) };
  }

  /**
   * Run `work` with a signal that follows `parents` (see {@link child}), released when `work` settles.
   * @throws what `work` throws.
   */
  async run<T>(parents: Array<AbortSignal | undefined>, work: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
    const call = this.child(...parents);
    try {
      return await work(call.signal);
    } finally {
      call.release();
    }
  }

  #leave(m: Member): void {
    for (const p of m.parents) this.#groups.remove(p, m);
  }
}
