/**
 * `InProcessQuotaLedger`: the {@link QuotaLedger} of the guards of one process, and the default of
 * every `QuotaGuard` (one per guard unless you pass one instance to several guards).
 *
 * - `acquire` (and `peek`) always read afresh through `read` (stamp: the ledger's clock just before
 *   the read; `ageMs` 0, `shared` false); `acquire` is `limits`, `admit` and, when short, `join`,
 *   with nothing in between (one process: nothing to save by merging them).
 * - `admit` subtracts every active claim, the claims released as `'counted'` at or after the
 *   reading's stamp (kept while a read begun before them is open, and until its `admit`, at most
 *   {@link READ_GRACE_MS} after it answered), and the needs of every place queued ahead, first come
 *   first served (see `claims.ts` for why a counted release still counts for earlier reads).
 * - Claims are leases on the ledger's clock: one not renewed within its `ttlMs` expires (dropped as
 *   `'counted'`: reads already open still subtract it). Fencing tokens are a counter, strictly
 *   increasing within the ledger.
 * - `publishFreed` calls every `onFreed` listener at once, in this process, and wakes the head of
 *   the queue (`onWake`); a place that leaves from the head wakes the next one.
 *
 * Ported from the claim-before-launch design of Zuul nodepool (`QuotaInformation`,
 * `estimatedNodepoolQuotaUsed`), as the module description of `port.ts` says.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../core/clock.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import { ValidationError } from '../errors/index.js';
import type { AbsoluteLimits, ResourceAmounts } from '../core/types.js';
import { ClaimLedger, type Claim } from './claims.js';
import { NO_NEEDS, addNeeds, fitsRawHeadroom, rawHeadroomOf } from './headroom.js';
import type { AcquireRequest, Acquisition, AdmitRequest, Admission, ClaimEnd, LedgerClaim, LedgerLimits, LedgerPeek, LedgerPlace, LimitsRead, LimitsReading, QuotaLedger } from './port.js';
import { ledgerScope, sameScope, type LedgerScope } from '../core/endpoint.js';
import { scopeMismatch } from './scope.js';
import { callEach } from '../core/listeners.js';
import { PlaceWakes } from './placeWakes.js';
import { defaultHolder, isClock, isHolderName } from './holder.js';

/**
 * How long a reading that answered keeps the `'counted'` releases it may miss, waiting for its
 * `admit`, in ms: a reading never admitted (the guard's `headroom()`, a failed call) is forgotten
 * after this.
 */
export const READ_GRACE_MS = 60_000;

/** Options of {@link InProcessQuotaLedger}. */
export interface InProcessQuotaLedgerOptions {
  /**
   * The clock of leases and stamps: an object with `now`, `wallNow`, `setTimeout` and
   * `clearTimeout` functions. Default {@link systemClock} (a guard's default ledger uses the
   * client's clock).
   */
  clock?: Clock | undefined;
  /**
   * The holder written into claims: a non-empty string without commas (the same rule as
   * `RedisQuotaLedger`'s `holder`). Default `${os.hostname()}:${process.pid}`.
   */
  holder?: string | undefined;
  /**
   * The Nova compute endpoint this ledger serves, with `projectId` (give both or neither). Without
   * them the ledger takes the endpoint and project of the first guard that uses it. Either way, a
   * guard of another endpoint or project is refused (`ValidationError`) before any request.
   */
  endpoint?: string | undefined;
  /** The project id this ledger serves, with `endpoint`. */
  projectId?: string | undefined;
}

/** The names of {@link InProcessQuotaLedgerOptions}; the constructor checks the values. */
const OPTION_NAMES: OptionsSpec<InProcessQuotaLedgerOptions> = { clock: null, holder: null, endpoint: null, projectId: null };

interface Lease {
  readonly claim: Claim;
  expiresAtMs: number;
  serverId: string | undefined;
}

interface Reading {
  readonly token: number;
  readonly stamp: number;
  answeredAtMs: number | undefined;
}

/**
 * The quota ledger of one process (see the module description).
 *
 * @example
 * ```ts
 * const ledger = new InProcessQuotaLedger({ clock: nova.clock });
 * const a = new QuotaGuard(nova, { ledger });
 * const b = new QuotaGuard(nova, { ledger }); // a and b never pass on the same headroom
 * ```
 */
export class InProcessQuotaLedger implements QuotaLedger {
  readonly kind = 'in-process';
  readonly holder: string;
  /** 0: the places and claims of this ledger live in this process only (`QuotaLedger.placeTtlMs`). */
  readonly placeTtlMs = 0;
  readonly #clock: Clock;
  readonly #claims: ClaimLedger;
  readonly #leases = new Map<string, Lease>();
  readonly #queue: LedgerPlace[] = [];
  readonly #readings: Reading[] = [];
  readonly #listeners = new Set<() => void>();
  readonly #wakes = new PlaceWakes();
  #lastToken = 0;
  #scope: LedgerScope | undefined;

