/**
 * Degraded mode without over-commit: while the fleet's ledger is out of reach, this process admits
 * guarded creates only within its share of the last good reading.
 *
 * At every good admission on the ledger the share is noted, per resource: the raw headroom of the
 * reading, minus what the ledger subtracted for claims (`inFlight`) and places ahead (`ahead`), minus
 * the admitted claim's own needs, divided by the most live holders the ledger has reported to this
 * process (`holders`; 1 when it does not say), rounded down. During an outage (an episode: from the first
 * admission on the fallback to the end of the outage) the process may hold claims up to its share
 * plus what its own confirmed deletions of servers it created freed during the episode, minus what
 * it has admitted on the fallback since the share's reading (a claim that ends `'not-created'` gives its needs back). Nova's fresh
 * reading must also fit (the fallback ledger checks it): Nova stays the authority. A process that
 * never had a good reading admits as before the share existed (the fallback and Nova's check).
 *
 * @module
 */
import type { ResourceAmounts } from '../core/types.js';
import type { Admission, RawHeadroom } from './ledger.js';

const KEYS = ['cores', 'ramMiB', 'instances'] as const;
/** Servers remembered with their needs (for the freed credit); the oldest are forgotten past this. */
const MAX_SERVERS = 10_000;

const zero = (): Record<(typeof KEYS)[number], number> => ({ cores: 0, ramMiB: 0, instances: 0 });

/** See the module description. One per ledger wrapper (process). */
export class DegradedShare {
  #share: ResourceAmounts | undefined;
  /** The most live holders an admission has reported. */
  #holders = 1;
  #episode = 0;
  #active = false;
  /** End of the grace after an episode, on the wrapper's clock (ms); see {@link end}. */
  #graceUntil = 0;
  #used = zero();
  #freed = zero();
  readonly #servers = new Map<string, ResourceAmounts>();
  readonly #ended = new Set<() => void>();

  /** True once a good admission has given a share. */
  get known(): boolean {
    return this.#share !== undefined;
  }

  /** True during an episode (admissions on the fallback since the last good one). */
  get active(): boolean {
    return this.#active;
  }

  /** The share noted at the last good admission (`undefined` before any). */
  get share(): Readonly<ResourceAmounts> | undefined {
    return this.#share;
  }

  /**
   * True while the episode's grace runs (after the ledger answered again, see {@link end}): an
   * admission on the ledger must also fit the share. Once the grace is over the episode is closed.
   */
  inGrace(nowMs: number): boolean {
    if (!this.#active || this.#graceUntil === 0) return false;
    if (nowMs < this.#graceUntil) return true;
    this.#active = false;
    this.#graceUntil = 0;
    return false;
  }

  /** A good admission on the ledger: note the share (see the module description); kept as it is during a grace. */
  noteGood(raw: RawHeadroom, admission: Admission, needs: ResourceAmounts): void {
    if (this.#active) return;
    // The most holders this process has seen share the scope, not the count of this answer: a
    // holder entry is made by a holder's first call and lost with a Redis restarted empty, so the
    // count under-states the fleet at its start and after a restart (a share of 4 of 8 cores was
    // seen at a host's first admission, 3 hosts sharing; spent during a restart, it over-committed).
    this.#holders = Math.max(this.#holders, Math.max(1, Math.floor(admission.holders ?? 1)));
    const holders = this.#holders;
    const share = zero();
    for (const k of KEYS) {
      const r = raw[k];
      const left = r === undefined ? Number.POSITIVE_INFINITY : r - admission.inFlight[k] - admission.ahead[k] - (admission.admitted ? needs[k] : 0);
      share[k] = Math.max(0, Math.floor(left / holders));
    }
    this.#share = share;
    // Spending and credit count from this reading on.
    this.#used = zero();
    this.#freed = zero();
  }

  /**
   * Take `needs` from the share for an admission on the fallback: the episode it counts in, `true`
   * when no share is known (admit as before), `false` when it does not fit (`allowance` says what is
   * left per resource).
   */
  take(needs: ResourceAmounts): number | true | { allowance: ResourceAmounts } {
    const share = this.#share;
    if (!share) return true;
    if (!this.#active) {
      this.#active = true;
      this.#graceUntil = 0;
      // What was admitted on the fallback since the share's reading stays spent until a good
      // admission notes a new share: an outage that ends (the wrapper's probe answers) and begins
      // again before any good admission must not hand out the same share twice.
      this.#episode++;
    }
    const allowance = zero();
    for (const k of KEYS) allowance[k] = share[k] + this.#freed[k] - this.#used[k];
    if (KEYS.some((k) => needs[k] > allowance[k])) return { allowance };
    for (const k of KEYS) this.#used[k] += needs[k];
    return this.#episode;
  }

  /** A claim of `episode` ended `'not-created'`: its needs go back (only within its episode). */
  giveBack(needs: ResourceAmounts, episode: number): void {
    if (!this.#active || episode !== this.#episode) return;
    for (const k of KEYS) this.#used[k] = Math.max(0, this.#used[k] - needs[k]);
  }

  /** A server this process created, with its claim's needs (for {@link freed}). */
  noteServer(serverId: string, needs: ResourceAmounts): void {
    this.#servers.set(serverId, needs);
    if (this.#servers.size > MAX_SERVERS) this.#servers.delete(this.#servers.keys().next().value!);
  }

  /**
   * Nova confirmed the deletion of `serverId`: when this process created it, its needs count as
   * freed since the share's reading (that reading counted the server as used: nobody else's share
   * holds its cores).
   */
  freed(serverId: string): void {
    const needs = this.#servers.get(serverId);
    if (!needs) return;
    this.#servers.delete(serverId);
    if (!this.#active) return;
    for (const k of KEYS) this.#freed[k] += needs[k];
  }

  /** Listen for the end of an episode; returns the unsubscribe function. */
  onEnd(listener: () => void): () => void {
    this.#ended.add(listener);
    return () => this.#ended.delete(listener);
  }

  /**
   * The ledger answers again (`outage`: after an outage of the wrapper, which opens an episode if
   * none is open): listeners re-claim the degraded claims on it, and the episode closes
   * after a grace of `graceMs` (from `nowMs`) during which admissions on the ledger must also fit the
   * share: the other hosts may still be in their own episodes (their probes come later), with
   * degraded claims the ledger does not show yet.
   */
  end(nowMs: number, graceMs: number, outage = false): void {
    if (outage && !this.#active && this.#share !== undefined) {
      // The ledger was out of reach for this process, which admitted nothing on the fallback: the
      // grace applies all the same (the other hosts may hold degraded claims the ledger does not show).
      this.#active = true;
      this.#episode++;
    }
    if (!this.#active || this.#graceUntil !== 0) return;
    this.#graceUntil = Math.max(nowMs + graceMs, nowMs + 1);
    for (const l of [...this.#ended]) {
      try {
        l();
      } catch {
        // a listener's failure is its own
      }
    }
  }
}
