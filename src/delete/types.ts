/**
 * The shapes of the delete capability: options, results and outcomes of `waitForDelete`,
 * `deleteServer` and `deleteServers`, and the narrow view of the Nova client the engine needs.
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { Server } from '../core/types.js';
import type { FailureSummary } from '../errors/index.js';
import type { DeleteFailureNotice } from './failureLog.js';

export type { DeleteFailureNotice } from './failureLog.js';

/** Options of one request the delete engine sends (a subset of the client's `RequestOptions`). */
export interface EngineRequestOptions {
  signal?: AbortSignal | undefined;
  requestTimeoutMs?: number | undefined;
  retry?: { retries?: number; maxRetryTimeMs?: number } | false | undefined;
  onAttempt?: ((attempt: number) => void) | undefined;
  onFailedAttempt?: ((error: unknown, attempt: number) => void) | undefined;
  microversion?: string | undefined;
}

/** A raw answer: status, body, request id and Nova's `Date` header (epoch ms). */
export interface EngineResponse {
  status: number;
  data: unknown;
  requestId: string | undefined;
  serverDateMs: number | undefined;
}

/**
 * What the delete engine needs from a Nova client. `NovaClient` is one; tests may pass any object of
 * this shape.
 */
export interface ServerApi {
  /** The clock of every timer and "now" of the engine. */
  readonly clock: Clock;
  /** The logger. */
  readonly logger: Logger;
  /** Default per-request time limit, in ms. */
  readonly requestTimeoutMs: number;
  /** The client's compute microversion (`"2.<minor>"` or `"latest"`). */
  readonly microversion: string;
  /**
   * The client's project id, when known: a listing with a server of another project (`tenant_id`)
   * is a failed listing, never evidence of absence.
   */
  readonly projectId?: string | undefined;
  /** `GET /servers/{id}` (Nova API reference, "Show Server Details"). */
  getServer(id: string, options?: EngineRequestOptions): Promise<Server>;
  /** `GET /servers/detail` or, with `brief`, `GET /servers`, every page, with the first page's `Date` header. */
  listServersWithMeta(
    query: Record<string, string | number | boolean | undefined>,
    options?: EngineRequestOptions & { brief?: boolean },
  ): Promise<{ servers: Server[]; serverDateMs: number | undefined; pages: number }>;
  /** One raw request (used for `DELETE /servers/{id}` and the `forceDelete` action). */
  request(req: EngineRequestOptions & { method: 'DELETE' | 'POST'; path: string; body?: unknown; serverId?: string | undefined }): Promise<EngineResponse>;
}

/**
 * What proved a server gone (see `evidence.ts`): `'not-found'`, Nova's 404 for its own request
 * (rule 1). An absence from a listing is never proof (watchers before this rule published
 * `'absent'`: a fleet no longer takes it, see `fleetProofIsGone`).
 */
export type GoneEvidence = 'not-found';

/**
 * One look at a server: gone (Nova's 404 for it, with the evidence when the engine's rules judged
 * it), or its current body.
 */
export type Observation = { gone: true; server?: undefined; evidence?: GoneEvidence | undefined } | { gone: false; server: Server };

/** How a wait ended. */
export type WaitOutcome = 'deleted' | 'soft-deleted' | 'error' | 'timeout';

/** What the `onProgress` callback receives after each observation of the server. */
export interface DeleteProgress {
  serverId: string;
  /** Observations so far. */
  polls: number;
  /** Status seen (`'NOT_FOUND'` after a 404). */
  status: string | undefined;
  /** task_state seen. */
  taskState: string | null | undefined;
  /** The server's `progress` field, 0 when absent (as osc-lib's callback). */
  progress: number;
  /** Time since the wait started, in ms. */
  elapsedMs: number;
}

