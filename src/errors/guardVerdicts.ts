/**
 * The quota guard's own verdicts: it waited too long for headroom ({@link QuotaWaitTimeoutError}),
 * or a server it created did not become usable ({@link ServerBuildError}).
 *
 * The headroom and needs they carry are described here structurally ({@link HeadroomSnapshot},
 * {@link QuotaNeedsSnapshot}), so that errors never import the guard (a higher layer); the guard's
 * `Headroom` and `QuotaNeeds` are assignable to them.
 *
 * @module
 */
import { NovaGuardError } from './base.js';
import { QuotaExceededError, type QuotaExceededInit } from './api.js';

/** One resource's numbers in a {@link HeadroomSnapshot} (the guard's `ResourceHeadroom`). */
export interface ResourceHeadroomSnapshot {
  /** The limit (`maxTotalCores`, ...): `Infinity` for -1, `undefined` when `/limits` did not say. */
  max: number | undefined;
  /** What Nova reports as used (`totalCoresUsed`, ...), `undefined` when `/limits` did not say. */
  used: number | undefined;
  /** Claimed by the guard's creates that Nova may not count yet. */
  inFlight: number;
  /** `max - used - inFlight`, clamped at 0; `Infinity` when unlimited; `undefined` when unknown. */
  headroom: number | undefined;
}

/** Headroom of `cores`, `ram` (MiB) and `instances` as the guard last computed it (the guard's `Headroom`). */
export interface HeadroomSnapshot {
  cores: ResourceHeadroomSnapshot;
  /** RAM, in MiB. */
  ram: ResourceHeadroomSnapshot;
  instances: ResourceHeadroomSnapshot;
  /** Where the numbers came from: `'limits'` (Nova's `GET /limits` absolute block). */
  source: string;
  /** `x-openstack-request-id` of the `/limits` response. */
  requestId: string | undefined;
  /** When the `/limits` response arrived (epoch ms, local clock). */
  readAtMs: number;
}

/** What a create needed (the guard's `QuotaNeeds`). */
export interface QuotaNeedsSnapshot {
  /** vCPUs. */
  cores: number;
  /** RAM in MiB. */
  ramMiB: number;
  /** Number of servers. */
  instances: number;
}

/** What {@link QuotaWaitTimeoutError} carries beyond {@link QuotaExceededInit}. */
export interface QuotaWaitTimeoutInit extends QuotaExceededInit {
  /** Wall-clock time spent waiting for headroom, in ms. */
  waitedMs: number;
  /** The guard's `maxWaitMs`. */
  maxWaitMs: number;
  /** `GET /limits` reads made while waiting. */
  limitsReads: number;
  /** The last headroom the guard computed (see `QuotaGuard.headroom()`). */
  headroom: HeadroomSnapshot;
  /** What the request needed. */
  needs: QuotaNeedsSnapshot;
}

/**
 * `QuotaGuard` waited `maxWaitMs` for quota headroom and the request still did not fit in what
 * `GET /limits` reports. Not permanent (`permanent` is false): the numbers may be stale or wrong
 * (Nova's usage counts can drift), so an operator may want to check Nova's usage. The message carries the last
 * numbers in Nova's `/limits` terms, e.g. `maxTotalCores=10 totalCoresUsed=8 requested=4 inFlight=0`.
 * `status` is 0 (the guard's verdict, not an HTTP answer); `requestId` is the last `/limits` read's.
 */
export class QuotaWaitTimeoutError extends QuotaExceededError {
  /** Wall-clock time spent waiting, in ms. */
  readonly waitedMs: number;
  /** The `maxWaitMs` that ran out, in ms. */
  readonly maxWaitMs: number;
  /** `GET /limits` reads made. */
  readonly limitsReads: number;
  /** The last headroom computed. */
  readonly headroom: HeadroomSnapshot;
  /** What the request needed. */
  readonly needs: QuotaNeedsSnapshot;
  constructor(init: QuotaWaitTimeoutInit) {
    super({ ...init, permanent: false });
    this.waitedMs = init.waitedMs;
    this.maxWaitMs = init.maxWaitMs;
    this.limitsReads = init.limitsReads;
    this.headroom = init.headroom;
    this.needs = init.needs;
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
    this.elapsedMs = init.elapsedMs;
    this.deleted = init.deleted;
    this.cleanupError = init.cleanupError;
  }
}
