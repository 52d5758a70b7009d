/**
 * The quota guard's own verdicts. They are not HTTP answers, so they derive from
 * {@link NovaGuardError} and not from `NovaApiError` (they have no `status`):
 * - {@link QuotaWaitTimeoutError}: `maxWaitMs` ran out while `GET /limits` said the create does not fit;
 * - {@link ServerBuildError}: a server the guard created did not become usable;
 * - {@link CreateOutcomeUnknownError}: a create's answer was lost and the search for it did not settle;
 * - {@link QuotaNeverFitsError}: the request needs more than a limit itself (0 POSTs);
 * - {@link QuotaBuildFaultError}: a created server went to ERROR with a quota fault and was deleted.
 *
 * @module
 */
import { NovaGuardError } from '../errors/base.js';
import type { QuotaResource } from '../errors/quotaMessage.js';
import type { QuotaFinding, ResourceAmounts } from '../core/types.js';
import type { ShortfallCause } from './explain.js';
import { describeShortfalls, shortfallResources, type Headroom, type Shortfall } from '../ledger/index.js';

/** What {@link QuotaWaitTimeoutError} carries. */
export interface QuotaWaitTimeoutInit {
  /** The verdict in words, with the last numbers in Nova's `/limits` terms. */
  message: string;
  /** `x-openstack-request-id` of the last `GET /limits` read. */
  requestId?: string | undefined;
  /** The resources that did not fit: name (Nova's: `cores`, `ram`, `instances`), requested, used, allowed (the limit). */
  resources: QuotaResource[];
  /** Wall-clock time spent waiting for headroom, in ms. */
  waitedMs: number;
  /** The guard's `maxWaitMs`. */
  maxWaitMs: number;
  /** `GET /limits` reads made while waiting. */
  limitsReads: number;
  /** The last headroom the guard computed (see `QuotaGuard.headroom()`). */
  headroom: Headroom;
  /** What the request needed. */
  needs: ResourceAmounts;
  /** Nova's message of the last quota error answered to this call (a quota 403 before the wait), if any. */
  lastQuotaMessage?: string | undefined;
  /** What the check of the shortfall found (option `explainShortfall`), if it ran and answered. */
  shortfallCause?: ShortfallCause | undefined;
  /** With `shortfallCause: 'wrong-books'`: the finding. */
  finding?: QuotaFinding | undefined;
}

/**
 * `QuotaGuard` waited `maxWaitMs` for quota headroom and the request still did not fit in what
 * `GET /limits` reports. Not permanent (`permanent` is false): the numbers may be stale or wrong
 * (docs/field-cases.md, "Stale or wrong usage in /limits"), so an operator may want to check Nova's
 * usage. The message carries the last numbers in Nova's `/limits` terms, e.g.
 * `maxTotalCores=10 totalCoresUsed=8 requested=4 inFlight=0`.
 *
 * Also thrown when the fleet's quota ledger kept the create waiting: "No quota admission after
 * waiting N ms (maxWaitMs M): the quota ledger (redis) is out of reach, ..." (a process that has
 * used the ledger admits nothing without it while other hosts may still admit on it), or "... the
 * reading and the claims leave room, but the quota ledger (redis) admitted nothing ..." (it settles
 * after a holder reconnected); `resources` is then the resources the create needs, or empty.
 *
 * The guard's verdict, not an HTTP answer: a {@link NovaGuardError}, not a `NovaApiError` or
 * `QuotaExceededError` (it has no `status`).
 */
export class QuotaWaitTimeoutError extends NovaGuardError {
  /** `x-openstack-request-id` of the last `GET /limits` read. */
  readonly requestId: string | undefined;
  /** The resources that did not fit, as in a `QuotaExceededError`. */
  readonly resources: QuotaResource[];
  /** Always false: waiting longer (or correcting Nova's usage) may help. */
  readonly permanent = false;
  /** Wall-clock time spent waiting, in ms. */
  readonly waitedMs: number;
  /** The `maxWaitMs` that ran out, in ms. */
  readonly maxWaitMs: number;
  /** `GET /limits` reads made. */
  readonly limitsReads: number;
  /** The last headroom computed. */
  readonly headroom: Headroom;
  /** What the request needed. */
  readonly needs: ResourceAmounts;
  /** Nova's message of the last quota error answered to this call, if any. */
  readonly lastQuotaMessage: string | undefined;
  /**
   * Why the create did not fit, from one listing of the project's servers compared with `/limits`
   * (option `explainShortfall`): `'busy-fleet'` (the servers hold it: wait, or free servers) or
   * `'wrong-books'` (Nova counts quota no live server explains: see {@link finding}); undefined when
   * the check is off or failed.
   */
  readonly shortfallCause: ShortfallCause | undefined;
  /** With `'wrong-books'`: the finding (`stale-usage`, `stuck-deleting`, `down-cell`), shaped as the audit's, with what the project and an operator can do. */
  readonly finding: QuotaFinding | undefined;
  /** @param init - See `QuotaWaitTimeoutInit`. */
  constructor(init: QuotaWaitTimeoutInit) {
    super(init.message);
    this.requestId = init.requestId;
    this.resources = init.resources;
    this.waitedMs = init.waitedMs;
    this.maxWaitMs = init.maxWaitMs;
    this.limitsReads = init.limitsReads;
    this.headroom = init.headroom;
    this.needs = init.needs;
    this.lastQuotaMessage = init.lastQuotaMessage;
    this.shortfallCause = init.shortfallCause;
    this.finding = init.finding;
  }
}

