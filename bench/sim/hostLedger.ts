/**
 * The fleet's shared ledger as one host of the simulation sees it: every host's guard gets its own
 * `HostLedger`, all of them over ONE `InProcessQuotaLedger` (claims, the queue oldest first across
 * hosts, fencing tokens, counted-release retention, and freed-quota wake-ups reaching every host,
 * as `RedisQuotaLedger` shares them through Redis). It records, per server, when the guard's claim
 * on it ended as `'counted'`: the simulation's measure of the time a server counts twice.
 *
 * @module
 */
import type { QuotaLedger } from 'nova-guard';

type Claim = Parameters<QuotaLedger['bind']>[0];

/** A host's view of the shared ledger (see the module description). */
export class HostLedger implements QuotaLedger {
  readonly kind: string;
  readonly #inner: QuotaLedger;
  readonly #servers = new Map<string, string>();
  readonly acquire: QuotaLedger['acquire'];
  readonly inFlight: QuotaLedger['inFlight'];
  readonly callBudgetMs: QuotaLedger['callBudgetMs'];
  readonly probe: QuotaLedger['probe'];
  readonly bindScope: QuotaLedger['bindScope'];

  /**
   * @param countedAt - Told `(serverId, atMs)` when a claim bound to that server ends as `'counted'`.
   */
  constructor(
    inner: QuotaLedger,
    readonly holder: string,
    private readonly now: () => number,
    private readonly countedAt: (serverId: string, atMs: number) => void,
  ) {
    this.#inner = inner;
    this.kind = `shared ${inner.kind}`;
    this.acquire = inner.acquire?.bind(inner);
    this.inFlight = inner.inFlight?.bind(inner);
    this.callBudgetMs = inner.callBudgetMs?.bind(inner);
    this.probe = inner.probe?.bind(inner);
    this.bindScope = inner.bindScope?.bind(inner);
  }

  get scope(): QuotaLedger['scope'] {
    return this.#inner.scope;
  }

  join: QuotaLedger['join'] = (needs) => this.#inner.join(needs);
  leave: QuotaLedger['leave'] = (place) => this.#inner.leave(place);
  limits: QuotaLedger['limits'] = (read, signal) => this.#inner.limits(read, signal);
  admit: QuotaLedger['admit'] = (request) => this.#inner.admit(request);
  claimAnyway: QuotaLedger['claimAnyway'] = (needs, ttlMs) => this.#inner.claimAnyway(needs, ttlMs);
  renew: QuotaLedger['renew'] = (claim, ttlMs) => this.#inner.renew(claim, ttlMs);
  publishFreed: QuotaLedger['publishFreed'] = (serverId) => this.#inner.publishFreed(serverId);
  onFreed: QuotaLedger['onFreed'] = (listener) => this.#inner.onFreed(listener);

  bind(claim: Claim, serverId: string): Promise<void> {
    this.#servers.set(claim.id, serverId);
    return this.#inner.bind(claim, serverId);
  }

  release(claim: Claim, end: Parameters<QuotaLedger['release']>[1]): Promise<void> {
    const serverId = this.#servers.get(claim.id);
    if (serverId !== undefined) {
      this.#servers.delete(claim.id);
      if (end === 'counted') this.countedAt(serverId, this.now());
    }
    return this.#inner.release(claim, end);
  }

  /** The shared ledger outlives every host: closing a host's view closes nothing. */
  async close(): Promise<void> {}
}
