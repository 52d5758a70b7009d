/**
 * In-flight claims of one `InProcessQuotaLedger` (the guards of one process): what their
 * creates have taken from the headroom that Nova's `GET /limits` may not show yet.
 *
 * Why: 20 callers in one process that read the same `/limits` would otherwise all see the same
 * headroom and all POST (docs/field-cases.md, "Several workers, one quota"). The check
 * and the claim happen in the same tick after the `/limits` answer, so no two callers of one guard
 * can pass on the same headroom.
 *
 * When a claim ends (see `QuotaGuard` for the whole story):
 * - `'not-created'`: the POST failed, or the guard deleted the server again: Nova does not count it.
 *   The claim is dropped at once.
 * - `'counted'`: the server is past scheduling (BUILD with `task_state` `networking`,
 *   `block_device_mapping` or `spawning`, or it left BUILD): by then Nova counts it (legacy
 *   counting: the instance row exists in its cell; placement counting: its allocations exist; see
 *   `isPastScheduling` in `waitForActive.ts`). A `/limits` read
 *   that was *sent before* that moment may still miss it, so the claim keeps counting for reads that
 *   started before its release and stops counting for reads that start after.
 *
 * While a server is being scheduled the claim and Nova's own count may both include it: the guard then
 * under-estimates headroom (waits a little more), never over-estimates it.
 *
 * @module
 */
import type { ResourceAmounts } from '../core/types.js';
import { systemClock } from '../core/clock.js';
import { NO_NEEDS, addNeeds } from './headroom.js';

/** One claim. */
export interface Claim {
  readonly id: number;
  readonly needs: ResourceAmounts;
}

interface Released {
  needs: ResourceAmounts;
  releasedAtMs: number;
}

/** The claims of one `InProcessQuotaLedger`. `nowMs` is the ledger's clock; default {@link systemClock}'s. */
export class ClaimLedger {
  readonly #active = new Map<number, Claim>();
  #released: Released[] = [];
  readonly #openReads = new Map<number, number>();
  #nextId = 1;
  readonly #now: () => number;

  constructor(nowMs: () => number = () => systemClock.now()) {
    this.#now = nowMs;
  }

  /** Note the start of a `/limits` read; pass the token to {@link inFlight} and {@link endRead}. */
  beginRead(): number {
    const token = this.#nextId++;
    this.#openReads.set(token, this.#now());
    return token;
  }

  /** The read is over (answered or failed). */
  endRead(token: number): void {
    this.#openReads.delete(token);
    this.#prune();
  }

  /**
   * What this guard has in flight for a read begun with `token`: every active claim, plus claims
   * released as `'counted'` after that read was sent.
   */
  inFlight(token?: number): ResourceAmounts {
    let total: ResourceAmounts = { ...NO_NEEDS };
    for (const c of this.#active.values()) total = addNeeds(total, c.needs);
    const startedAt = token === undefined ? undefined : this.#openReads.get(token);
    return startedAt === undefined ? total : addNeeds(total, this.#releasedSince(startedAt));
  }

  /**
   * Like {@link inFlight} for a read sent at `stampMs` (on this ledger's clock): every active claim,
   * plus the claims released as `'counted'` at or after `stampMs` that are still kept (a release is
   * kept while a read begun before it is open).
   */
  inFlightSince(stampMs: number): ResourceAmounts {
    return addNeeds(this.inFlight(), this.#releasedSince(stampMs));
  }

  #releasedSince(stampMs: number): ResourceAmounts {
    let total: ResourceAmounts = { ...NO_NEEDS };
    for (const r of this.#released) if (r.releasedAtMs >= stampMs) total = addNeeds(total, r.needs);
    return total;
  }

  /** Take a claim. */
  claim(needs: ResourceAmounts): Claim {
    const c: Claim = { id: this.#nextId++, needs: { ...needs } };
    this.#active.set(c.id, c);
    return c;
  }

  /** End a claim (idempotent). See the module description for the two kinds. */
  release(claim: Claim, kind: 'not-created' | 'counted'): void {
    if (!this.#active.delete(claim.id)) return;
    if (kind === 'counted' && this.#openReads.size > 0) this.#released.push({ needs: claim.needs, releasedAtMs: this.#now() });
  }

  /** Number of active claims. */
  get size(): number {
    return this.#active.size;
  }

  #prune(): void {
    if (this.#released.length === 0) return;
    if (this.#openReads.size === 0) {
      this.#released = [];
      return;
    }
    const oldest = Math.min(...this.#openReads.values());
    this.#released = this.#released.filter((r) => r.releasedAtMs >= oldest);
  }
}
