/**
 * The shapes of the reaper's options and results.
 *
 * @module
 */
import type { DeleteOutcome, DeleteServerOptions } from '../delete/index.js';
import type { LoggerOption } from '../core/logger.js';
import type { FleetSelector, LiveMark, ReapCandidate, ReaperState, ReapSkip } from './plan.js';

/** Options of {@link Reaper} and {@link reapServers}. */
export interface ReaperOptions extends FleetSelector {
  /** Only servers older than this (time since `created`), in ms. Required; 0 means any age. */
  olderThanMs: number;
  /** List what would be deleted (skip reason `dry-run`) without sending a single DELETE. Default false. */
  dryRun?: boolean;
  /** Time box of each deletion (DELETE plus wait), in ms. Default 300000 (5 min). Never beyond the pass's `timeoutMs`. */
  deleteTimeoutMs?: number;
  /**
   * Time box of one pass (listing and deletions), in ms: every pass settles by then, with nothing of it
   * left running. A listing not done by then rejects the pass with {@link AbortError} (state
   * unchanged); a deletion gets at most what is left of the box (a {@link DeleteTimeoutError} in
   * `failed` when it runs out), and one not started in time is in `failed` with an {@link AbortError}.
   * `Infinity` means no time box.
   * @default 900000 (15 min)
   */
  timeoutMs?: number;
  /** Poll interval while waiting for a deletion, in ms. Default 5000. */
  deleteIntervalMs?: number;
  /** Deletions running at once. Default 10. */
  concurrency?: number;
  /** More options for each `deleteServer` call (e.g. `forceSoftDeleted`, `redeleteAfterMs`). `wait`, `timeoutMs`, `intervalMs` and `signal` are the reaper's. */
  deleteOptions?: Omit<DeleteServerOptions, 'wait' | 'timeoutMs' | 'intervalMs' | 'signal'>;
  /** State of earlier passes (e.g. read from a file by a cron job). Default: none. */
  state?: ReaperState | undefined;
  /** Clock for ages and the state, epoch ms. Default the client's clock (`wallNow`). */
  now?: () => number;
  /** Abort: the current pass stops its deletions and rejects with {@link AbortError}. */
  signal?: AbortSignal | undefined;
  /** pino logger. Default: the client's logger. */
  logger?: LoggerOption | undefined;
  /** Called with each step of a pass (for progress displays). Exceptions thrown by it are ignored. */
  onEvent?: ((event: ReapEvent) => void) | undefined;
  /** Page size (`limit`) of the server listing; every page is read. Default: Nova's own. */
  pageSize?: number | undefined;
  /**
   * The marks of live claims, called once per pass right after the listing: a fleet server that
   * carries one is skipped (`'claim-live'`) whatever its age, so a create still in flight, or a
   * claim tag a guard still watches, is never reaped. E.g. `() => guard.liveClaims()`
   * (`QuotaGuard`). A rejection fails the pass before any DELETE (state unchanged). Default: none.
   */
  liveClaims?: (() => readonly LiveMark[] | Promise<readonly LiveMark[]>) | undefined;
}

/** Options of {@link reapServers}: a {@link Reaper}'s, plus the time between its two passes. */
export interface ReapServersOptions extends ReaperOptions {
  /** Time between the two passes, in ms. Default 60000 (nodepool's cleanup interval). */
  passIntervalMs?: number;
}

/** Options of {@link Reaper.run} (a daemon: a pass every `intervalMs` until `signal` aborts). */
export interface ReaperRunOptions {
  /** Time between passes, in ms. Required. */
  intervalMs: number;
  /** Stops the daemon (between or during passes). Required. */
  signal: AbortSignal;
  /** Called with each pass's result. */
  onPass?: (result: ReapPassResult) => void;
  /** Called with the error of a pass whose listing failed (the next pass is at the next interval). */
  onError?: (error: Error) => void;
}

/** A server the reaper deleted. */
export interface ReapDeleted {
  serverId: string;
  name: string | undefined;
  ageMs: number;
  /** `'deleted'`, `'soft-deleted'` or `'already-gone'` (see `deleteServer`). */
  outcome: DeleteOutcome;
  /** Time the deletion took, ms. */
  elapsedMs: number;
}

/** A server the reaper tried and failed to delete; the next pass tries again. */
export interface ReapFailure {
  serverId: string;
  name: string | undefined;
  ageMs: number;
  /** {@link DeleteTimeoutError}, {@link DeleteFailedError}, {@link ConflictError} (locked), ... */
  error: Error;
}

/** A step of a pass, for {@link ReaperOptions.onEvent}. */
export type ReapEvent =
  | {
      type: 'listed';
      pass: number;
      listed: number;
      candidates: number;
      /** Servers this pass deletes (0 in a dry run). */
      toDelete: number;
      /** In a dry run, the servers this pass would delete (skip reason `dry-run`); 0 otherwise. */
      wouldDelete: number;
      unreachable: number;
    }
  | { type: 'delete-started'; serverId: string; name: string | undefined }
  | { type: 'deleted'; serverId: string; name: string | undefined; outcome: DeleteOutcome; elapsedMs: number }
  | { type: 'delete-failed'; serverId: string; name: string | undefined; error: Error }
  | { type: 'waiting'; nextPassInMs: number };

/** What one {@link Reaper.pass} resolves. */
export interface ReapPassResult {
  /** Pass number (1-based, counting passes in the state). */
  pass: number;
  dryRun: boolean;
  /** Servers listed (all of the project's, not only the fleet's). */
  listed: number;
  /** Fleet servers older than `olderThanMs`, confirmed or not. */
  candidates: ReapCandidate[];
  deleted: ReapDeleted[];
  /** Fleet servers not deleted, with the reason. */
  skipped: ReapSkip[];
  failed: ReapFailure[];
  /**
   * Ids of listed servers with status UNKNOWN (their cell does not answer; Nova API guide, "Down
   * cells"), fleet members or not: never reaped, and the pass cannot see whether the fleet leaked there.
   */
  unreachable: string[];
  /** When the pass listed the servers, epoch ms (the reaper's clock). */
  startedAtMs: number;
  /** Wall-clock time of the pass, ms. */
  elapsedMs: number;
}

/** What {@link reapServers} resolves: both passes, and the totals. */
export interface ReapResult {
  dryRun: boolean;
  /** Deleted in either pass. */
  deleted: ReapDeleted[];
  /** The last pass's skipped servers. */
  skipped: ReapSkip[];
  /** Failures not made good by a later pass. */
  failed: ReapFailure[];
  /** The last pass's candidates. */
  candidates: ReapCandidate[];
  /** The last pass's servers with status UNKNOWN (see `ReapPassResult.unreachable`). */
  unreachable: string[];
  /** Each pass's own result (one when the first pass found no candidate: a second could not delete anything). */
  passes: ReapPassResult[];
  /** The state after the last pass. */
  state: ReaperState;
}
