/**
 * The words of degraded mode (`degradedLedger.ts`): the warning when a ledger call fails and when an
 * outage begins. Each says what the guard does from that moment, and only that: a process that has
 * never reached its ledger waits for it at most what is left of `NEVER_REACHED_WAIT_MS` (the
 * admissions' waits end then, `admission.ts`), and the number printed is that time left; a process
 * the ledger has answered waits for it while its claims may be live there. A ledger whose host name
 * does not resolve (`ENOTFOUND`) and that was never reached since start-up is most likely a typo:
 * the warning says where to check it. The cause is the ledger's own message (a Redis ledger's
 * names its URL with the password redacted), on one line.
 *
 * @module
 */
import { ledgerDownCode } from '../ledger/index.js';

/** How long the probing of a ledger found down goes, for the outage warning. */
export interface ProbeSchedule {
  readonly firstMs: number;
  readonly maxMs: number;
}

/** What the words of one moment depend on. */
export interface DegradedMoment {
  /** The ledger's kind (`redis`, `sqlite`, a ledger object's `kind`). */
  readonly kind: string;
  /** The ledger has answered an admission of this process, or says it reached its store. */
  readonly reached: boolean;
  /**
   * While never reached: how much longer, in ms, creates wait for it before they admit with the
   * in-process ledger (0: they admit with it now).
   */
  readonly waitLeftMs: number;
  /** Where the ledger string came from, for the setup hint (e.g. "the `ledger` option", `NOVA_GUARD_LEDGER`). */
  readonly source: string;
}

/** `error`'s message (a time-out's, a refusal's), on one line and at most 300 characters long. */
export function causeText(error: unknown): string {
  const line = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim() || (error instanceof Error ? error.name : 'unknown error');
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

/**
 * `'; its host name does not resolve: check it in SOURCE'` when `error` says the ledger's host name
 * does not resolve (`ENOTFOUND`) and the ledger was never reached; `''` otherwise (a refused
 * connection may be a store starting; a name that resolved once is an outage).
 */
export function setupHint(error: unknown, m: Pick<DegradedMoment, 'reached' | 'source'>): string {
  if (m.reached || ledgerDownCode(error) !== 'ENOTFOUND') return '';
  return `; its host name does not resolve: check it in ${m.source}`;
}

/** What creates of a process that never reached the ledger do from now. */
function neverReached(m: DegradedMoment): string {
  const alone = "admit with the in-process ledger (this process alone; Nova's quota check decides the rest) until it is back";
  return m.waitLeftMs > 0 ? `creates wait up to ${Math.ceil(m.waitLeftMs)} ms more for it (it may be starting), then ${alone}` : `creates ${alone}`;
}

/**
 * The warning of a failed ledger call after which a guarded call goes on without it (once per
 * streak of failures; the process warning once per process and cause): `quota ledger (KIND) failed
 * (CAUSE[HINT]): WHAT NOW`.
 */
export function fallbackWords(m: DegradedMoment, cause: string | undefined, error?: unknown): string {
  const hint = error === undefined ? '' : setupHint(error, m);
  const why = cause === undefined ? '' : ` (${cause}${hint})`;
  const now = m.reached ? 'creates wait for it (other hosts may still admit on it)' : neverReached(m);
  return `quota ledger (${m.kind}) failed${why}: ${now}`;
}

/**
 * The warning when an outage begins: `quota ledger (KIND) is down: WHY[HINT]; skipping it and
 * probing it from FIRST ms to every MAX ms; WHAT NOW`. `why`: the cause, or the time-outs in a row.
 */
export function outageWords(m: DegradedMoment, why: string, error: unknown, probes: ProbeSchedule): string {
  const now = m.reached
    ? 'meanwhile guarded creates of this process wait for it while claims of this process may still be live in it, then admit within their share of the quota'
    : `it was never reached: ${neverReached(m)}`;
  return `quota ledger (${m.kind}) is down: ${why}${setupHint(error, m)}; skipping it and probing it from ${probes.firstMs} ms to every ${probes.maxMs} ms; ${now}`;
}
