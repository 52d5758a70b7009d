/**
 * The fleet's shared ledger as one host of the simulation sees it: every host's guard gets its own
 * `HostLedger`, all of them over ONE `InProcessQuotaLedger` (claims, the queue oldest first across
 * hosts, fencing tokens, counted-release retention, and freed-quota wake-ups reaching every host,
 * as `RedisQuotaLedger` shares them through Redis). It records, per server, when the guard's claim
 * on it ended as `'counted'`: the simulation's measure of the time a server counts twice.
 *
 * `/limits` readings are shared across hosts as the Redis ledger shares its kept reading: a call
 * that finds a reading answered at most {@link SHARED_READING_MS} ago is admitted on it without
 * asking Nova (the shared ledger's `admit` with that reading's SEND time as its stamp, so every claim
 * Nova may not count in it is subtracted, as the Redis ledger's acquire script does), unless a
 * deletion was confirmed after it was sent (as the Redis ledger's `freedSeq` makes it stale); otherwise it
 * reads afresh through the shared ledger and keeps its reading for the others. The claims released
 * as `'counted'` since a reading's send time must still be known to the shared ledger: it keeps them
 * while a read begun before them is open, so {@link SharedReadings} holds one such read open at all
 * times (an "anchor", renewed every {@link ANCHOR_MS}) and a reading sent before the oldest open
 * anchor is never shared. A call that finds another call's read in flight waits for it (as a Redis
 * holder waits for the holder of the refresh lock), at most {@link MAX_WAIT_FOR_READ_MS}, through
 * `waitForOthersRead` (the guard's ledger time limit pauses, as while its own read runs); past that
 * it reads afresh. A shared reading short only because of claims released as `'counted'` after it
 * was sent, and admitted before it was stored (or taken with `claimAnyway`), is read again, as the
 * ledgers' `countsTwice` rule does; short with the late claims admitted after it was stored, it is
 * answered on (their POSTs went after Nova's answer).
 *
 * @module
 */
import { waitForOthersRead, type Clock, type InProcessQuotaLedger, type QuotaLedger, type ResourceAmounts } from 'nova-guard';

type Claim = Parameters<QuotaLedger['bind']>[0];
type Read = Parameters<QuotaLedger['acquire']>[1];
type Reading = Awaited<ReturnType<Read>>;
type AcquireRequest = Parameters<QuotaLedger['acquire']>[0];
type Acquisition = Awaited<ReturnType<QuotaLedger['acquire']>>;

/** How long a `/limits` reading is shared after it was sent, in ms (the Redis ledger's `limitsMaxAgeMs` default). */
export const SHARED_READING_MS = 10_000;
/**
 * The longest a call waits for another call's read in flight, in ms: the Redis ledger's default
 * `limitsLockMs + commandTimeoutMs`. The wait goes through `waitForOthersRead`, as the Redis ledger's
 * does: the guard does not count it as ledger time (only the call's `maxWaitMs` bounds it).
 */
export const MAX_WAIT_FOR_READ_MS = 12_000;
/** How long a claim released as `'counted'` is remembered for the credit, in ms (the Redis ledger's retention). */
export const COUNTED_RETENTION_MS = 10 * 60_000;
/** How often the anchor read is renewed, in ms. */
export const ANCHOR_MS = 10_000;

/** The `/limits` reading the hosts share, and the anchor reads that keep its releases (one per fleet). */
export class SharedReadings {
  /** The read in flight (the newest), for the calls that come meanwhile. */
  inFlight: { stamp: number; seq: number; answer: Promise<Reading>; storedSeq?: number } | undefined;
  /** The newest reading answered: when it was sent (its stamp) and answered, and the order number taken when it was stored. */
  kept: { stamp: number; seq: number; answeredAt: number; storedSeq: number; reading: Reading; credited?: ReadonlySet<string> } | undefined;
  /**
   * Claims released as `'counted'`: their order number, needs and the order number at their admission
   * (the Redis ledger's `counted` records; `admittedSeq` undefined: taken with `claimAnyway`), for the
   * credit and the double-count rule.
   */
  readonly counted = new Map<string, { seq: number; atMs: number; needs: ResourceAmounts; admittedSeq: number | undefined }>();
  /** Live claims admitted by `acquire`: the order number at their admission (the 7th field of a Redis claim record). */
  readonly admitted = new Map<string, number>();
  /** Confirmed deletions credited to the kept reading (`FreedCredit`) instead of making it stale. */
  credits = 0;
  /** Admissions decided on a shared reading (no request to Nova). */
  shared = 0;
  /**
   * Calls the hosts' guards made on the shared ledger (acquire, bind, release, peek, leave, renew,
   * claimAnyway, publishFreed, probe): the simulation's count of what the Redis ledger would answer with
   * one or more Redis commands each (its own retries and pub/sub messages are not counted).
   */
  readonly ledgerCalls: Record<string, number> = {};

