/**
 * The errors of a delete that did not end with the server gone: it timed out
 * ({@link DeleteTimeoutError}) or Nova did not delete it ({@link DeleteFailedError}).
 *
 * @module
 */
import { ORPHAN_MAPPING_REMEDY, type QuotaFinding } from '../core/types.js';
import { NovaGuardError } from './base.js';
import { NovaApiError } from './api.js';

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
}

/** Nova had not answered 404 for the server (nor shown it `SOFT_DELETED`) within `timeoutMs`, DELETE included. */
export class DeleteTimeoutError extends NovaGuardError {
  readonly serverId: string;
  readonly lastStatus: string | undefined;
  readonly lastTaskState: string | null | undefined;
  readonly polls: number;
  readonly elapsedMs: number;
  readonly timeoutMs: number;
  constructor(init: DeleteTimeoutInit) {
    super(
      `Timed out after ${init.elapsedMs} ms waiting for server ${init.serverId} to be deleted ` +
        `(last status ${init.lastStatus ?? 'unknown'}, task_state ${init.lastTaskState ?? 'null'}, ${init.polls} polls)`,
    );
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
  constructor(init: DeleteFailedInit) {
    super(
      init.message ??
        `Failed to delete server ${init.serverId} after ${init.deleteAttempts} DELETE request(s)` + (init.faultMessage ? `: ${init.faultMessage}` : ''),
      { cause: init.cause },
    );
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