/** Options of `waitForDelete`. Source: osc-lib `utils.wait_for_delete` (`sleep_time`, `timeout`, `callback`). */
export interface WaitForDeleteOptions {
  /** Time between observations of the server, in ms. @default 5000 (osc-lib's `sleep_time`) */
  intervalMs?: number;
  /**
   * Time between observations once the server shows status `DELETED`, in ms: Nova frees its cores
   * at the 404 that follows, so the wait looks more often. @default min(intervalMs, 1000)
   */
  confirmIntervalMs?: number;
  /** Each interval is multiplied by a random factor in [1 - jitter, 1 + jitter]. @default 0.1 */
  jitter?: number;
  /** Limit of the whole call, in ms; `Infinity` for none. @default 300000 (osc-lib's `timeout`) */
  timeoutMs?: number;
  /** Abort the call: it rejects with `AbortError` at once and sends nothing more. */
  signal?: AbortSignal | undefined;
  /** Called after each observation; an exception thrown by it is ignored. */
  onProgress?: ((progress: DeleteProgress) => void) | undefined;
  /**
   * Called at once for each request that failed on the way (a DELETE attempt, a look, an
   * authentication), with its kind, error and count so far: a caller can say what goes wrong long
   * before the timeout. An exception thrown by it is ignored.
   */
  onFailure?: ((failure: DeleteFailureNotice) => void) | undefined;
  /** Time limit of each request, in ms. @default the client's `requestTimeoutMs`, capped by the time left */
  requestTimeoutMs?: number;
  /**
   * Failed observations of the server in a row (5xx, no response, a 404 that is not Nova's answer for
   * this server, a garbled body) tolerated before the call rejects with the last failure. A failed
   * listing is never counted against a wait: the wait is observed by its own GET instead.
   * @default 4
   */
  pollRetries?: number;
}

/** What `waitForDelete` resolves. */
export interface WaitForDeleteResult {
  /** `'deleted'` only after Nova's 404 for this server (or a successful listing without it, confirmed by that 404). */
  outcome: WaitOutcome;
  /** Observations of this server (requests answered for it, failed ones included). */
  polls: number;
  /** Time spent, in ms. */
  elapsedMs: number;
  /** The last server body seen (absent after a 404). */
  server: Server | undefined;
  /** Last status seen (`'NOT_FOUND'` after the 404). */
  lastStatus: string | undefined;
  /** Last task_state seen. */
  lastTaskState: string | null | undefined;
  /** What failed on the way (by kind, with the last error of each); absent when nothing did. */
  failures?: FailureSummary | undefined;
}

/** Options of `deleteServer`. */
export interface DeleteServerOptions extends WaitForDeleteOptions {
  /**
   * Wait until Nova has deleted the server (its 404). Without it the call ends once the DELETE is
   * accepted; while a `QuotaGuard` is on the client, the client's watcher then follows the deletion
   * to its 404 in the background (at `intervalMs`, until `timeoutMs`), so the guard's waiting creates
   * wake at the 404. @default false
   */
  wait?: boolean;
  /**
   * With `wait`: send the DELETE once more if no observation shows the delete under way (task_state
   * `deleting`, status `DELETED`, 404) within this many ms; 0 never does. A 204 is a promise, not a
   * delete. @default 30000
   */
  redeleteAfterMs?: number;
  /** With `wait`: force-delete a `SOFT_DELETED` server and wait for its 404. @default false */
  forceSoftDeleted?: boolean;
  /**
   * Deprecated and without effect: a wait now always lasts until Nova's 404 (bounded by `timeoutMs`),
   * because Nova frees the cores only then. Still accepted so existing callers keep working.
   * @deprecated
   */
  confirmGoneMs?: number;
  /** Retries of the DELETE request after a transient failure (5xx, no response, rate limit). @default 3 */
  deleteRetries?: number;
  /** Send the `forceDelete` action instead of `DELETE` (a hard delete even with soft-delete on). @default false */
  force?: boolean;
}

/**
 * How a deletion ended: `'delete-requested'` (no wait; Nova answered 204), `'already-gone'` (Nova's
 * 404 for this server answered the DELETE, and a listing of the project does not show it: one that
 * does is an orphaned mapping, `OrphanedServerError`), `'deleted'` (Nova's 404 seen while waiting),
 * `'soft-deleted'` (status `SOFT_DELETED`).
 */
export type DeleteOutcome = 'delete-requested' | 'already-gone' | 'deleted' | 'soft-deleted';

/** What `deleteServer` resolves. */
export interface DeleteServerResult {
  serverId: string;
  outcome: DeleteOutcome;
  /** DELETE (or `forceDelete`) requests sent, retries included. */
  deleteAttempts: number;
  /** Observations made while waiting (0 without `wait`). */
  polls: number;
  /** Time spent, in ms. */
  elapsedMs: number;
  /** The last server body seen while waiting, if any. */
  server?: Server | undefined;
  /** Warnings, e.g. a force-delete refused by policy. */
  warnings: string[];
}

/** Options of `deleteServers`. */
export interface DeleteServersOptions extends DeleteServerOptions {
  /**
   * DELETE requests of this call in flight at once (the waits that follow are shared and not
   * bounded). The client's DELETE window may hold fewer: it starts at 2 and follows the DELETEs'
   * latency, up to 10 (see `deleteWindow.ts`). @default 10
   */
  concurrency?: number;
  /** Called as each server settles, before the whole call resolves; an exception thrown by it is ignored. */
  onSettled?: ((settled: DeleteSettled) => void) | undefined;
}

