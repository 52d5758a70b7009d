/**
 * `RedisQuotaLedger`: the {@link QuotaLedger} of a fleet, kept in one Redis (see
 * `docs/fleet-ledger.md`). Each operation is one Lua script (`scripts.ts`), atomic across hosts,
 * on Redis's clock.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { systemClock, type Clock, type ResourceAmounts, type TimerHandle } from '../core/index.js';
import { componentLogger } from '../core/logger.js';
import type { AcquireRequest, Acquisition, Admission, AdmitRequest, ClaimEnd, FreedCredit, LedgerClaim, LedgerLimits, LedgerPeek, LedgerPlace, LimitsRead, LimitsReading, QuotaLedger, UncountedRead } from '../ledger/index.js';
import type { NovaClient } from '../nova/index.js';
import { ledgerScope, sameScope, type LedgerScope } from '../core/endpoint.js';
import { clientScope, fleetWatcherWanted, scopeMismatch } from '../ledger/index.js';
import { LedgerNews } from './news.js';
import { RedisConnection, type LedgerCommand } from './connection.js';
import { amounts, freedCreditArgs, holderNames, needsArgs } from './codec.js';
import { ReadingAges } from './readingAges.js';
import { KeptSeen } from './keptSeen.js';
import { acquireOn, limitsOn, type LedgerInternals } from './readings.js';
import { FleetWatcher } from '../delete/fleetWatcher.js';
import { RedisFleetStore } from './fleetStore.js';
import { checkOptionNames, ledgerKeys, resolveOptions, urlPassword, type LedgerKeys, type RedisQuotaLedgerOptions, type ResolvedOptions } from './options.js';

/** How long a claim released as `'counted'` stays subtracted from readings sent before it, in ms. */
const COUNTED_RETENTION_MS = 10 * 60_000;

/** Round trips one ledger call may take, for {@link RedisQuotaLedger.callBudgetMs}. */
export const CALL_ROUND_TRIPS = 4;
/** The least {@link RedisQuotaLedger.callBudgetMs} says, in ms. */
export const MIN_CALL_BUDGET_MS = 100;

/**
 * The fleet ledger on Redis (ioredis). Every process on every host that shares the Redis and the
 * same `endpoint` + `projectId` shares claims, queue, `/limits` readings and freed-quota wake-ups.
 *
 * @example
 * ```ts
 * import { RedisQuotaLedger } from 'nova-guard/redis';
 * const ledger = new RedisQuotaLedger({ url: 'redis://127.0.0.1:6379', endpoint, projectId });
 * ```
 * Source: the claim-before-launch design of Zuul nodepool (`estimatedNodepoolQuotaUsed`), with
 * leases on the store's clock and fencing tokens (`INCR`) in place of ZooKeeper session locks.
 */
export class RedisQuotaLedger implements QuotaLedger {
  readonly kind = 'redis';
  readonly holder: string;
  /** The lease of this holder's places and of its entry among the live holders, in ms (the `placeTtlMs` option). */
  get placeTtlMs(): number {
    return this.#opts.placeTtlMs;
  }
  /** The endpoint (normalised) and project this ledger serves: a guard of another is refused. */
  readonly scope: LedgerScope;
  readonly #opts: ResolvedOptions;
  readonly #keys: LedgerKeys;
  readonly #clock: Clock;
  readonly #conn: RedisConnection;
  readonly #redactedUrl: string | undefined;
  /**
   * This ledger object's id in the scope: a UUID, a space, the holder name (its entry among the live
   * holders, `holders`, so every admission can say who they are: `Admission.members`).
   */
  readonly #instance: string;
  readonly #news: LedgerNews;
  readonly #places = new Map<string, { seq: number; needs: string }>();
  /**
   * The claims this holder holds, as its write-back after a reconnect sends them. `posting`: its
   * POST may have been sent (renewed since the admission, taken with `claimAnyway`, or bound to its
   * server). Only those are restored in a store that lost them.
   */
  readonly #claims = new Map<string, { record: string; expiresAt: number; posting: boolean }>();
  /** When this ledger first saw each reading: the second clock of freshness. */
  readonly #ages: ReadingAges;
  /** The newest kept reading this object knows stored (`keptSeen()`). */
  readonly #kept = new KeptSeen();
  readonly #internals: LedgerInternals;
  #maxToken = 0;
  #members: readonly string[] = [];
  #maxSeq = 0;
  #beat: TimerHandle | undefined;
  #closed = false;
  #fleet: FleetWatcher | undefined;