/** How a server created by `QuotaGuard` failed to become usable. */
export type ServerBuildFailure = 'error' | 'timeout' | 'gone';

/** Options of {@link ServerBuildError}. */
export interface ServerBuildInit {
  serverId: string;
  /** `'error'`: status ERROR; `'timeout'`: still BUILD after `activeTimeoutMs`; `'gone'`: 404 or DELETED while building. */
  reason: ServerBuildFailure;
  /** Last status seen. */
  lastStatus: string | undefined;
  /** Nova's `fault.message` of the server, if any. */
  faultMessage?: string | undefined;
  /** Nova's `fault.code` of the server, if any. */
  faultCode?: number | undefined;
  /** Time spent waiting for the server to leave BUILD, in ms. */
  elapsedMs: number;
  /** True when the guard deleted the server (and waited for the deletion); false when that failed. */
  deleted: boolean;
  /** Why the deletion failed, when `deleted` is false. */
  cleanupError?: Error | undefined;
  cause?: unknown;
}

/**
 * A server that `QuotaGuard.createServer` created did not become usable: it went to ERROR with a
 * fault that is not a quota fault, stayed in BUILD past `activeTimeoutMs`, or disappeared. The guard
 * has already deleted it (with wait) unless `deleted` is false, in which case `cleanupError` says
 * why and the server is left in the project.
 */
export class ServerBuildError extends NovaGuardError {
  readonly serverId: string;
  readonly reason: ServerBuildFailure;
  readonly lastStatus: string | undefined;
  /** Nova's `fault.message`. */
  readonly faultMessage: string | undefined;
  /** Nova's `fault.code`. */
  readonly faultCode: number | undefined;
  readonly elapsedMs: number;
  /** True when the guard deleted the server. */
  readonly deleted: boolean;
  /** Why the guard could not delete it. */
  readonly cleanupError: Error | undefined;
  /**
   * True when Nova's fault is about capacity, not quota (`No valid host was found`: the scheduler
   * found no host; the server, in cell0, held an instance but no cores or RAM). Waiting for quota
   * cannot help; more capacity, another flavor or a later try can.
   */
  readonly capacity: boolean;
  /** @param init - See `ServerBuildInit`. */
  constructor(init: ServerBuildInit) {
    const what =
      init.reason === 'error'
        ? `went to ERROR${init.faultMessage ? `: ${init.faultMessage}` : ' (no fault message)'}`
        : init.reason === 'timeout'
          ? `was still ${init.lastStatus ?? 'BUILD'} after ${init.elapsedMs} ms`
          : 'disappeared while building';
    const cleanup = init.deleted
      ? ' (the server was deleted)'
      : `; the server could NOT be deleted and is left behind: ${init.cleanupError?.message ?? 'unknown error'}`;
    super(`Server ${init.serverId} ${what}${cleanup}`, { cause: init.cause });
    this.serverId = init.serverId;
    this.reason = init.reason;
    this.lastStatus = init.lastStatus;
    this.faultMessage = init.faultMessage;
    this.faultCode = init.faultCode;
    this.capacity = init.reason === 'error' && /No valid host was found|NoValidHost|Exceeded maximum number of retries/i.test(init.faultMessage ?? '');
    this.elapsedMs = init.elapsedMs;
    this.deleted = init.deleted;
    this.cleanupError = init.cleanupError;
  }
}

/** What {@link CreateOutcomeUnknownError} carries. */
export interface CreateOutcomeUnknownInit {
  /** The value of the `nova-guard-claim` metadata the POST carried. */
  claimTag: string;
  /** The server name the POST asked for. */
  serverName: string;
  /** POSTs of this call whose outcome was unknown. */
  posts: number;
  /** Searches made after the last of them. */
  searches: number;
  /** The error of the POST whose answer was lost or garbled. */
  cause: unknown;
  /** The error of the last failed search, if any. */
  lastSearchError?: Error | undefined;
}

/**
 * `QuotaGuard.createServer` sent `POST /servers`, the answer was lost or garbled (reset, request
 * timeout, 5xx, a 2xx without `server`, a proxy's 429), and its searches for the server (by name,
 * filtered by the `nova-guard-claim` metadata) neither found it nor made sure that nothing was
 * created. The server may exist. Find it by its tag: `GET /servers/detail?name=^<name>$` and keep
 * the one whose `metadata['nova-guard-claim']` is {@link claimTag}, or let the reaper do it
 * (`reapServers({ metadataKey: 'nova-guard-claim', metadataValue: claimTag })`).
 */