  /**
   * @throws `ValidationError` for options that are not an object, an unknown option (a misspelt
   * name), a `clock` that is not a {@link Clock}, a `holder` that is not a non-empty string
   * without commas, or only one of `endpoint` and `projectId` (or either empty).
   */
  constructor(options: InProcessQuotaLedgerOptions = {}) {
    checkOptions('InProcessQuotaLedger options', options, OPTION_NAMES);
    if (options.clock !== undefined && !isClock(options.clock)) throw new ValidationError('InProcessQuotaLedger clock must be a Clock (now, wallNow, setTimeout, clearTimeout)');
    if (options.holder !== undefined && !isHolderName(options.holder)) {
      throw new ValidationError(`InProcessQuotaLedger holder must be a non-empty string without commas, got ${JSON.stringify(options.holder)}`);
    }
    const { endpoint, projectId } = options;
    if (endpoint !== undefined || projectId !== undefined) {
      if (typeof endpoint !== 'string' || endpoint.trim() === '' || typeof projectId !== 'string' || projectId.trim() === '') {
        throw new ValidationError('InProcessQuotaLedger needs both endpoint and projectId (non-empty strings), or neither');
      }
      this.#scope = ledgerScope(endpoint, projectId);
    }
    this.#clock = options.clock ?? systemClock;
    this.holder = options.holder ?? defaultHolder();
    this.#claims = new ClaimLedger(() => this.#clock.now());
  }

  /** Claims not yet released nor expired. */
  get activeClaims(): number {
    this.#expire();
    return this.#leases.size;
  }

