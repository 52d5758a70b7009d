/**
 * The errors of a delete that did not end with the server gone: it timed out
 * ({@link DeleteTimeoutError}) or Nova did not delete it ({@link DeleteFailedError}).
 *
 * @module
 */
import { ORPHAN_MAPPING_REMEDY, type QuotaFinding } from '../core/types.js';
import { NovaGuardError } from './base.js';
import { NovaApiError, NovaNetworkError } from './api.js';

/** What a failed request was for: the DELETE (or force-delete), a look at the server (GET, listing), or authentication (401, Keystone). */
export type FailureKind = 'delete' | 'look' | 'auth';

/**
 * What went wrong on the way of a delete or a wait: every failed request counted by kind, the last
 * error of each kind, the first failure, and how many requests were answered (any status Nova
 * meant: a look, an accepted DELETE).
 */
export interface FailureSummary {
  /** Failed requests by kind (each attempt counts). */
  readonly counts: Readonly<Record<FailureKind, number>>;
  /** The last error of each kind. */
  readonly lastError: Readonly<Partial<Record<FailureKind, Error>>>;
  /** The first failure of all. */
  readonly first: Error | undefined;
  /** The latest failure of all. */
  readonly last: Error | undefined;
  /** Requests that got Nova's answer along the way. */
  readonly answered: number;
  /** Every failure was the same (`net:<code>` without a response, `http:<status>` with one); undefined when they differ. */
  readonly sameEvery: string | undefined;
}

const KIND_WORDS: Record<FailureKind, [string, string]> = {
  delete: ['failed DELETE', 'failed DELETEs'],
  look: ['failed look', 'failed looks'],
  auth: ['failed authentication', 'failed authentications'],
};

/** A URL without what follows the API root (`.../v2.1/servers/x` → `.../v2.1`). */
function serviceRoot(url: string | undefined): string {
  if (!url) return '(unknown URL)';
  return url.replace(/\/(servers|limits|flavors|os-[a-z-]+|auth)(\/.*)?$/, '');
}

/** One error in a few words: `HTTP 503: <message>`, `ECONNREFUSED`, `no response within 30000 ms`. */
export function failureWords(error: Error): string {
  const cut = (t: string): string => (t.length > 200 ? `${t.slice(0, 200)}...` : t);
  if (error instanceof NovaNetworkError) return error.timedOut ? 'no response in time' : (error.code ?? cut(error.message));
  if (error instanceof NovaApiError && error.status > 0) {
    const after = error.retryAfterMs !== undefined && error.retryAfterMs > 0 ? ` (Retry-After ${Math.round(error.retryAfterMs / 1000)} s)` : '';
    return `HTTP ${error.status}: ${cut(error.message)}${after}`;
  }
  return `${error.name}: ${cut(error.message)}`;
}

/**
 * The summary in words, or undefined when nothing failed: `Nova at <URL> refused every connection
 * (ECONNREFUSED, 14 tries)` when nothing got through, `Nova answered every request with HTTP 500 (6
 * tries): <message>`, else the failures by kind with the last error of each. A `Retry-After` of the
 * latest failure is named.
 */
export function describeFailures(summary: FailureSummary | undefined): string | undefined {
  if (!summary || !summary.last) return undefined;
  const total = summary.counts.delete + summary.counts.look + summary.counts.auth;
  const last = summary.last;
  const who = summary.counts.auth === total && !(last instanceof NovaApiError && last.status === 401) ? 'Keystone' : 'Nova';
  const url = last instanceof NovaApiError ? serviceRoot(last.url) : '(unknown URL)';
  const tries = `${total} ${total === 1 ? 'try' : 'tries'}`;
  let text: string;
  if (summary.answered === 0 && summary.sameEvery?.startsWith('net:') && last instanceof NovaNetworkError) {
    text =
      last.code === 'ECONNREFUSED'
        ? `${who} at ${url} refused every connection (ECONNREFUSED, ${tries})`
        : `${who} at ${url} never answered (${last.timedOut ? 'no response within the request time limit' : (last.code ?? last.message)}, ${tries})`;
  } else if (summary.answered === 0 && summary.sameEvery?.startsWith('http:') && last instanceof NovaApiError) {
    text = `${who} at ${url} answered every request with HTTP ${last.status} (${tries}): ${failureWords(last).replace(/^HTTP \d+: /, '')}`;
  } else {
    const parts: string[] = [];
    for (const kind of ['delete', 'look', 'auth'] as const) {
      const n = summary.counts[kind];
      const e = summary.lastError[kind];
      if (n > 0 && e) parts.push(`${n} ${KIND_WORDS[kind][n === 1 ? 0 : 1]} (last: ${failureWords(e)})`);
    }
    text = parts.join('; ');
  }
  const retryAfterMs = last instanceof NovaApiError ? (last.retryAfterMs ?? 0) : 0;
  if (retryAfterMs > 0 && !text.includes('Retry-After')) text += `; Nova asked to wait ${Math.round(retryAfterMs / 1000)} s (Retry-After)`;
  return text;
}

/** Why a delete-wait ended without the server being gone. */
export interface DeleteTimeoutInit {
  serverId: string;
  /** Status seen on the last successful poll. */
  lastStatus: string | undefined;
  /** `OS-EXT-STS:task_state` seen on the last successful poll. */
  lastTaskState: string | null | undefined;
  /** Number of polls made. */
  polls: number;
  /** Wall-clock time spent, in milliseconds. */
  elapsedMs: number;
  /** The wait's timeout, in milliseconds. */
  timeoutMs: number;
  /** What failed on the way, if anything did: named in the message; its latest failure is the `cause`. */
  failures?: FailureSummary | undefined;
}

