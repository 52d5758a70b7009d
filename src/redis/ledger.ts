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
import { AbortError, ValidationError, throwIfAborted } from '../errors/index.js';
import type { Admission, AdmitRequest, ClaimEnd, LedgerClaim, LedgerLimits, LedgerPlace, LimitsReading, QuotaLedger } from '../guard/index.js';
import type { NovaClient } from '../nova/index.js';
import { ledgerScope, sameScope, type LedgerScope } from '../core/endpoint.js';
import { scopeMismatch } from '../guard/ledgerScope.js';
import { RedisConnection, type LedgerCommand } from './connection.js';
import { checkOptionNames, ledgerKeys, resolveOptions, urlPassword, type LedgerKeys, type RedisQuotaLedgerOptions, type ResolvedOptions } from './options.js';

/** How long a claim released as `'counted'` stays subtracted from readings sent before it, in ms. */
const COUNTED_RETENTION_MS = 10 * 60_000;

/**
 * A reading as kept in Redis: JSON, with an unlimited limit (`Infinity`, Nova's -1) written as
 * `"Infinity"` (plain JSON would turn it into `null`, which reads as no room at all).
 */
function encodeReading(reading: LimitsReading): string {
  return JSON.stringify({ absolute: reading.absolute, requestId: reading.requestId }, (_key, value: unknown) => (value === Infinity ? 'Infinity' : value));
}

function decodeReading(json: string): LimitsReading {
  return JSON.parse(json, (_key, value: unknown) => (value === 'Infinity' ? Infinity : value)) as LimitsReading;
}

function needsArgs(where: string, n: ResourceAmounts): [number, number, number] {
  const v: [number, number, number] = [n.cores, n.ramMiB, n.instances];
  if (v.some((x) => typeof x !== 'number' || !Number.isFinite(x) || x < 0)) throw new ValidationError(`${where}: needs must be non-negative numbers, got ${JSON.stringify(n)}`);
  return v.map(Math.ceil) as [number, number, number];
}