  /**
   * The ids of the claims not yet released nor past their lease (the metadata
   * `nova-guard-claim-id` of the servers they create), for the reaper's `liveClaims`:
   * `() => [{ key: CLAIM_ID_KEY, values: ledger.liveClaimIds() }]`.
   */
  liveClaimIds(): string[] {
    this.#expire();
    return [...this.#leases.keys()];
  }

  /** The endpoint and project this ledger serves: given, or the first guard's; undefined before. */
  get scope(): LedgerScope | undefined {
    return this.#scope;
  }

  /**
   * Take `scope` when the ledger has none yet (see `QuotaLedger.bindScope`).
   * @throws `ValidationError` naming both when `scope` is another endpoint or project.
   */
  bindScope(scope: LedgerScope): void {
    if (this.#scope === undefined) this.#scope = ledgerScope(scope.endpoint, scope.projectId);
    else if (!sameScope(this.#scope, scope)) throw scopeMismatch(this.kind, this.#scope, scope);
  }

  /** `[holder]`: the guards of this process are the one holder of this ledger (`QuotaLedger.members`). */
  members(): readonly string[] {
    return [this.holder];
  }

  async join(needs: ResourceAmounts): Promise<LedgerPlace> {
    const place: LedgerPlace = { id: randomUUID(), needs: { ...needs } };
    this.#queue.push(place);
    this.#wakes.joined(place.id);
    return place;
  }

  async leave(place: LedgerPlace): Promise<void> {
    const i = this.#queue.findIndex((p) => p.id === place.id);
    if (i >= 0) this.#queue.splice(i, 1);
    // The head left (admitted, or gave up): the next place may fit now.
    this.#wakes.left(place.id);
  }

  async limits(
    read: (signal: AbortSignal | undefined) => Promise<{ absolute: AbsoluteLimits; requestId: string | undefined }>,
    signal: AbortSignal | undefined,
  ): Promise<LedgerLimits> {
    this.#expire();
    const stamp = this.#clock.now();
    const reading: Reading = { token: this.#claims.beginRead(), stamp, answeredAtMs: undefined };
    this.#readings.push(reading);
    try {
      const { absolute, requestId } = await read(signal);
      reading.answeredAtMs = this.#clock.now();
      return { absolute, requestId, stamp, ageMs: 0, shared: false };
    } catch (e) {
      this.#endReading(reading);
      throw e;
    }
  }

  /** What `admit` would subtract for claims for a reading of `stamp`, without claiming (ends that reading). */
  async inFlight(stamp: number): Promise<ResourceAmounts> {
    return this.#inFlightFor(stamp);
  }

  async admit(request: AdmitRequest): Promise<Admission> {
    const inFlight = this.#inFlightFor(request.stamp);
    let ahead: ResourceAmounts = { ...NO_NEEDS };
    for (const p of this.#queue) {
      if (p.id === request.place?.id) break;
      ahead = addNeeds(ahead, p.needs);
    }
    if (!fitsRawHeadroom(request.headroom, inFlight, request.needs, ahead)) return { admitted: false, inFlight, ahead, holders: 1 };
    return { admitted: true, claim: this.#take(request.needs, request.ttlMs), inFlight, ahead, holders: 1 };
  }

  /**
   * `limits` (a fresh read through `read`), `admit` on its raw headroom, and when short, with no
   * place and `joinIfShort`, `join`: the same as the three calls (nothing to save in one process).
   * `holders` is 1.
   * @throws what `read` throws; `AbortError` when `signal` aborts before the read.
   */
  async acquire(request: AcquireRequest, read: (signal: AbortSignal | undefined) => Promise<LimitsReading>, signal: AbortSignal | undefined): Promise<Acquisition> {
    const reading = await this.limits(read, signal);
    const admission = await this.admit({ place: request.place, needs: request.needs, headroom: rawHeadroomOf(reading.absolute), stamp: reading.stamp, ttlMs: request.ttlMs });
    if (admission.admitted || !request.joinIfShort || request.place !== undefined) return { ...admission, reading };
    return { ...admission, reading, place: await this.join(request.needs) };
  }

  /**
   * A fresh reading through `read` and what an admission on it would subtract for claims, claiming
   * nothing (`limits`, then `inFlight` for its stamp).
   * @throws what `read` throws; `AbortError` when `signal` aborts before the read.
   */
  async peek(read: LimitsRead, signal: AbortSignal | undefined): Promise<LedgerPeek> {
    const reading = await this.limits(read, signal);
    return { reading, inFlight: await this.inFlight(reading.stamp) };
  }

  /** Always true: the store is this object. */
  everReached(): boolean {
    return true;
  }

  /** An in-process ledger takes no round trip: no budget of its own (`undefined`). */
  callBudgetMs(): number | undefined {
    return undefined;
  }

  /** Always answers (nothing to reach). */
  async probe(): Promise<void> {}

  async claimAnyway(needs: ResourceAmounts, ttlMs: number): Promise<LedgerClaim> {
    this.#expire();
    return this.#take(needs, ttlMs);
  }

  async renew(claim: LedgerClaim, ttlMs: number): Promise<boolean> {
    this.#expire();
    const lease = this.#leases.get(claim.id);
    if (!lease) return false;
    lease.expiresAtMs = this.#clock.now() + ttlMs;
    return true;
  }

  async bind(claim: LedgerClaim, serverId: string): Promise<void> {
    const lease = this.#leases.get(claim.id);
    if (lease) lease.serverId = serverId;
  }

  async release(claim: LedgerClaim, end: ClaimEnd): Promise<void> {
    const lease = this.#leases.get(claim.id);
    if (!lease) return;
    this.#leases.delete(claim.id);
    this.#claims.release(lease.claim, end);
  }

  /** Wakes the listeners and the head of the queue; no kept reading, so no credit (`credit` is ignored). */
  async publishFreed(_serverId: string): Promise<void> {
    callEach(this.#listeners);
    this.#wakes.wakeHead();
  }

  /** `undefined`: this ledger keeps no reading (every admission reads afresh). */
  keptSeen(): number | undefined {
    return undefined;
  }

  /**
   * Listen for the wake-ups of `place` (see `QuotaLedger.onWake`): a confirmed deletion while it
   * is the head of the queue, or the head ahead of it leaving. A wake-up that came while nobody
   * listened is told at once.
   */
  onWake(place: LedgerPlace, listener: () => void): () => void {
    return this.#wakes.listen(place.id, listener);
  }

  onFreed(listener: () => void): () => void {
    const own = (): void => listener();
    this.#listeners.add(own);
    return () => {
      this.#listeners.delete(own);
    };
  }

  /** Ends every claim (as `'counted'`) and place, and forgets the listeners. */
  async close(): Promise<void> {
    for (const lease of this.#leases.values()) this.#claims.release(lease.claim, 'counted');
    this.#leases.clear();
    this.#queue.length = 0;
    this.#listeners.clear();
    this.#wakes.clear();
  }

  #take(needs: ResourceAmounts, ttlMs: number): LedgerClaim {
    const claim: LedgerClaim = { id: randomUUID(), token: ++this.#lastToken, needs: { ...needs }, holder: this.holder };
    this.#leases.set(claim.id, { claim: this.#claims.claim(needs), expiresAtMs: this.#clock.now() + ttlMs, serverId: undefined });
    return claim;
  }

  /** Claims for a reading of `stamp`; ends one open reading of that stamp (its `admit` came). */
  #inFlightFor(stamp: number): ResourceAmounts {
    this.#expire();
    const inFlight = this.#claims.inFlightSince(stamp);
    const reading = this.#readings.find((r) => r.stamp === stamp && r.answeredAtMs !== undefined);
    if (reading) this.#endReading(reading);
    return inFlight;
  }

  #endReading(reading: Reading): void {
    const i = this.#readings.indexOf(reading);
    if (i >= 0) this.#readings.splice(i, 1);
    this.#claims.endRead(reading.token);
  }

  /** Drop expired leases and readings past their grace. */
  #expire(): void {
    const now = this.#clock.now();
    for (const r of [...this.#readings]) if (r.answeredAtMs !== undefined && now - r.answeredAtMs > READ_GRACE_MS) this.#endReading(r);
    for (const [id, lease] of this.#leases) {
      if (lease.expiresAtMs > now) continue;
      this.#leases.delete(id);
      this.#claims.release(lease.claim, 'counted');
    }
  }
}