/**
 * Nova had not answered 404 for the server (nor shown it `SOFT_DELETED`) within `timeoutMs`, DELETE
 * included. When requests failed on the way, the message says what (`Nova at <URL> refused every
 * connection (ECONNREFUSED, 14 tries)`), `failures` has them by kind and `cause` is the latest.
 */
export class DeleteTimeoutError extends NovaGuardError {
  readonly serverId: string;
  readonly lastStatus: string | undefined;
  readonly lastTaskState: string | null | undefined;
  readonly polls: number;
  readonly elapsedMs: number;
  readonly timeoutMs: number;
  /** What failed on the way (undefined when nothing did). */
  readonly failures: FailureSummary | undefined;
  constructor(init: DeleteTimeoutInit) {
    const why = describeFailures(init.failures);
    super(
      `Timed out after ${init.elapsedMs} ms waiting for server ${init.serverId} to be deleted ` +
        `(last status ${init.lastStatus ?? 'unknown'}, task_state ${init.lastTaskState ?? 'null'}, ${init.polls} polls)` +
        (why ? `: ${why}` : ''),
      { cause: init.failures?.last },
    );
    this.failures = init.failures;
    this.serverId = init.serverId;
    this.lastStatus = init.lastStatus;
    this.lastTaskState = init.lastTaskState;
    this.polls = init.polls;
    this.elapsedMs = init.elapsedMs;
    this.timeoutMs = init.timeoutMs;
  }
}

/** Options of {@link DeleteFailedError}. */
export interface DeleteFailedInit {
  serverId: string;
  /** Nova's fault message of the server in ERROR, or the last DELETE's error message. */
  faultMessage: string | undefined;
  /** Number of DELETE requests issued. */
  deleteAttempts: number;
  /** Last observed status. */
  lastStatus?: string | undefined;
  /** The HTTP error that ended the attempts, if any. */
  cause?: unknown;
  /** The whole message, when the default one (`Failed to delete server ...`) does not fit. */
  message?: string | undefined;
  /** What failed on the way, if anything did: named in the default message. */
  failures?: FailureSummary | undefined;
}

/** Nova did not delete the server: the DELETE kept failing, or the server went to ERROR twice. */
export class DeleteFailedError extends NovaGuardError {
  readonly serverId: string;
  readonly faultMessage: string | undefined;
  readonly deleteAttempts: number;
  readonly lastStatus: string | undefined;
  /** HTTP status of the last failed DELETE, if that is what ended it. */
  readonly status: number | undefined;
  /** `x-openstack-request-id` of the last failed request, if any. */
  readonly requestId: string | undefined;
  /** What failed on the way (undefined when nothing was recorded). */
  readonly failures: FailureSummary | undefined;
  constructor(init: DeleteFailedInit) {
    const why = describeFailures(init.failures);
    super(
      init.message ??
        `Failed to delete server ${init.serverId} after ${init.deleteAttempts} DELETE request(s)` + (init.faultMessage ? `: ${init.faultMessage}` : '') + (why ? ` (${why})` : ''),
      { cause: init.cause ?? init.failures?.last },
    );
    this.failures = init.failures;
    this.serverId = init.serverId;
    this.faultMessage = init.faultMessage;
    this.deleteAttempts = init.deleteAttempts;
    this.lastStatus = init.lastStatus;
    this.status = init.cause instanceof NovaApiError ? init.cause.status : undefined;
    this.requestId = init.cause instanceof NovaApiError ? init.cause.requestId : undefined;
  }
}


/** Options of {@link OrphanedServerError}. */
export interface OrphanedServerInit {
  serverId: string;
  /** DELETE requests sent by the call (0 for `waitForDelete`). */
  deleteAttempts: number;
  /** What was seen: the 404 and the listing that still showed the server, in words. */
  evidence: string;
  /** Status the listing showed the server with, if it said (a brief listing does not). */
  lastStatus?: string | undefined;
}

/**
 * The deletion cannot end: Nova answered `itemNotFound` (404) for the server's own GET or DELETE, yet a
 * successful listing of the project (`GET /servers` at microversion 2.69 or later) still shows it,
 * and Nova keeps counting it: its instance mapping lost its cell (an orphaned mapping). Deleting
 * again cannot help; an operator must fix or remove the mapping. `finding` is the audit's
 * `orphan-mapping` finding for this server (its `holds` are zero: a listing of ids does not say).
 * See `docs/field-cases.md`, "Gone comes in several forms".
 */
export class OrphanedServerError extends DeleteFailedError {
  /** What was seen, in words. */
  readonly evidence: string;
  /** The finding, shaped as the audit's (`kind: 'orphan-mapping'`). */
  readonly finding: QuotaFinding;
  constructor(init: OrphanedServerInit) {
    super({
      serverId: init.serverId,
      faultMessage: undefined,
      deleteAttempts: init.deleteAttempts,
      lastStatus: init.lastStatus,
      message:
        `Server ${init.serverId} cannot be deleted: ${init.evidence}. Its instance mapping has lost its cell (an orphaned mapping) ` +
        `and Nova still counts it; an operator must fix the mapping: ${ORPHAN_MAPPING_REMEDY.operatorCan}`,
    });
    this.evidence = init.evidence;
    this.finding = {
      kind: 'orphan-mapping',
      transient: false,
      needsOperator: true,
      serverIds: [init.serverId],
      holds: { cores: 0, ramMiB: 0, instances: 0 },
      evidence: init.evidence,
      projectCan: ORPHAN_MAPPING_REMEDY.projectCan,
      operatorCan: ORPHAN_MAPPING_REMEDY.operatorCan,
    };
  }
}
