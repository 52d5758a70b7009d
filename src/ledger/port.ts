/**
 * `QuotaLedger`: what the creates of a fleet share about one project's quota between the headroom
 * check and the moment Nova counts a new server.
 *
 * Nova stays the authority: a ledger only covers the gap between the guard's `GET /limits`
 * pre-check and Nova counting the server it creates (legacy counting: the instance row in its
 * cell; placement counting: its allocations). A ledger that is lost, slow or wrong degrades to
 * Nova's own quota check (the 403 path), never to a create that skips it.
 *
 * One ledger serves the guards of one project on one Nova endpoint (its {@link QuotaLedger.scope}:
 * a guard of another endpoint or project is refused with a `ValidationError` before any request,
 * since its claims would be subtracted from the wrong quota). Two kinds ship:
 * - the in-process ledger (the default): the guards of one process;
 * - `RedisQuotaLedger` (`nova-guard/redis`): every process on every host that shares a Redis.
 *
 * The protocol, as a guarded create uses it (every member is required: the guard never asks which
 * ledger it has, and never checks whether a member exists):
 * 1. `bindScope(scope)` before the guard's first request (a ledger of another endpoint or project
 *    throws).
 * 2. `acquire({ place, needs, ttlMs, joinIfShort }, read, signal)`: one admission against one
 *    `/limits` reading. The ledger reads through `read` or hands out a reading it keeps (shared
 *    reads: Nova's load does not grow with the number of waiting workers; its `stamp` says when it
 *    was sent, on the ledger's clock), then atomically drops expired claims, subtracts every claim
 *    Nova may not count in that reading (active claims, and claims released as `'counted'` at or
 *    after `stamp`) and the needs of every place queued ahead, and if `needs` still fits takes a
 *    claim: a lease of `ttlMs` with a fencing token. When short and the call holds no place, it
 *    queues the call (oldest first across all holders) and hands out the place. A kept reading (one
 *    not read for this call) that leaves the needs short only because of claims released as
 *    `'counted'` after it was sent, and that it may count, is not answered on: their servers may be
 *    in its usage already (Nova counted them before the guard saw it), so the ledger reads again,
 *    as for a stale reading. It may count a claim admitted before it was stored (its answer
 *    received), even after it was sent (Nova may take the POST in before it answers), and a claim
 *    of unknown admission (`claimAnyway`: its POST may be older than the claim); not one admitted
 *    after it was stored, whose POST went after Nova's answer: short with such claims subtracted,
 *    the kept reading answers "short" without a read. The rule never admits.
 * 3. While short: wait for a wake-up (`onWake(place)`: the head of the queue when a deletion is
 *    confirmed anywhere in the fleet, the next place when the head leaves; `onFreed` for every
 *    confirmed deletion) or the guard's backoff, then 2 again. `leave(place)` when the call ends,
 *    whatever its outcome.
 * 4. `renew(claim)` right before `POST /servers`, every time (the guard never POSTs without a
 *    renewal that answered `true`): `false` means the lease is lost and the guard must not POST
 *    (the fencing rule: Nova cannot check tokens); it goes back through admission. This renewal is
 *    the fencing point: from its answer on, the claim is *posting* (its POST may be in flight).
 * 5. `bind(claim, serverId)` after the 202, `release(claim, 'counted')` once Nova counts the
 *    server (past scheduling: `task_state` beyond `scheduling`, or it left BUILD),
 *    `release(claim, 'not-created')` when nothing was created or the guard deleted it again.
 *
 * **A store that lost its state** (Redis restarted empty; a holder away past its claims' lease) holds
 * no claim it can vouch for. A ledger that writes back what its holder holds (the Redis ledger,
 * after a reconnect) restores without an admission check only the claims that are *posting*:
 * renewed since their admission (step 4), taken with `claimAnyway`, or bound (step 5): their
 * server may exist or be on its way, and no listing can show a POST in flight. A claim only
 * admitted is not restored: others may have admitted on a count without it, so its `renew` answers
 * `false` and its create goes back through admission. A ledger whose store cannot lose its state by
 * itself (in-process, SQLite) restores nothing and keeps the rule trivially. The safe behaviour
 * needs no option (`docs/fleet-ledger.md`, "What remains").
 *
 * Beside it: `peek` (a reading and the claims it would subtract, claiming nothing: the guard's
 * `headroom()`), `claimAnyway` (the guard's `onStaleLimits: 'attempt'`), `publishFreed` (a deletion
 * confirmed by Nova's 404), and what the guard's outage policy asks of every backend: `probe`,
 * `everReached` and `callBudgetMs`.
 *
 * Time: the guard bounds every call of the wait by `ledgerTimeoutMs` or, when closer, what is left
 * of the call's `maxWaitMs`, and by the caller's signal; it sends `leave`, `release` and `bind` at
 * once and lets them finish in the background (bounded by `ledgerTimeoutMs`), so a hung ledger never
 * delays a settle. What does not get through must expire: claims by their lease, places by the
 * ledger's own place lease. The `read` handed to `acquire` or `peek` refuses (with an `AbortError`, before any
 * request) once the guard has moved past that reading: a ledger must not hold a lock for a read
 * that refused (free it at once).
 *
 * Ported from the claim-before-launch design of Zuul nodepool (`QuotaInformation`,
 * `estimatedNodepoolQuotaUsed`: a node record is written before the server is launched), with
 * leases and fencing tokens in place of ZooKeeper session locks.
 *
 * @module
 */
