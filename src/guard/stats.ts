/**
 * The counters of one guard (`QuotaGuard.stats`).
 *
 * @module
 */
/** Counters of one guard, for summaries (e.g. the demo). */
export interface QuotaGuardStats {
  /** Guarded calls that resolved. */
  succeeded: number;
  /** Guarded calls that rejected. */
  failed: number;
  /** Waits for headroom. */
  waits: number;
  /** POSTs (or `fn` calls) that counted as attempts. */
  attempts: number;
  /** Quota 403s (and legacy 413 quotas) answered to the guard's POSTs. */
  quota403s: number;
  /** Retries after a quota error. */
  quotaRetries: number;
  /** Servers that went to ERROR with a quota fault and were deleted. */
  lateQuotaFaults: number;
  /** Rate-limited POSTs re-sent. */
  rateLimitRetries: number;
  /** Servers the guard deleted because it gave up on them. */
  cleanups: number;
  /** POSTs whose outcome was unknown (reset, request timeout, 5xx, a 2xx without `server`, a proxy's 429): searched for by tag. */
  ambiguousCreates: number;
  /** Servers found by that search and adopted (returned as if the POST had answered). */
  adoptedServers: number;
  /**
   * Ledger calls that rejected or ran past `ledgerTimeoutMs` (or skipped a ledger known down), after
   * which a guarded call went on with the private in-process ledger. Once the ledger has answered an
   * admission of this process, such a call admits nothing there while claims of this process may
   * still be live in the ledger: it waits for it; past that, it admits within its share of the quota
   * (`degradedAdmissions`). A fallback costs time, not quota.
   */
  ledgerFallbacks: number;
  /** Servers deleted because another server of the same guarded call carries its claim tag (a POST that landed late). */
  lateCreatesDeleted: number;
  /** Outages of the ledger seen while this guard used it (down: refused, or 3 time-outs in a row; see `ledger`). */
  ledgerOutages: number;
  /**
   * Admissions (count) made while the ledger was out of reach for longer than any claim of this
   * process can live in it: within this process's part of the quota, on a fresh `/limits` reading
   * (degraded mode, `degradedLedger.ts`); each is re-claimed on the ledger when it answers.
   * @default 0
   */
  degradedAdmissions: number;
  /** Creates whose claim lease was lost while the POST was in flight, re-claimed without a fencing check (`claimAnyway`). */
  unfencedCreates: number;
}