function amounts(a: unknown[], from: number): ResourceAmounts {
  return { cores: Number(a[from]), ramMiB: Number(a[from + 1]), instances: Number(a[from + 2]) };
}

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
  /** The endpoint (normalised) and project this ledger serves: a guard of another is refused. */
  readonly scope: LedgerScope;
  readonly #opts: ResolvedOptions;
  readonly #keys: LedgerKeys;
  readonly #clock: Clock;
  readonly #conn: RedisConnection;
  readonly #redactedUrl: string | undefined;
  readonly #instance = randomUUID();
  readonly #freed = new Set<() => void>();
  readonly #limitsWaiters = new Set<() => void>();
  readonly #places = new Map<string, { seq: number; needs: string }>();
  readonly #claims = new Map<string, { record: string; expiresAt: number }>();
  #maxToken = 0;
  #maxSeq = 0;
  #beat: TimerHandle | undefined;
  #closed = false;

  /**
   * @throws `ValidationError` for bad options (see {@link RedisQuotaLedgerOptions}).
   * @throws `ConfigError` when `url` is given and the optional peer dependency ioredis is not
   * installed (`npm install ioredis@^5`).
   */
  constructor(options: RedisQuotaLedgerOptions) {
    this.#opts = resolveOptions(options);
    this.holder = this.#opts.holder;
    this.#keys = ledgerKeys(this.#opts.keyPrefix, options.endpoint, options.projectId);
    this.scope = ledgerScope(options.endpoint, options.projectId);
    this.#clock = options.clock ?? systemClock;
    const password = urlPassword(options.url);
    this.#conn = new RedisConnection({
      url: options.url,
      redis: options.redis,
      password,
      clock: this.#clock,
      commandTimeoutMs: this.#opts.commandTimeoutMs,
      logger: componentLogger(options.logger, 'redis-ledger'),
      channels: [this.#keys.freedChannel, this.#keys.limitsChannel],
      onMessage: (channel, message) => this.#message(channel, message),
      onReconnect: () => this.#assert(true),
    });
    this.#redactedUrl = options.url === undefined ? undefined : this.#conn.redact(options.url);
  }

  /**
   * A ledger for `client`'s endpoint and project: `endpoint` from `client.endpoint()` (the catalog's
   * when the client has none), `projectId` from `client.projectId`, unless given.
   * @throws `ValidationError` when the client has no project id and none is given.
   */
  static async forClient(client: NovaClient, options: Omit<RedisQuotaLedgerOptions, 'endpoint' | 'projectId'> & { endpoint?: string; projectId?: string }): Promise<RedisQuotaLedger> {
    checkOptionNames('RedisQuotaLedger.forClient options', options);
    const projectId = options.projectId ?? client.projectId;
    if (projectId === undefined) throw new ValidationError('RedisQuotaLedger.forClient: the client has no projectId; pass projectId');
    const endpoint = options.endpoint ?? (await client.endpoint());
    return new RedisQuotaLedger({ ...options, endpoint, projectId });
  }

  /**
   * A guard of `scope` is about to use this ledger (see `QuotaLedger.bindScope`).
   * @throws `ValidationError` naming both when `scope` is another endpoint or project.
   */
  bindScope(scope: LedgerScope): void {
    if (!sameScope(this.scope, scope)) throw scopeMismatch(this.kind, this.scope, scope);
  }

  #run(name: LedgerCommand, args: ReadonlyArray<string | number>, raw = false): Promise<unknown> {
    return this.#conn.run(name, [...this.#keys.scope, COUNTED_RETENTION_MS, ...args], { raw });
  }

  #message(channel: string, message: string): void {
    if (channel === this.#keys.limitsChannel) {
      for (const wake of [...this.#limitsWaiters]) wake();
      return;
    }
    let from: unknown;
    try {
      from = (JSON.parse(message) as { from?: unknown }).from;
    } catch {
      from = undefined;
    }
    if (from !== this.#instance) this.#notifyFreed();
  }

  #notifyFreed(): void {
    for (const listener of [...this.#freed]) {
      try {
        listener();
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  /** Write back the places (and with `claims`, the live claims) this ledger holds. */
  async #assert(claims: boolean): Promise<void> {
    const args: Array<string | number> = [this.#opts.placeTtlMs, this.#maxToken, this.#maxSeq, this.#places.size];
    for (const [id, p] of this.#places) args.push(id, p.seq, p.needs);
    if (claims) {
      const now = this.#clock.now();
      for (const [id, c] of this.#claims) args.push(id, c.record, Math.floor(c.expiresAt - now));
    }
    args.push(claims ? '1' : '0');
    await this.#run('novaGuardAssert', args, true);
  }

  #heartbeat(): void {
    if (this.#beat !== undefined || this.#closed || this.#places.size === 0) return;
    this.#beat = this.#clock.setTimeout(() => {
      this.#beat = undefined;
      if (this.#places.size === 0 || this.#closed) return;
      this.#assert(false).then(
        () => this.#heartbeat(),
        () => this.#heartbeat(),
      );
    }, this.#opts.placeTtlMs / 3);
    (this.#beat as { unref?: () => void }).unref?.();
  }

  async join(needs: ResourceAmounts): Promise<LedgerPlace> {
    const id = randomUUID();
    const record = needsArgs('join', needs).join(',');
    const seq = Number(await this.#run('novaGuardJoin', [id, record, this.#opts.placeTtlMs]));
    this.#maxSeq = Math.max(this.#maxSeq, seq);
    this.#places.set(id, { seq, needs: record });
    this.#heartbeat();
    return { id, needs: { ...needs } };
  }

  async leave(place: LedgerPlace): Promise<void> {
    this.#places.delete(place.id);
    await this.#run('novaGuardLeave', [place.id]);
  }

  #remember(id: string, needs: ResourceAmounts, token: number, ttlMs: number): LedgerClaim {
    this.#maxToken = Math.max(this.#maxToken, token);
    const record = `${needsArgs('claim', needs).join(',')},${token},${this.holder},`;
    this.#claims.set(id, { record, expiresAt: this.#clock.now() + ttlMs });
    return { id, token, needs: { ...needs }, holder: this.holder };
  }

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
    if (Number(res[0]) !== 1) return { admitted: false, inFlight, ahead };
    if (placeId !== '') this.#places.delete(placeId);
    return { admitted: true, claim: this.#remember(id, request.needs, Number(res[1]), request.ttlMs), inFlight, ahead };
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

  async claimAnyway(needs: ResourceAmounts, ttlMs: number): Promise<LedgerClaim> {
    const id = randomUUID();
    const token = Number(await this.#run('novaGuardClaimAnyway', [...needsArgs('claimAnyway', needs), Math.ceil(ttlMs), this.holder, id]));
    return this.#remember(id, needs, token, ttlMs);
  }

  async renew(claim: LedgerClaim, ttlMs: number): Promise<boolean> {
    const live = Number(await this.#run('novaGuardRenew', [claim.id, Math.ceil(ttlMs)])) === 1;
    const held = this.#claims.get(claim.id);
    if (!live) this.#claims.delete(claim.id);
    else if (held) held.expiresAt = this.#clock.now() + ttlMs;
    return live;
  }

  async bind(claim: LedgerClaim, serverId: string): Promise<void> {
    const held = this.#claims.get(claim.id);
    if (held) held.record = held.record.replace(/,[^,]*$/, `,${serverId.replace(/,/g, '')}`);
    await this.#run('novaGuardBind', [claim.id, serverId.replace(/,/g, '')]);
  }

  async release(claim: LedgerClaim, end: ClaimEnd): Promise<void> {
    this.#claims.delete(claim.id);
    await this.#run('novaGuardRelease', [claim.id, end, needsArgs('release', claim.needs).join(',')]);
  }

  async publishFreed(serverId: string): Promise<void> {
    this.#notifyFreed();
    // One script: the kept /limits reading from before this deletion stops being fresh, and every
    // holder wakes, so a woken waiter reads quota as Nova counts it after the deletion.
    await this.#conn.run('novaGuardFreed', [this.#keys.limits, this.#keys.freedChannel, JSON.stringify({ from: this.#instance, serverId })]);
  }

  onFreed(listener: () => void): () => void {
    const wrapped = (): void => listener();
    this.#freed.add(wrapped);
    return () => this.#freed.delete(wrapped);
  }

  /** Wait for a "kept reading refreshed" message or `ms`, whichever comes first. */
  #waitForReading(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        this.#clock.clearTimeout(timer);
        this.#limitsWaiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        done();
        reject(new AbortError(undefined, { cause: signal?.reason }));
      };
      const timer = this.#clock.setTimeout(done, ms);
      this.#limitsWaiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  async limits(read: (signal: AbortSignal | undefined) => Promise<LimitsReading>, signal: AbortSignal | undefined): Promise<LedgerLimits> {
    const lock = randomUUID();
    const { limits, limitsLock, limitsChannel } = this.#keys;
    const deadline = this.#clock.now() + this.#opts.limitsLockMs + this.#opts.commandTimeoutMs;
    for (;;) {
      throwIfAborted(signal);
      const [state, json, stamp, now] = (await this.#conn.run('novaGuardLimitsBegin', [limits, limitsLock, this.#opts.limitsMaxAgeMs, this.#opts.limitsLockMs, lock])) as [string, string, number, number];
      const kept = (): LedgerLimits => ({ ...decodeReading(json), stamp: Number(stamp), ageMs: Math.max(0, Number(now) - Number(stamp)), shared: true });
      if (state === 'fresh') return kept();
      if (state === 'lock' || this.#clock.now() >= deadline) {
        if (state !== 'lock' && json !== '') return kept();
        let reading: LimitsReading;
        try {
          // The caller may have given up while Redis answered: no read for it.
          throwIfAborted(signal);
          reading = await read(signal);
        } catch (error) {
          if (state === 'lock') await this.#conn.run('novaGuardLimitsUnlock', [limitsLock, lock]).catch(() => {});
          throw error;
        }
        const value = encodeReading(reading);
        // A reading kept for the others is a bonus; this caller's reading stands even if Redis fails now.
        await this.#conn.run('novaGuardLimitsStore', [limits, limitsLock, value, Number(now), lock, limitsChannel]).catch(() => {});
        return { absolute: reading.absolute, requestId: reading.requestId, stamp: Number(now), ageMs: 0, shared: false };
      }
      await this.#waitForReading(Math.min(250, Math.max(1, deadline - this.#clock.now())), signal);
    }
  }

  /**
   * Leaves every place, drops every claim this ledger holds, and closes its connections (always,
   * even when Redis does not answer or something on the way throws).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#clock.clearTimeout(this.#beat);
      const places = [...this.#places.keys()];
      const claims = [...this.#claims.keys()];
      await Promise.allSettled([...places.map((id) => this.#run('novaGuardLeave', [id])), ...claims.map((id) => this.#run('novaGuardRelease', [id, 'not-created', '0,0,0']))]);
    } finally {
      this.#places.clear();
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
