/**
 * The error of an operation's own time limit (`timeoutMs` of `auditQuota`, `watchQuota`'s samples,
 * a reaper pass): a timeout, never an abort. An abort is the caller's signal ({@link AbortError});
 * a time limit running out is this error, so a caller can tell "I stopped it" from "it ran out of time".
 *
 * @module
 */
import { NovaGuardError } from './base.js';

/** Options of {@link OperationTimeoutError}. */
export interface OperationTimeoutInit {
  /** What ran out of time, as its API names it: `auditQuota`, `Reaper.pass`. */
  operation: string;
  /** The time limit, in ms. */
  timeoutMs: number;
  /** Time spent when it ran out, in ms. */
  elapsedMs?: number | undefined;
  /** What was going wrong when the time ran out (the failure in flight), if anything was. */
  cause?: unknown;
}

/** An operation's time limit ran out (`timeoutMs`); see the module. */
export class OperationTimeoutError extends NovaGuardError {
  /** What ran out of time (`auditQuota`, `Reaper.pass`). */
  readonly operation: string;
  /** The time limit, in ms. */
  readonly timeoutMs: number;
  /** Time spent, in ms, when known. */
  readonly elapsedMs: number | undefined;
  /**
   * @param message - What ran out of time and its limit (never a secret).
   * @param init - The operation, its limit, the time spent, and `cause`.
   */
  constructor(message: string, init: OperationTimeoutInit) {
    super(message, { cause: init.cause });
    this.operation = init.operation;
    this.timeoutMs = init.timeoutMs;
    this.elapsedMs = init.elapsedMs;
  }
}