import type { AbsoluteLimits, ResourceAmounts } from '../core/types.js';
import type { LedgerScope } from '../core/endpoint.js';

export type { LedgerScope } from '../core/endpoint.js';

/** A place in the fleet's queue for headroom. Opaque to the guard. */
export interface LedgerPlace {
  /** Unique id of the place (the ledger's). */
  readonly id: string;
  /** What the call waits for. */
  readonly needs: ResourceAmounts;
}

/** A claim on the quota: a lease with a fencing token. */
export interface LedgerClaim {
  /** Unique id of the claim (written into the server's metadata as `nova-guard-claim-id`). */
  readonly id: string;
  /**
   * Fencing token: strictly increasing across the ledger's scope (all holders). Written into the
   * server's metadata (`nova-guard-token`) so the audit and the reaper can tell a late create from
   * an expired claim.
   */
  readonly token: number;
  /** What the claim holds. */
  readonly needs: ResourceAmounts;
  /** Who holds it (written into the server's metadata as `nova-guard-holder`). */
  readonly holder: string;
}

/** A `GET /limits` reading as a ledger hands it out. */
export interface LedgerLimits {
  /** `limits.absolute` of Nova's answer (`{}` when the headroom is unknown). */
  readonly absolute: AbsoluteLimits;
  /** `x-openstack-request-id` of the answer that made the reading. */
  readonly requestId: string | undefined;
  /** When the reading was sent, on the ledger's clock (compare only with other stamps of it). */
  readonly stamp: number;
  /** Age of the reading when handed out, in ms (0 for a reading made for this call). */
  readonly ageMs: number;
  /** True when another call or holder made the reading. */
  readonly shared: boolean;
}

/** What a `/limits` read hands a ledger: `limits.absolute` and the answer's `x-openstack-request-id`. */
export interface LimitsReading {
  readonly absolute: AbsoluteLimits;
  readonly requestId: string | undefined;
}

/** Headroom per resource before any claim: a number, or `undefined` when unlimited or unknown. */
export type RawHeadroom = Readonly<Partial<ResourceAmounts>>;

/**
 * What a backend's own `admit` (the check and claim of `acquire`, on a reading already made) is
 * asked. Not a member of the port: the in-process, SQLite and Redis ledgers have it as a method of
 * their own, and the conformance suite calls it.
 */
