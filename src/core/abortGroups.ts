/**
 * One abort listener per signal, however many members share it. `deleteServers(ids, { signal })`
 * hands the same signal to every server's wait, and a worker pool hands its one shutdown signal to
 * every create; a listener per member would pass Node's default of 10 listeners per EventTarget and
 * print a `MaxListenersExceededWarning` for 11 or more (nothing leaks, but it reads as a leak). The
 * delete engine groups its waits with it; {@link SignalFanOut} (`signalFanOut.ts`) gives each call
 * its own signal through it.
 *
 * @module
 */

/** Members grouped by the signal they listen to. */
export class AbortGroups<T> {
  readonly #groups = new Map<AbortSignal, { members: Set<T>; onAbort: () => void }>();
  readonly #aborted: (member: T, signal: AbortSignal) => void;

  /** @param aborted - Called for each member of a signal's group when that signal aborts. */
  constructor(aborted: (member: T, signal: AbortSignal) => void) {
    this.#aborted = aborted;
  }

  /** Listen to `signal` for `member` (the signal's one listener is added with its first member). */
  add(signal: AbortSignal, member: T): void {
    let group = this.#groups.get(signal);
    if (!group) {
      const members = new Set<T>();
      const onAbort = (): void => {
        this.#groups.delete(signal);
        for (const m of [...members]) this.#aborted(m, signal);
      };
      group = { members, onAbort };
      this.#groups.set(signal, group);
      signal.addEventListener('abort', onAbort, { once: true });
    }
    group.members.add(member);
  }

  /** Stop listening for `member` (the signal's listener goes with its last member). Idempotent. */
  remove(signal: AbortSignal, member: T): void {
    const group = this.#groups.get(signal);
    if (!group || !group.members.delete(member) || group.members.size > 0) return;
    signal.removeEventListener('abort', group.onAbort);
    this.#groups.delete(signal);
  }
}