export class CreateOutcomeUnknownError extends NovaGuardError {
  /** The `nova-guard-claim` metadata value of the server that may exist. */
  readonly claimTag: string;
  /** The server name the POST asked for (`name` is the error's class name, as for every error). */
  readonly serverName: string;
  /** POSTs whose outcome was unknown. */
  readonly posts: number;
  /** Searches after the last one. */
  readonly searches: number;
  /** The error of the last failed search, if any. */
  readonly lastSearchError: Error | undefined;
  /** @param init - See `CreateOutcomeUnknownInit`. */
  constructor(init: CreateOutcomeUnknownInit) {
    const why = (init.cause as Error | undefined)?.message ?? String(init.cause);
    super(
      `The outcome of creating server ${JSON.stringify(init.serverName)} is unknown (${why}); ${init.searches} searches did not settle it. ` +
        `A server may exist: look for metadata nova-guard-claim=${init.claimTag}`,
      { cause: init.cause },
    );
    this.claimTag = init.claimTag;
    this.serverName = init.serverName;
    this.posts = init.posts;
    this.searches = init.searches;
    this.lastSearchError = init.lastSearchError;
  }
}

/** What {@link QuotaNeverFitsError} carries. */
export interface QuotaNeverFitsInit {
  /** `x-openstack-request-id` of the `GET /limits` read that showed it. */
  requestId?: string | undefined;
  /** Each resource whose need is above its limit: its numbers (`max` the limit, `used`, `inFlight`, `needed`). */
  shortfalls: Shortfall[];
  /** What the request needed. */
  needs: ResourceAmounts;
  /** The headroom computed from that read. */
  headroom: Headroom;
}

/**
 * `QuotaGuard` found, before any POST, that the request needs more of a resource than its limit
 * itself (`needed > max` in `GET /limits`, e.g. 12 cores against `maxTotalCores=10`): no amount of
 * waiting helps (nodepool's `hasProviderQuota`). 0 POSTs were made. The message carries the numbers
 * in Nova's `/limits` terms.
 *
 * The guard's verdict, not an HTTP answer: a {@link NovaGuardError}, not a `NovaApiError` or
 * `QuotaExceededError` (it has no `status`). A quota 403 from Nova itself for such a request stays a
 * `QuotaExceededError` with `permanent: true`.
 */
export class QuotaNeverFitsError extends NovaGuardError {
  /** `x-openstack-request-id` of the `GET /limits` read. */
  readonly requestId: string | undefined;
  /** The resources over their limit, as in a `QuotaExceededError`: name (`cores`, `ram`, `instances`), requested, used, allowed (the limit; -1 unlimited). */
  readonly resources: QuotaResource[];
  /** Always true: waiting cannot help; a smaller request or a higher limit can. */
  readonly permanent = true;
  /** The shortfalls with their numbers. */
  readonly shortfalls: Shortfall[];
  /** What the request needed. */
  readonly needs: ResourceAmounts;
  /** The headroom computed from the read. */
  readonly headroom: Headroom;
  /** @param init - See `QuotaNeverFitsInit`. */
  constructor(init: QuotaNeverFitsInit) {
    super(`Quota can never fit this request (needed above the limit itself): ${describeShortfalls(init.shortfalls)}`);
    this.requestId = init.requestId;
    this.shortfalls = init.shortfalls;
    this.resources = shortfallResources(init.shortfalls);
    this.needs = init.needs;
    this.headroom = init.headroom;
  }
}

/** What {@link QuotaBuildFaultError} carries. */
export interface QuotaBuildFaultInit {
  /** The server that went to ERROR (already deleted). */
  serverId: string;
  /** Nova's `fault.message` of the server. */
  faultMessage: string;
  /** The resources parsed from the fault message. */
  resources: QuotaResource[];
  /** True when the fault says a request is above a limit itself. */
  permanent: boolean;
  /** The {@link ServerBuildError} of the server (its status, fault, elapsed time, `deleted: true`). */
  cause: ServerBuildError;
}

/**
 * A server `QuotaGuard.createServer` created went to ERROR with a quota fault (Nova's recheck after
 * the POST was accepted: `Quota exceeded for ...`, or a build aborted on another quota) and the
 * guard deleted it (with wait). Retried by the guard unless `permanent`, as reason
 * `'late-quota-fault'`; thrown when no retry is left. `cause` is the {@link ServerBuildError}.
 *
 * The guard's verdict on a server's fault, not an HTTP answer: a {@link NovaGuardError}, not a
 * `NovaApiError` or `QuotaExceededError` (it has no `status`).
 */
export class QuotaBuildFaultError extends NovaGuardError {
  /** The deleted server. */
  readonly serverId: string;
  /** Nova's `fault.message`. */
  readonly faultMessage: string;
  /** Parsed resources of the fault: name, requested, used, allowed. */
  readonly resources: QuotaResource[];
  /** True when the fault says the request is above a limit itself. */
  readonly permanent: boolean;
  /** @param init - See `QuotaBuildFaultInit`. */
  constructor(init: QuotaBuildFaultInit) {
    super(`Server ${init.serverId} went to ERROR with a quota fault and was deleted: ${init.faultMessage}`, { cause: init.cause });
    this.serverId = init.serverId;
    this.faultMessage = init.faultMessage;
    this.resources = init.resources;
    this.permanent = init.permanent;
  }
}