export interface AdmitRequest {
  /** The caller's place in the queue; absent for a call that never queued (first try). */
  readonly place: LedgerPlace | undefined;
  readonly needs: ResourceAmounts;
  /** Headroom from the reading, before claims (see {@link RawHeadroom}). */
  readonly headroom: RawHeadroom;
  /** `stamp` of the reading the headroom comes from. */
  readonly stamp: number;
  /** Lease length in ms. */
  readonly ttlMs: number;
}

/**
 * An admission (`acquire`'s answer without its reading and place). `inFlight` is what the ledger subtracted for claims; `ahead` for earlier places;
 * `holders` (optional) the number of live holders sharing the ledger's scope at that moment
 * (information only; who they are: {@link QuotaLedger.members}).
 */
export type Admission =
  | { readonly admitted: true; readonly claim: LedgerClaim; readonly inFlight: ResourceAmounts; readonly ahead: ResourceAmounts; readonly holders?: number }
  | { readonly admitted: false; readonly inFlight: ResourceAmounts; readonly ahead: ResourceAmounts; readonly holders?: number };

/**
 * A server of the project that Nova lists but does not count yet (status BUILD, `task_state`
 * `scheduling` or null and no host: only a build request under legacy counting, see
 * `isPastScheduling`), as a listing shows it: what it will hold once Nova counts it.
 */
export interface UncountedServer {
  /** The server's id. */
  readonly serverId: string;
  /** Its metadata `nova-guard-claim-id` (the claim a guard created it under), when it has one. */
  readonly claimId: string | undefined;
  /** What it will hold: its flavor's vcpus and RAM (MiB), 1 instance (an unknown size counts as 0). */
  readonly needs: ResourceAmounts;
}

/**
 * A listing of the project's servers Nova does not count yet (one `GET /servers/detail`, see
 * {@link UncountedServer}), as the guard hands it to `acquire`. It may refuse with an `AbortError`
 * (the guard moved on) or fail as a Nova request fails.
 */
export type UncountedRead = (signal: AbortSignal | undefined) => Promise<readonly UncountedServer[]>;

/** What `acquire` is asked: one admission together with its `/limits` reading. */
export interface AcquireRequest {
  /** The caller's place in the queue; absent for a call that never queued. */
  readonly place: LedgerPlace | undefined;
  readonly needs: ResourceAmounts;
  /** Lease length in ms of the claim taken. */
  readonly ttlMs: number;
  /** When the needs do not fit and `place` is absent: take a place in the queue (the answer's `place`). */
  readonly joinIfShort: boolean;
  /**
   * In ms: a ledger that keeps a shared reading may answer "not admitted" on a kept reading up to
   * this old, without a fresh `/limits` read, when that reading leaves the needs short and no
   * deletion was confirmed after it was sent (a reading can only overstate the usage then, except for
   * quota freed outside the ledger, which the caller learns of within this time). An admission is
   * still decided on a fresh reading only. The guard passes it on a waiting call's re-checks (twice
   * its `maxDelayMs`); absent or 0: every answer on a fresh reading. Ledgers without a kept reading
   * ignore it. @default undefined
   */
  readonly staleShortMs?: number | undefined;
  /**
   * The `stamp` of a reading Nova's own quota check refuted for this call: a create admitted on it
   * was answered a quota 403 (or failed conductor's quota recheck). A ledger that keeps a shared
   * reading decides this admission on a reading sent after it (it reads `/limits` again rather than
   * hand out the same reading until `limitsMaxAgeMs` ages it out: a kept reading can miss what
   * changed outside the ledger, a server another tool created). Ledgers without a kept reading
   * ignore it. @default undefined
   */
  readonly refutedStamp?: number | undefined;
}

/**
 * The order number below which no kept reading is fresh for `request` (its `refutedStamp`, a reading
 * Nova's quota check refuted for the call); -1 when it names none. A ledger with a kept reading
 * raises its own "too old" order number to at least this.
 */
export function refutedOrder(request: AcquireRequest): number {
  const r = request.refutedStamp;
  return typeof r === 'number' && Number.isFinite(r) ? r : -1;
}

