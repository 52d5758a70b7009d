/**
 * Who wakes when quota is freed, among the calls waiting for headroom.
 *
 * Every ledger addresses its wake-ups to places (`onWake`, `src/ledger/port.ts`): the head of the
 * fleet's queue when a deletion is confirmed anywhere, the next place when the head leaves (admitted,
 * or it gave up). The queue is first come, first served (an admission subtracts the needs of every place
 * ahead), so no call behind a head that does not fit can be admitted: waking the head alone loses
 * no admission, and a freed server starts one admission, plus one for each call it lets in, instead
 * of one for every waiting call of the fleet. A call listens for its place from the moment it holds
 * it until it leaves it (a wake-up that comes while it is reading `/limits` is counted and ends its
 * next sleep at once). A call that holds no place (its ledger did not queue it: an answer given up
 * while another holder refreshed, a store restarted moments ago) wakes on every confirmed deletion
 * (`onFreed`). Either way the call's backoff timer stays: a wake-up lost anyway (a ledger that
 * failed to deliver it) ends at the call's next backoff step. The call's place and the wake-ups
 * addressed to it are held by its `CallLedger` (`callLedger.ts`).
 *
 * @module
 */
import { sleep } from '../core/clock.js';
import { throwIfAborted } from '../errors/index.js';
import { askShortLooks } from '../delete/index.js';
import type { CallLedger } from './callLedger.js';
import type { GuardState } from './state.js';

/**
 * Note the deletions confirmed from now until `off()` (while an admission reads and decides: a
 * call at the head of the queue that was refused on a reading older than a freed server reads
 * again at once instead of sleeping).
 */
export function freedMeanwhile(g: GuardState): { readonly seen: () => boolean; readonly off: () => void } {
  let seen = false;
  const off = g.res.onFreed(() => (seen = true));
  return { seen: () => seen, off };
}

/**
 * Sleep `delayMs` on the clock, or less: a wake-up addressed to the call's place, or (with a
 * ledger that does not address them) any deletion confirmed in the fleet, or the ledger answering
 * again after an outage, ends the sleep at once. Meanwhile the client's watcher looks at the servers
 * being deleted at most `shortLookIntervalMs` apart (`askShortLooks`).
 * @throws {@link AbortError} when `signal` aborts.
 */
export async function sleepUntilWoken(g: GuardState, ledger: CallLedger, delayMs: number, signal: AbortSignal | undefined): Promise<void> {
  const woken = new AbortController();
  const wake = (): void => woken.abort();
  const offFreed = ledger.addressed ? undefined : g.res.onFreed(wake);
  const offRecovered = g.res.onRecovered(wake);
  const offWake = ledger.wakeWith(wake);
  // While it sleeps, the client's watcher looks at the servers being deleted at the short interval.
  const endShortLooks = Number.isFinite(g.opts.shortLookIntervalMs) ? askShortLooks(g.client, g.opts.shortLookIntervalMs) : undefined;
  try {
    await sleep(g.clock, delayMs, signal ? AbortSignal.any([signal, woken.signal]) : woken.signal);
  } catch (e) {
    throwIfAborted(signal);
    if (!woken.signal.aborted) throw e;
  } finally {
    offWake();
    endShortLooks?.();
    offFreed?.();
    offRecovered();
  }
  throwIfAborted(signal);
}