/** One server's settled result. */
export type DeleteSettled =
  | { serverId: string; status: 'fulfilled'; value: DeleteServerResult }
  | { serverId: string; status: 'rejected'; reason: Error };

/** What `deleteServers` resolves: every server's own result, in input order. */
export interface DeleteServersResult {
  results: DeleteSettled[];
  /** Ids whose deletion succeeded (any outcome). */
  succeeded: string[];
  /** Ids whose deletion failed, with the error. */
  failed: Array<{ serverId: string; error: Error }>;
}

/** One deletion that is not confirmed yet (see `client.unconfirmedDeletes()`). */
export interface UnconfirmedDelete {
  serverId: string;
  /** When `deleteServer` was first called for it, epoch ms. */
  firstRequestedAtMs: number;
  /** `deleteServer` calls made for it so far. */
  calls: number;
  /** `'in-progress'` (a call is running), `'delete-requested'` (DELETE accepted, not waited for) or `'failed'` (see `lastError`). */
  state: 'in-progress' | 'delete-requested' | 'failed';
  /** `name: message` of the error that ended the last call, if it threw. */
  lastError?: string;
}

/** Counters of one engine. */
export interface DeleteEngineStats {
  ticks: number;
  /** `GET /servers/{id}` sent by the engine (single waits, fallbacks, confirmations). */
  gets: number;
  /** Detail listings sent: `changes-since`, or the whole project's when a tick wants status and presence at once. */
  listings: number;
  /** Brief `GET /servers` listings sent. */
  briefListings: number;
  /** Listings that failed: an error, or the request time limit (their servers were looked at one by one). A slow answer is no failure. */
  listingFailures: number;
  /** Servers a `changes-since` listing did not show, looked at by their own GET. */
  fallbackGets: number;
  /**
   * Servers a brief listing did not show, looked at by their own GET at once (beyond their cadence)
   * to confirm the absence by Nova's 404: at most one per server waited on (`evidence.ts`).
   */
  absenceGets: number;
}


/** Options of a the delete engine (the client's `coalesce`, `maxRequestsPerSecond`, `watchIntervalMs`). */
export interface DeleteEngineOptions {
  /** Answer two or more pending waits with shared listings. @default true */
  coalesce?: boolean;
  /** Cap on the engine's requests per second (observations, DELETEs, force-deletes); `Infinity` for none. @default 10 */
  maxRequestsPerSecond?: number;
  /** Time between shared ticks, in ms. @default half the smallest pending `intervalMs` */
  watchIntervalMs?: number | undefined;
}

/** One wait, as `waitForDelete` and `deleteServer` describe it (durations in ms, times on the engine's clock). */
export interface WatchSpec {
  intervalMs: number;
  confirmIntervalMs: number;
  jitter: number;
  /** Clock time at which the wait ends as `timeout`. */
  deadlineAt: number;
  requestTimeoutMs: number | undefined;
  pollRetries: number;
  signal?: AbortSignal | undefined;
  /** Called after each observation of the server, with the observations so far. */
  onObservation?: ((obs: Observation, polls: number) => void) | undefined;
  /** Told of each failed look at once. */
  onFailure?: ((failure: DeleteFailureNotice) => void) | undefined;
  /**
   * The predicate of the wait: true when `obs` ends it. Default: the deletion's end (`classify` in
   * `observe.ts`: the 404, `SOFT_DELETED`, `ERROR` with no task). The guard's ACTIVE wait passes its
   * own (left BUILD, or gone); `WatchEnd.outcome` stays the deletion's reading of `obs`.
   */
  until?: ((obs: Observation) => boolean) | undefined;
  /**
   * True for the fleet watcher's own waits (`fleet.ts`): never the fleet's interest, never answered
   * by the fleet's publications. @default false
   */
  fleetWatch?: boolean | undefined;
  /**
   * What the waiter knows of the server when the wait starts: `'building'` (just created) or
   * `'deleting'` (its DELETE was requested). The first look then comes at the time this cloud's
   * builds or deletes take, once the engine has learned it (`lookPlan.ts`), not at once; the fleet
   * watcher's waits pass it (an ACTIVE wait, or a delete wait, registered it). @default undefined (look at once)
   */
  phase?: 'building' | 'deleting' | undefined;
}

/** How a wait ended. */
export interface WatchEnd {
  outcome: WaitOutcome;
  polls: number;
  server: Server | undefined;
  lastStatus: string | undefined;
  lastTaskState: string | null | undefined;
  /** What failed on the way; absent when nothing did. */
  failures?: FailureSummary | undefined;
}