/**
 * `acquire`'s answer: the admission, the reading it was decided on (raw, before claims), and the
 * place taken when `joinIfShort` asked for one.
 */
export type Acquisition = Admission & { readonly reading: LedgerLimits; readonly place?: LedgerPlace | undefined };

/** How a claim ends: see the module description. */
export type ClaimEnd = 'not-created' | 'counted';

/**
 * True when `error` (a rejection of a ledger call) says the store cannot be reached at all: a
 * refused connection, an unknown host, refused credentials. A ledger marks such an error with
 * `ledgerDown: true` (`RedisLedgerError` does); the guard then skips the ledger at once instead of
 * waiting out time limits, and probes it until it is back.
 */
export function isLedgerDown(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { ledgerDown?: unknown }).ledgerDown === true;
}

/**
 * The code of an {@link isLedgerDown} error that says why (its `downCode`, as `RedisLedgerError`
 * gives it: `ENOTFOUND` for a host name that does not resolve, `ECONNREFUSED`...), or `undefined`.
 */
export function ledgerDownCode(error: unknown): string | undefined {
  const code = isLedgerDown(error) ? (error as { downCode?: unknown }).downCode : undefined;
  return typeof code === 'string' ? code : undefined;
}

/**
 * What the caller of `publishFreed` knows about a deletion it can credit to the kept reading: the
 * server was created under `claimId` (released as `'counted'` on a look that showed Nova counts it;
 * the claim's needs are exactly what Nova counts for it, its flavor's), and `keptSeq` was the newest
 * kept reading the caller knew stored (`keptSeen()`) right before it sent the DELETE, which Nova
 * accepted (204: the server still existed; a 404 means someone else deleted it, maybe before that
 * reading). A reading stored before the DELETE was sent and sent after the claim's `'counted'` release
 * counted the server; once Nova's 404 confirms the deletion, its usage less the claim's needs is still
 * a true upper bound of what the fleet holds (creates since are claims; other deletions only free
 * more). The ledger checks both orders itself, atomically, and credits a claim once per reading.
 */
export interface FreedCredit {
  /** The id of the claim the server was created under (`LedgerClaim.id`). */
  readonly claimId: string;
  /** `keptSeen()` taken right before the DELETE was sent. */
  readonly keptSeq: number;
}

/** What `peek` hands out: a reading, and what an admission on it would subtract for claims. */
export interface LedgerPeek {
  /** The reading, as `acquire` would decide on it. */
  readonly reading: LedgerLimits;
  /** What an admission on `reading` would subtract for claims (not places). */
  readonly inFlight: ResourceAmounts;
}

/**
 * A `/limits` read as the guard hands it to a ledger. It may refuse with an `AbortError` (the guard
 * moved on). `othersRead`, when the guard gives it: see {@link waitForOthersRead}.
 */
export type LimitsRead = ((signal: AbortSignal | undefined) => Promise<LimitsReading>) & {
  readonly othersRead?: <T>(wait: Promise<T>) => Promise<T>;
};

/**
 * A ledger that waits for ANOTHER holder's `/limits` read (a kept reading being refreshed, a vet's
 * listing) awaits that wait through this function, never bare: the wait is Nova's time, not the
 * ledger's, and the guard's ledger time limit (`ledgerTimeoutMs`) pauses during it as it pauses during
 * the caller's own `read` (the caller's `maxWaitMs` still bounds it, as it bounds the caller's own
 * read: at least `finalReadMs`, then the call ends with `NovaNetworkError`, `timedOut`). Without it a slow Nova
 * (a read over the time limit) would make every waiting holder take the ledger for failed and read
 * `/limits` itself: more requests to a Nova already slow. The ledger must bound the wait itself (the
 * Redis and SQLite ledgers: `limitsLockMs + commandTimeoutMs`). A `read` made outside the guard (a
 * test, a tool) has no `othersRead`: the wait is awaited as it is.
 * @returns what `wait` resolves; rejects as `wait` does (or as the guard's deadline ends it).
 */