  /**
   * @throws `ValidationError` for bad options (see {@link RedisQuotaLedgerOptions}).
   * @throws `ConfigError` when `url` is given and the optional peer dependency ioredis is not
   * installed (`npm install ioredis@^5`).
   */
  constructor(options: RedisQuotaLedgerOptions) {
    this.#opts = resolveOptions(options);
    this.holder = this.#opts.holder;
    this.#instance = `${randomUUID()} ${this.holder}`;
    this.#keys = ledgerKeys(this.#opts.keyPrefix, options.endpoint, options.projectId);
    this.scope = ledgerScope(options.endpoint, options.projectId);
    this.#clock = options.clock ?? systemClock;
    this.#news = new LedgerNews(this.#instance, this.#keys.limitsChannel, this.#clock, this.#kept);
    this.#ages = new ReadingAges(this.#clock, this.#opts.limitsMaxAgeMs);
    this.#internals = {
      run: (name, args) => this.#run(name, args),
      ages: this.#ages,
      kept: this.#kept,
      clock: this.#clock,
      opts: this.#opts,
      holder: this.holder,
      limitsChannel: this.#keys.limitsChannel,
      waitForReading: (ms, signal) => this.#news.waitForReading(ms, signal),
      keepPlace: (id, seq, record) => this.#keepPlace(id, seq, record),
      forgetPlace: (id) => void (this.#places.delete(id) && this.#news.wakes.left(id)),
      remember: (id, needs, token, ttlMs) => this.#remember(id, needs, token, ttlMs),
      sawMembers: (entries) => this.#sawMembers(entries),
    };
    const password = urlPassword(options.url);
    this.#conn = new RedisConnection({
      url: options.url,
      redis: options.redis,
      password,
      clock: this.#clock,
      commandTimeoutMs: this.#opts.commandTimeoutMs,
      logger: componentLogger(options.logger, 'redis-ledger'),
      channels: [this.#keys.freedChannel, this.#keys.limitsChannel],
      onMessage: (channel, message) => this.#news.message(channel, message),
      onReconnect: () => this.#assert(true),
    });
    this.#redactedUrl = options.url === undefined ? undefined : this.#conn.redact(options.url);
  }

  /**
   * A ledger for `client`'s endpoint and project: always the client's own (see `clientScope` in
   * `src/ledger/scope.ts`). The endpoint is `client.endpoint()` (the client's option, else its
   * catalog's); `options.endpoint` may only spell that same endpoint another way (scheme and host
   * case, default port, trailing slash: compared as `InProcessFleet.join` compares them), never name
   * another Nova. The project is `client.projectId` (or its token's, `AuthProvider.getProjectId`);
   * `options.projectId` may name it for a client that does not know it, never another.
   *
   * This host joins the fleet of that scope (and may be elected its watcher, looking with this
   * client): on by default (`fleetWatcher: false` turns it off). The client must know its project
   * (its `projectId`, a noauth token's, or its Keystone token's: a Keystone provider that does not
   * know it yet is asked for a token first), as `InProcessFleet.join` requires. So a host whose
   * client talks to another Nova, or whose token is another project's, never joins: its 404s would
   * be taken for deletions. By default a client that does not know its project, or whose engine has
   * another fleet link attached, gets the ledger without the watcher (logged at info,
   * `fleetWatcherWanted` in `src/ledger/scope.ts`); `fleetWatcher: true` refuses it instead.
   *
   * Makes no Nova request (the catalog and a token: Keystone requests at most), and no Redis
   * connection before these checks pass.
   * @throws `ValidationError` (naming both sides) when `options.endpoint` names another endpoint than
   * the client's, `options.projectId` is not the client's project, the client's `projectId` is not
   * its token's project, the client has no project id and none is given, or with `fleetWatcher: true`
   * the client does not know its project or another fleet link is attached to its engine; and what
   * `new RedisQuotaLedger` throws.
   */
  static async forClient(client: NovaClient, options: Omit<RedisQuotaLedgerOptions, 'endpoint' | 'projectId'> & { endpoint?: string; projectId?: string }): Promise<RedisQuotaLedger> {
    checkOptionNames('RedisQuotaLedger.forClient options', options);
    const { fleetWatcher, ...rest } = options;
    const logger = componentLogger(options.logger, 'fleet-watcher');
    const watch = await fleetWatcherWanted(client, fleetWatcher, (reason) => logger.info({ reason }, 'Redis ledger without the fleet watcher (its default): each host looks by itself'));
    const scope = await clientScope('RedisQuotaLedger.forClient', client, options, watch);
    const ledger = new RedisQuotaLedger({ ...rest, ...scope });
    if (!watch) return ledger;
    const store = new RedisFleetStore(ledger.#conn, ledger.#keys.base, logger);
    ledger.#fleet = await FleetWatcher.start({ store, engine: client.deleteEngine, clock: ledger.#clock, leaseTtlMs: ledger.#opts.fleetLeaseTtlMs, logger }, () => ledger.close());
    return ledger;
  }

  /** This host's part in the fleet watcher (on by default with `forClient`, see `src/delete/fleetWatcher.ts`): its counters, whether it watches. */
  get fleetWatcher(): FleetWatcher | undefined { return this.#fleet; } // prettier-ignore

  /**
   * A guard of `scope` is about to use this ledger (see `QuotaLedger.bindScope`).
   * @throws `ValidationError` naming both when `scope` is another endpoint or project.
   */
  bindScope(scope: LedgerScope): void {
    if (!sameScope(this.scope, scope)) throw scopeMismatch(this.kind, this.scope, scope);
  }

  /** Every script gets the scope's keys, the counted retention, this holder's instance id and its lease. */
  #run(name: LedgerCommand, args: ReadonlyArray<string | number>, raw = false): Promise<unknown> {
    this.#heartbeat();
    return this.#conn.run(name, [...this.#keys.scope, COUNTED_RETENTION_MS, this.#instance, this.#opts.placeTtlMs, ...args], { raw });
  }

  /**
   * A call a closed ledger ignores (`leave`, `release`, `bind`, `publishFreed`): resolves at once after
   * `close()`, quietly when `close()` cut it off (what it would have ended expires, or `close()` ended it).
   */
  async #quiet(name: LedgerCommand, args: ReadonlyArray<string | number>): Promise<void> {
    if (this.#closed) return;
    try {
      await this.#run(name, args);
    } catch (error) {
      if (!this.#closed) throw error;
    }
  }

  /**
   * Write back the places (and with `claims`, the live claims) this ledger holds; renews its holder
   * entry. Each claim goes with whether the store may restore it when it lost it (`'1'`: posting or
   * bound; `'0'`: only admitted, see `QuotaLedger.renew`).
   */
  async #assert(claims: boolean): Promise<void> {
    const args: Array<string | number> = [this.#opts.placeTtlMs, this.#maxToken, this.#maxSeq, this.#ages.maxOrder, this.#places.size];
    for (const [id, p] of this.#places) args.push(id, p.seq, p.needs);
    if (claims) {
      const now = this.#clock.now();
      for (const [id, c] of this.#claims) args.push(id, c.record, Math.floor(c.expiresAt - now), c.posting ? '1' : '0');
    }
    args.push(claims ? '1' : '0');
    const res = (await this.#run('novaGuardAssert', args, true)) as unknown[];
    this.#sawMembers(res[1]);
  }

  /** The live holders of a script's answer (`holders()`: entries `<uuid> <holder>`): kept for {@link members}; returns how many. */
  #sawMembers(entries: unknown): number {
    const names = holderNames(entries);
    this.#members = names;
    return names.length;
  }

  /** The holder names of the scope's live holders as this ledger last saw them (every script's answer that says, the heartbeat's included; see `QuotaLedger.members`). */
  members(): readonly string[] {
    return this.#members;
  }

  /**
   * The heartbeat: every `placeTtlMs / 3`, from the first call until `close()`, the places this
   * ledger holds and its holder entry are renewed (so `holders` counts a live but idle holder).
   */
  #heartbeat(): void {
    if (this.#beat !== undefined || this.#closed) return;
    this.#beat = this.#clock.setTimeout(() => {
      this.#assert(false).then(
        () => this.#nextBeat(),
        () => this.#nextBeat(),
      );
    }, this.#opts.placeTtlMs / 3);
    (this.#beat as { unref?: () => void }).unref?.();
  }

  #nextBeat(): void {
    this.#beat = undefined;
    this.#heartbeat();
  }

  async join(needs: ResourceAmounts): Promise<LedgerPlace> {
    const id = randomUUID();
    const record = needsArgs('join', needs).join(',');
    const seq = Number(await this.#run('novaGuardJoin', [id, record, this.#opts.placeTtlMs]));
    this.#keepPlace(id, seq, record);
    return { id, needs: { ...needs } };
  }

  #keepPlace(id: string, seq: number, record: string): void {
    this.#maxSeq = Math.max(this.#maxSeq, seq);
    if (!this.#places.has(id)) this.#news.wakes.joined(id);
    this.#places.set(id, { seq, needs: record });
  }

  async leave(place: LedgerPlace): Promise<void> {
    this.#internals.forgetPlace(place.id);
    await this.#quiet('novaGuardLeave', [place.id]);
  }

  #remember(id: string, needs: ResourceAmounts, token: number, ttlMs: number, posting = false): LedgerClaim {
    this.#maxToken = Math.max(this.#maxToken, token);
    const record = `${needsArgs('claim', needs).join(',')},${token},${this.holder},`;
    this.#claims.set(id, { record, expiresAt: this.#clock.now() + ttlMs, posting });
    return { id, token, needs: { ...needs }, holder: this.holder };
  }

  /**
   * Check and claim atomically (one script): every live claim, every claim released as `'counted'`
   * at or after `stamp` (the reading's order number) and every place ahead is subtracted. The
   * answer carries `holders`, the number of live holders of the scope (who they are: {@link members}).
   */
  async admit(request: AdmitRequest): Promise<Admission> {
    const needs = needsArgs('admit', request.needs);
    const room = (['cores', 'ramMiB', 'instances'] as const).map((r) => {
      const v = request.headroom[r];
      return v === undefined || !Number.isFinite(v) ? '' : Math.floor(v);
    });
    const id = randomUUID();
    const placeId = request.place?.id ?? '';
    const res = (await this.#run('novaGuardAdmit', [placeId, ...needs, ...room, Math.floor(request.stamp), Math.ceil(request.ttlMs), this.holder, id])) as unknown[];
    const inFlight = amounts(res, 2);
    const ahead = amounts(res, 5);
    const holders = this.#internals.sawMembers(res[8]);
    if (Number(res[0]) !== 1) return { admitted: false, inFlight, ahead, holders };
    if (placeId !== '') this.#internals.forgetPlace(placeId);
    return { admitted: true, claim: this.#remember(id, request.needs, Number(res[1]), request.ttlMs), inFlight, ahead, holders };
  }

  /**
   * `limits` + `admit` (+ `join` when short and asked to): ONE script round trip when the kept
   * reading is fresh, two around Nova's `read` otherwise (see `readings.ts` `acquireOn`). With
   * `uncounted` (the guard gives it), a store never vetted (new, or emptied by a restart) is first
   * told the servers Nova does not count yet: one listing for the whole fleet, before its first
   * admission (`docs/fleet-ledger.md`, "Reconnect").
   * @throws {@link RedisLedgerError} when Redis fails; `AbortError` when `signal` aborts; what
   * `read` or `uncounted` throws (the refresh lock is given back first).
   */
  acquire(request: AcquireRequest, read: (signal: AbortSignal | undefined) => Promise<LimitsReading>, signal: AbortSignal | undefined, uncounted?: UncountedRead): Promise<Acquisition> {
    return acquireOn(this.#internals, request, read, signal, uncounted);
  }

  /**
   * `limits`, then `inFlight` for its stamp: a reading and what an admission on it would subtract
   * for claims, claiming nothing (the guard's `headroom()`).
   * @throws {@link RedisLedgerError} when Redis fails; `AbortError` when `signal` aborts; what `read` throws.
   */
  async peek(read: LimitsRead, signal: AbortSignal | undefined): Promise<LedgerPeek> {
    const reading = await this.limits(read, signal);
    return { reading, inFlight: await this.inFlight(reading.stamp) };
  }

  /** What {@link RedisQuotaLedger.admit} would subtract for claims for a reading of `stamp` (one read-only script). */
  async inFlight(stamp: number): Promise<ResourceAmounts> {
    const res = (await this.#run('novaGuardInFlight', [Math.floor(stamp)])) as unknown[];
    return amounts(res, 0);
  }

  /**
   * The ids of the scope's claims, of every holder, neither released nor past their lease (Redis's
   * clock): the metadata `nova-guard-claim-id` of the servers they create. For the reaper's
   * `liveClaims` in any process: `async () => [{ key: CLAIM_ID_KEY, values: await ledger.liveClaimIds() }]`.
   * One read-only script.
   */
  async liveClaimIds(): Promise<string[]> {
    const ids = (await this.#run('novaGuardLiveClaims', [])) as unknown[];
    return ids.map(String);
  }

  /** `QuotaLedger.claimAnyway`: a claim taken without a check is posting from the start (see `renew`). */
  async claimAnyway(needs: ResourceAmounts, ttlMs: number): Promise<LedgerClaim> {
    const id = randomUUID();
    const token = Number(await this.#run('novaGuardClaimAnyway', [...needsArgs('claimAnyway', needs), Math.ceil(ttlMs), this.holder, id]));
    return this.#remember(id, needs, token, ttlMs, true);
  }

  /**
   * `QuotaLedger.renew`, the fencing point: a claim renewed is posting from then on (its POST may
   * be in flight), and this holder's write-back after a reconnect restores it in a store that lost
   * it (Redis restarted empty). A claim only admitted is not restored there: its renewal then
   * answers `false`, and the guard goes back through admission instead of POSTing.
   */
  async renew(claim: LedgerClaim, ttlMs: number): Promise<boolean> {
    const live = Number(await this.#run('novaGuardRenew', [claim.id, Math.ceil(ttlMs)])) === 1;
    const held = this.#claims.get(claim.id);
    if (!live) this.#claims.delete(claim.id);
    else if (held) {
      held.expiresAt = this.#clock.now() + ttlMs;
      held.posting = true;
    }
    return live;
  }

  async bind(claim: LedgerClaim, serverId: string): Promise<void> {
    const held = this.#claims.get(claim.id);
    if (held) {
      held.record = held.record.replace(/,[^,]*$/, `,${serverId.replace(/,/g, '')}`);
      held.posting = true;
    }
    await this.#quiet('novaGuardBind', [claim.id, serverId.replace(/,/g, '')]);
  }

  async release(claim: LedgerClaim, end: ClaimEnd): Promise<void> {
    this.#claims.delete(claim.id);
    await this.#quiet('novaGuardRelease', [claim.id, end, needsArgs('release', claim.needs).join(',')]);
  }

  /**
   * Tell every holder that quota was freed (`QuotaLedger.publishFreed`). One script, atomic: with a
   * `credit` that holds (the kept reading is still the one of `credit.keptSeq`, it was sent after
   * the claim `credit.claimId` was released as `'counted'`, and that claim was not credited to it
   * before) the claim's needs are subtracted from the kept reading's usage and it stays as fresh as
   * it was; otherwise (no credit, or one that does not hold) the kept reading stops being fresh
   * and the next admission reads `/limits`. Either way every holder wakes, so a woken waiter never
   * gets a reading that still counts the deleted server (`docs/fleet-ledger.md`, "The credit of a
   * confirmed deletion"). After `close()` (or cut off by it): the local listeners only, quietly.
   * @throws `ValidationError` (before any request) when `credit` is given with a `claimId` that is
   * not a non-empty string or a `keptSeq` that is not a whole number of at least 0;
   * {@link RedisLedgerError} when Redis fails.
   */
  async publishFreed(serverId: string, credit?: FreedCredit): Promise<void> {
    const creditArgs = freedCreditArgs(credit);
    this.#news.freed();
    await this.#quiet('novaGuardFreed', [this.#keys.freedChannel, JSON.stringify({ from: this.#instance, serverId }), ...creditArgs]);
  }

  /**
   * The order number (`LedgerLimits.stamp`) of the newest kept reading this object knows was stored
   * in Redis (`QuotaLedger.keptSeen`): from its own script answers that carry the kept reading or say
   * its own reading was stored, and from every holder's "kept reading refreshed" message. Never the
   * order number of a read not stored yet. Synchronous, no request; `undefined` before any.
   */
  keptSeen(): number | undefined {
    return this.#kept.seq;
  }

  onFreed(listener: () => void): () => void {
    return this.#news.onFreed(listener);
  }

  /** `QuotaLedger.onWake`: a freed server wakes this object's oldest place (`PlaceWakes`: one admission per waiting process). */
  onWake(place: LedgerPlace, listener: () => void): () => void {
    return this.#news.wakes.listen(place.id, listener);
  }

  /**
   * How long one call of this ledger may take now, in ms: `max(MIN_CALL_BUDGET_MS, CALL_ROUND_TRIPS
   * x RTO)`. RTO is RFC 6298's (`srtt + max(1, 4 rttvar)`) over the command round trips;
   * `CALL_ROUND_TRIPS` (4) covers the Redis part of the longest call (`acquire` on a stale reading, or
   * waiting for another holder's refresh: its storeAdmit's one way, the message's one way, the next
   * acquire). The wait for another holder's Nova read is not in it: the ledger awaits it through
   * `waitForOthersRead`, and the guard pauses the call's limit meanwhile (see `docs/fleet-ledger.md`,
   * "The call budget"). `undefined` before the first answer. The guard takes `max(ledgerTimeoutMs,
   * this)`, capped by the call's `maxWaitMs`.
   */
  callBudgetMs(): number | undefined {
    const rto = this.#conn.rtoMs();
    return rto === undefined ? undefined : Math.ceil(Math.max(MIN_CALL_BUDGET_MS, CALL_ROUND_TRIPS * rto));
  }

  /** True once this ledger's connection has reached Redis (see `QuotaLedger.everReached`). */
  everReached(): boolean {
    return this.#conn.everReady;
  }

  /**
   * `PING`, bounded by `commandTimeoutMs`: resolves when Redis answers.
   * @throws {@link RedisLedgerError} (with `ledgerDown: true` when Redis cannot be reached at all).
   */
  async probe(): Promise<void> {
    await this.#conn.ping();
  }

  /**
   * A `/limits` reading: the kept one when fresh (by Redis's clock and this ledger's own), else
   * one made through `read` under the refresh lock (see `readings.ts`).
   */
  limits(read: (signal: AbortSignal | undefined) => Promise<LimitsReading>, signal: AbortSignal | undefined): Promise<LedgerLimits> {
    return limitsOn(this.#internals, read, signal);
  }

  /**
   * Leaves every place, drops every claim this ledger holds and its holder entry, and closes its
   * connections (always, even when Redis does not answer or something on the way throws). Calls of
   * `leave`, `release`, `bind` and `publishFreed` after it (or cut off by it) resolve quietly.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#fleet?.close();
      this.#clock.clearTimeout(this.#beat);
      const places = [...this.#places.keys()];
      const claims = [...this.#claims.keys()];
      await Promise.allSettled([
        ...places.map((id) => this.#run('novaGuardLeave', [id])),
        ...claims.map((id) => this.#run('novaGuardRelease', [id, 'not-created', '0,0,0'])),
        this.#run('novaGuardGoodbye', []),
      ]);
    } finally {
      this.#places.clear();
      this.#news.wakes.clear();
      this.#claims.clear();
      await this.#conn.close();
    }
  }

  /** Never shows the Redis password. */
  toJSON(): Record<string, unknown> {
    return { kind: this.kind, holder: this.holder, url: this.#redactedUrl, keyPrefix: this.#opts.keyPrefix };
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `RedisQuotaLedger { holder: ${JSON.stringify(this.holder)}, url: ${JSON.stringify(this.#redactedUrl ?? '(ioredis client)')} }`;
  }
}