  /** Count one call on the shared ledger. */
  count(method: string): void {
    this.ledgerCalls[method] = (this.ledgerCalls[method] ?? 0) + 1;
  }
  /** Order of reads sent and deletions confirmed: a reading sent before the last confirmed deletion is never shared (the Redis ledger's `freedSeq`). */
  seq = 0;
  freedSeq = -1;
  readonly #anchors: Array<{ start: number; close: () => void }> = [];
  #timer: ReturnType<Clock['setTimeout']> | undefined;
  #closed = false;

  constructor(
    private readonly inner: InProcessQuotaLedger,
    private readonly clock: Clock,
  ) {
    this.#openAnchor();
  }

  /** The send time before which no reading may be shared. */
  get oldestAnchor(): number {
    return this.#anchors[0]?.start ?? Number.POSITIVE_INFINITY;
  }

  /** Close every anchor (at the end of the run). */
  close(): void {
    this.#closed = true;
    this.clock.clearTimeout(this.#timer);
    for (const a of this.#anchors.splice(0)) a.close();
  }

  #openAnchor(): void {
    if (this.#closed) return;
    const ctl = new AbortController();
    const start = this.clock.now();
    // A read that answers only when closed: the shared ledger keeps every counted release from `start` on.
    this.inner
      .limits(
        () =>
          new Promise<Reading>((_resolve, reject) => {
            ctl.signal.addEventListener('abort', () => reject(new Error('anchor closed')), { once: true });
          }),
        undefined,
      )
      .catch(() => undefined);
    this.#anchors.push({ start, close: () => ctl.abort() });
    // Readings are shared for SHARED_READING_MS after they were sent; a read may be in flight for
    // a while before that (a slow Nova): anchors older than two periods are closed.
    while (this.#anchors.length > 2) this.#anchors.shift()!.close();
    if (this.kept && this.kept.stamp < this.oldestAnchor) this.kept = undefined;
    this.#timer = this.clock.setTimeout(() => this.#openAnchor(), ANCHOR_MS);
  }
}

/** A reading's usage less `freed`, as the ledgers credit a deletion (`creditedLimits` in src/ledger/headroom.ts); undefined when it gives no usage or less than `freed`. */
function creditedLimits(absolute: Reading['absolute'], freed: ResourceAmounts): Reading['absolute'] | undefined {
  const { totalCoresUsed: c, totalRAMUsed: r, totalInstancesUsed: i } = absolute;
  if (c === undefined && r === undefined && i === undefined) return undefined;
  if ((c !== undefined && c < freed.cores) || (r !== undefined && r < freed.ramMiB) || (i !== undefined && i < freed.instances)) return undefined;
  const less = (used: number | undefined, n: number): number | undefined => (used === undefined ? undefined : used - n);
  return { ...absolute, totalCoresUsed: less(c, freed.cores), totalRAMUsed: less(r, freed.ramMiB), totalInstancesUsed: less(i, freed.instances) };
}

/**
 * The needs of the claims released as `'counted'` at or after `stamp` (what an admission on a reading
 * sent then subtracts for them) that the reading may count already: admitted before it was stored
 * (order number `storedSeq`), or taken with `claimAnyway`. A claim admitted after it was stored was
 * POSTed after Nova answered it.
 */
function lateCounted(r: SharedReadings, stamp: number, storedSeq: number): ResourceAmounts {
  const late = { cores: 0, ramMiB: 0, instances: 0 };
  for (const c of r.counted.values()) {
    if (c.atMs < stamp) continue;
    if (c.admittedSeq !== undefined && c.admittedSeq >= storedSeq) continue;
    late.cores += c.needs.cores;
    late.ramMiB += c.needs.ramMiB;
    late.instances += c.needs.instances;
  }
  return late;
}

/**
 * A short admission that would fit without subtracting `late` (the claims released as `'counted'`
 * after the reading was sent that it may count already, {@link lateCounted}): the rule of the
 * ledgers' `countsTwice`.
 */
function countsTwice(
  needs: ResourceAmounts,
  headroom: ReturnType<typeof rawHeadroom>,
  admission: { inFlight: ResourceAmounts; ahead: ResourceAmounts },
  late: ResourceAmounts,
): boolean {
  if (late.cores === 0 && late.ramMiB === 0 && late.instances === 0) return false;
  return (['cores', 'ramMiB', 'instances'] as const).every((k) => {
    const room = headroom[k];
    const want = needs[k] + admission.ahead[k];
    return room === undefined || want <= 0 || room - (admission.inFlight[k] - late[k]) - admission.ahead[k] - needs[k] >= 0;
  });
}

/** Headroom before claims, as the guard computes it (limit - used; unlimited or unknown: undefined). */
function rawHeadroom(absolute: Reading['absolute']): { cores: number | undefined; ramMiB: number | undefined; instances: number | undefined } {
  const h = (max: number | undefined, used: number | undefined): number | undefined => (max === undefined || max < 0 || used === undefined ? undefined : max - used);
  return {
    cores: h(absolute.maxTotalCores, absolute.totalCoresUsed),
    ramMiB: h(absolute.maxTotalRAMSize, absolute.totalRAMUsed),
    instances: h(absolute.maxTotalInstances, absolute.totalInstancesUsed),
  };
}

/** A host's view of the shared ledger (see the module description). */
export class HostLedger implements QuotaLedger {
  readonly kind: string;
  readonly #inner: InProcessQuotaLedger;
  readonly #servers = new Map<string, string>();
  /** This host alone: the simulated hosts share one inner ledger object. */
  members(): readonly string[] {
    return [this.holder];
  }

  /** The inner ledger's. */
  get placeTtlMs(): number {
    return this.#inner.placeTtlMs;
  }

  /**
   * @param countedAt - Told `(serverId, atMs)` when a claim bound to that server ends as `'counted'`.
   */
  constructor(
    inner: InProcessQuotaLedger,
    readonly holder: string,
    private readonly now: () => number,
    private readonly countedAt: (serverId: string, atMs: number) => void,
    private readonly readings: SharedReadings,
    private readonly clock: Clock,
  ) {
    this.#inner = inner;
    this.kind = `shared ${inner.kind}`;
  }

  get scope(): QuotaLedger['scope'] {
    return this.#inner.scope;
  }

  bindScope: QuotaLedger['bindScope'] = (scope) => this.#inner.bindScope(scope);
  callBudgetMs: QuotaLedger['callBudgetMs'] = () => this.#inner.callBudgetMs();
  probe: QuotaLedger['probe'] = () => {
    this.readings.count('probe');
    return this.#inner.probe();
  };
  everReached: QuotaLedger['everReached'] = () => this.#inner.everReached();
  peek: QuotaLedger['peek'] = (read, signal) => {
    this.readings.count('peek');
    return this.#inner.peek(read, signal);
  };
  leave: QuotaLedger['leave'] = (place) => {
    this.readings.count('leave');
    return this.#inner.leave(place);
  };
  claimAnyway: QuotaLedger['claimAnyway'] = (needs, ttlMs) => {
    this.readings.count('claimAnyway');
    return this.#inner.claimAnyway(needs, ttlMs);
  };
  renew: QuotaLedger['renew'] = (claim, ttlMs) => {
    this.readings.count('renew');
    return this.#inner.renew(claim, ttlMs);
  };
  /**
   * The Redis ledger's FREED script: with a credit that holds (the kept reading is the one seen before
   * the DELETE, the claim was released as `'counted'` before that reading was sent, not credited to it
   * yet), the claim's needs are subtracted from the kept reading, which stays fresh; otherwise the kept
   * reading is stale.
   */
  publishFreed: QuotaLedger['publishFreed'] = (serverId, credit) => {
    const r = this.readings;
    r.count('publishFreed');
    const k = r.kept;
    const c = credit === undefined ? undefined : r.counted.get(credit.claimId);
    const absolute = k && c && credit && k.seq === credit.keptSeq && c.seq < k.seq && !k.credited?.has(credit.claimId) ? creditedLimits(k.reading.absolute, c.needs) : undefined;
    if (k && credit && absolute) {
      r.kept = { ...k, reading: { ...k.reading, absolute }, credited: new Set([...(k.credited ?? []), credit.claimId]) };
      r.credits++;
    } else r.freedSeq = ++r.seq;
    return this.#inner.publishFreed(serverId);
  };
  /** The kept reading's order number: the hosts share one view, so what is kept is known at once. */
  keptSeen: QuotaLedger['keptSeen'] = () => this.readings.kept?.seq;

  async acquire(request: AcquireRequest, read: Read, signal: AbortSignal | undefined): Promise<Acquisition> {
    const r = this.readings;
    r.count('acquire');
    let kept = r.kept && this.now() - r.kept.answeredAt <= SHARED_READING_MS ? r.kept : undefined;
    const pending = r.inFlight;
    if (kept && kept.seq < r.freedSeq) kept = undefined;
    // a reading Nova's quota check refuted for this call is not admitted on again (`refutedStamp`)
    if (kept && request.refutedStamp !== undefined && kept.stamp <= request.refutedStamp) kept = undefined;
    if (!kept && pending && pending.stamp >= r.oldestAnchor && pending.seq > r.freedSeq) {
      // Another call's read is in flight: wait for it (Nova's time, not the ledger's), as a Redis holder waits for the holder of the refresh lock.
      let timer: ReturnType<Clock['setTimeout']> | undefined;
      const reading = await waitForOthersRead(
        read,
        Promise.race([pending.answer.catch(() => undefined), new Promise<undefined>((resolve) => (timer = this.clock.setTimeout(() => resolve(undefined), MAX_WAIT_FOR_READ_MS)))]),
      );
      this.clock.clearTimeout(timer);
      signal?.throwIfAborted();
      if (reading) kept = { stamp: pending.stamp, seq: pending.seq, answeredAt: this.now(), storedSeq: pending.storedSeq ?? Number.POSITIVE_INFINITY, reading };
    }
    if (kept && kept.stamp >= r.oldestAnchor && kept.seq > r.freedSeq) {
      r.shared++;
      const reading = kept.reading;
      const headroom = rawHeadroom(reading.absolute);
      const admission = await this.#inner.admit({ place: request.place, needs: request.needs, headroom, stamp: kept.stamp, ttlMs: request.ttlMs });
      const shared = { absolute: reading.absolute, requestId: reading.requestId, stamp: kept.stamp, ageMs: this.now() - kept.stamp, shared: true };
      // Short only by claims released as 'counted' after it was sent that it may count: read again, as the ledgers do.
      if (!admission.admitted && !countsTwice(request.needs, headroom, admission, lateCounted(r, kept.stamp, kept.storedSeq))) {
        if (!request.joinIfShort || request.place !== undefined) return { ...admission, reading: shared };
        return { ...admission, reading: shared, place: await this.#inner.join(request.needs) };
      }
      if (admission.admitted) {
        r.admitted.set(admission.claim.id, r.seq);
        return { ...admission, reading: shared };
      }
      r.shared--;
    }
    // A read of its own, kept for the calls that come after it (the newest send time wins).
    const sharedRead: Read = async (s) => {
      const stamp = this.now();
      const seq = ++r.seq;
      const answer = read(s);
      const entry: NonNullable<SharedReadings['inFlight']> = { stamp, seq, answer };
      r.inFlight = entry;
      try {
        const reading = await answer;
        // its answer is in: a claim admitted from now on is POSTed after Nova answered it
        entry.storedSeq = ++r.seq;
        if (!r.kept || r.kept.seq < seq) r.kept = { stamp, seq, answeredAt: this.now(), storedSeq: entry.storedSeq, reading };
        return reading;
      } finally {
        if (r.inFlight === entry) r.inFlight = undefined;
      }
    };
    const own = await this.#inner.acquire(request, sharedRead, signal);
    if (own.admitted) r.admitted.set(own.claim.id, r.seq);
    return own;
  }
  onFreed: QuotaLedger['onFreed'] = (listener) => this.#inner.onFreed(listener);
  onWake: QuotaLedger['onWake'] = (place, listener) => this.#inner.onWake(place, listener);

  bind(claim: Claim, serverId: string): Promise<void> {
    this.readings.count('bind');
    this.#servers.set(claim.id, serverId);
    return this.#inner.bind(claim, serverId);
  }

  release(claim: Claim, end: Parameters<QuotaLedger['release']>[1]): Promise<void> {
    this.readings.count('release');
    if (end === 'counted') {
      const r = this.readings;
      const now = this.now();
      r.counted.set(claim.id, { seq: ++r.seq, atMs: now, needs: claim.needs, admittedSeq: r.admitted.get(claim.id) });
      // the Redis ledger keeps its counted records 10 minutes
      for (const [id, c] of r.counted) {
        if (now - c.atMs <= COUNTED_RETENTION_MS) break;
        r.counted.delete(id);
      }
    }
    this.readings.admitted.delete(claim.id);
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