export function waitForOthersRead<T>(read: LimitsRead, wait: Promise<T>): Promise<T> {
  return read.othersRead === undefined ? wait : read.othersRead(wait);
}

/**
 * The quota a fleet shares: the port every ledger (in-process, SQLite, Redis, a custom one)
 * implements, every member of it. Every method may reject (a lost store); see the module
 * description.
 */
export interface QuotaLedger {
  /** `'in-process'`, `'redis'`, ...: for logs and `stats`. */
  readonly kind: string;
  /** The holder name this ledger writes into claims (host and process by default). */
  readonly holder: string;
  /**
   * How long the store keeps this holder's places and its entry among the live holders after its
   * last call, in ms (Redis and SQLite: their `placeTtlMs`; 0 for a ledger with no store apart from
   * its process). With the claims' lease it bounds how long anything of this process can still
   * count in the store once it stops reaching it (`src/guard/degradedShare.ts`).
   */
  readonly placeTtlMs: number;
  /**
   * The holder names of the live holders of the ledger's scope, as this ledger object last saw them
   * (every answer of its store that says refreshes it, the heartbeat's included): one entry per live
   * ledger object, so a name is there twice when two ledger objects share it; `[holder]` for a
   * ledger of one process; empty before the store first answered. Synchronous, no request: while
   * the store is out of reach it is the fleet as last seen, from which the guard counts hosts for
   * degraded mode (`src/guard/degradedShare.ts`).
   */
  members(): readonly string[];
  /**
   * The endpoint and project this ledger serves (endpoint normalised: `normaliseEndpoint`);
   * `undefined` until a ledger made without one is bound (`bindScope`).
   */
  readonly scope: LedgerScope | undefined;
  /**
   * A guard of `scope` is about to use the ledger. A ledger without a scope yet takes this one; a
   * ledger of another scope throws. The guard calls it before its first request.
   * @throws `ValidationError` naming both scopes when `scope` is another endpoint or project.
   */
  bindScope(scope: LedgerScope): void;
  /**
   * Admit or queue, against one reading (see the module description): the reading (fresh through
   * `read`, or one the ledger keeps), the check and claim, and (when short, with no place and
   * `joinIfShort`) a place in the queue, in as few round trips as the store allows. The check and
   * claim are atomic with the claims and places of every holder.
   * `uncounted` (optional argument): a listing of the servers Nova does not count yet, for a ledger
   * that cannot tell a new store from one that lost its claims (Redis restarted empty): it lists
   * once before the store's first admission and holds those servers as claims (`docs/fleet-ledger.md`,
   * "A process whose first contact is an emptied store"). A ledger that can tell ignores it. Nova's
   * time to answer it is not counted in the ledger's time limit, and its errors are Nova's.
   * @throws what `read` or `uncounted` throws (a refresh lock is given back first); `AbortError`
   * when `signal` aborts.
   */
  acquire(request: AcquireRequest, read: LimitsRead, signal: AbortSignal | undefined, uncounted?: UncountedRead): Promise<Acquisition>;
  /**
   * A reading (as `acquire` would take it) and what an admission on it would subtract for claims,
   * claiming nothing and joining nothing: the guard's `headroom()` reports it.
   * @throws what `read` throws; `AbortError` when `signal` aborts.
   */
  peek(read: LimitsRead, signal: AbortSignal | undefined): Promise<LedgerPeek>;
  /** Leave the queue (idempotent). */
  leave(place: LedgerPlace): Promise<void>;
  /**
   * Claim without a check (the guard's `onStaleLimits: 'attempt'`, and a claim re-taken while its
   * create is in flight). Posting from the start: a store that lost it gets it back from its
   * holder (see the module description).
   */
  claimAnyway(needs: ResourceAmounts, ttlMs: number): Promise<LedgerClaim>;
  /**
   * Extend the lease; `false` when it is lost (expired, unknown to the ledger, or only admitted
   * when the store lost its state: not restored by its holder's write-back). A renewal that answers
   * `true` makes the claim *posting*: the guard renews right before every POST, so from then on the
   * POST may be in flight, and a store that loses the claim gets it back from its holder (see the
   * module description).
   */
  renew(claim: LedgerClaim, ttlMs: number): Promise<boolean>;
  /** Note the server the claim's create made (a bound claim is posting, see `renew`). */
  bind(claim: LedgerClaim, serverId: string): Promise<void>;
  /** End a claim (idempotent). */
  release(claim: LedgerClaim, end: ClaimEnd): Promise<void>;
  /**
   * Tell every holder that quota was freed (a deletion confirmed by Nova's 404). Without `credit`,
   * or when the credit does not hold, the kept reading (a ledger that keeps one) stops being fresh:
   * it may count the server, and the next admission reads `/limits` again. With a `credit` that holds
   * (see `FreedCredit`: the kept reading is still the one seen before the DELETE was sent, and
   * the claim was released as `'counted'` before that reading was sent), the ledger subtracts the
   * claim's needs from the kept reading's usage instead, once per claim and reading, and the reading
   * stays fresh: the freed quota is admitted on without a read. A ledger without a kept reading ignores
   * `credit`.
   */
  publishFreed(serverId: string, credit?: FreedCredit): Promise<void>;
  /**
   * The order number (`LedgerLimits.stamp`) of the newest kept reading this ledger object knows was
   * stored, synchronously, with no request (its own answers, and the store's "reading refreshed" news:
   * a reading heard of was answered before now); `undefined` for a ledger that keeps no reading, or
   * before it saw one. The guard takes it right before a DELETE of a server it created is sent, for
   * `FreedCredit.keptSeq`.
   */
  keptSeen(): number | undefined;
  /** Listen for freed quota, from this holder or any other; returns the unsubscribe function. */
  onFreed(listener: () => void): () => void;
  /**
   * Listen for the wake-ups addressed to `place` (one of this ledger's places, held until
   * `leave`); returns the unsubscribe function. The ledger calls `listener` when a deletion is
   * confirmed (`publishFreed`, any holder) while `place` is the head of the queue, and when the
   * place becomes the head because the one ahead left (admitted, or gave up). Under the queue's
   * first-come-first-served rule no place behind a head that does not fit can be admitted, so the
   * head's wake-up loses no admission. A wake-up for a place with no listener yet is kept and
   * delivered when one is added. (`PlaceWakes` does the bookkeeping for the places of one object.)
   */
  onWake(place: LedgerPlace, listener: () => void): () => void;
  /**
   * How long one call of this ledger may take now, in ms, from the round trips it has measured;
   * `undefined` when it has none to measure (a local ledger) or has not measured any yet. The guard
   * bounds a ledger call by `max(ledgerTimeoutMs, callBudgetMs())`, so a healthy store far away is
   * not taken for a dead one.
   */
  callBudgetMs(): number | undefined;
  /**
   * The cheapest call that proves the store answers (Redis: `PING`; a file: a read of it; the
   * in-process ledger: resolves at once). A guard that found the ledger down skips it and probes
   * with this until it answers again: only a probe ends an outage.
   * @throws what the store throws while it cannot be reached.
   */
  probe(): Promise<void>;
  /**
   * True once this ledger object has reached its store (Redis: a connection made; a file: opened;
   * the in-process ledger: always), even when no call of this process has had an answer yet. A
   * guard whose ledger has reached the store (or answered an admission) takes a later failure for
   * an outage of a ledger the fleet uses: its creates wait for the ledger while a claim of it may
   * still be live there, then admit within the host's share (`src/guard/degradedLedger.ts`); one that never reached it (the store absent from the start) waits
   * a few seconds for it, then works on its own with Nova's check.
   */
  everReached(): boolean;
  /** Release what this holder owns in the store and close connections. */
  close(): Promise<void>;
}
