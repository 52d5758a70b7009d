// A test ledger over an InProcessQuotaLedger: records each call (name, fake ms since T0) and may fail
// some calls. Every member of the QuotaLedger port is there (none is optional); `extras` sets what
// the outage policy reads of it (callBudgetMs, everReached) and the holders its admissions report.
import { InProcessQuotaLedger } from '../../../src/ledger/inProcess.js';
import type { QuotaLedger } from '../../../src/ledger/port.js';
import { T0 } from '../../helpers.js';
import { pino } from 'pino';
import type { Logger } from '../../../src/core/logger.js';

/**
 * What a call does: forward (`ok`), reject (`reject`), reject as a store that cannot be reached
 * (`down`: the error is marked `ledgerDown`; `notfound`: also `downCode: 'ENOTFOUND'`, a host name that
 * does not resolve), never settle (`hang`), answer `false` (`lose`: a renew
 * that finds the lease lost), forward after 500 ms (`late`), or forward after that many ms.
 */
export type Fault = 'ok' | 'reject' | 'down' | 'notfound' | 'hang' | 'lose' | 'late' | number;

/** What the test ledger says of itself. */
export interface TestLedgerExtras {
  /** What `callBudgetMs()` reports. @default undefined (no measured budget) */
  budgetMs?: number;
  /** The `holders` every admission reports (absent: the inner ledger's). */
  holders?: number;
  /** What `members()` answers (absent: the inner ledger's, its one holder). */
  members?: string[];
  /** The ledger's `placeTtlMs` (absent: 0). */
  placeTtlMs?: number;
  /**
   * What `everReached()` answers. @default () => false: a store never reached (a ledger failing from
   * the start is waited for `NEVER_REACHED_WAIT_MS`, then the process goes on alone).
   */
  everReached?: () => boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A ledger that forwards to `inner`, records each call, and may fail some calls (see {@link Fault}). */
export function faulty(
  inner: InProcessQuotaLedger,
  fault: (method: string, args: unknown[]) => Fault = () => 'ok',
  extras: TestLedgerExtras = {},
): QuotaLedger & { calls: Array<[string, number]> } {
  const calls: Array<[string, number]> = [];
  const apply = async (method: string, args: unknown[], run: () => Promise<unknown>): Promise<unknown> => {
    calls.push([method, Date.now() - T0]);
    const f = fault(method, args);
    if (f === 'reject') throw new Error(`ledger ${method} failed`);
    if (f === 'down') throw Object.assign(new Error(`connect ECONNREFUSED (ledger ${method})`), { ledgerDown: true });
    // As a Redis ledger whose URL's host name does not resolve says it (RedisLedgerError: downCode, the URL redacted).
    if (f === 'notfound') throw Object.assign(new Error('Redis ledger at redis://[REDACTED]@nosuchhost:6379: Redis cannot be reached (getaddrinfo ENOTFOUND nosuchhost)'), { ledgerDown: true, downCode: 'ENOTFOUND' });
    if (f === 'hang') return new Promise(() => undefined);
    if (f === 'lose') return false;
    if (f === 'late') await sleep(500);
    if (typeof f === 'number') await sleep(f);
    return run();
  };
  const wrap =
    (method: keyof QuotaLedger) =>
    (...args: unknown[]): Promise<unknown> =>
      apply(method, args, () => (inner as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!.apply(inner, args));
  const budget = extras.budgetMs;
  const ledger: QuotaLedger & { calls: Array<[string, number]> } = {
    kind: 'test',
    holder: inner.holder,
    placeTtlMs: extras.placeTtlMs ?? 0,
    members: () => extras.members ?? inner.members(),
    calls,
    get scope() {
      return inner.scope;
    },
    bindScope: (scope) => inner.bindScope(scope),
    acquire: (request, read, signal) =>
      apply('acquire', [request], async () => {
        const a = await inner.acquire(request, read, signal);
        return extras.holders === undefined ? a : { ...a, holders: extras.holders };
      }) as ReturnType<QuotaLedger['acquire']>,
    peek: wrap('peek') as QuotaLedger['peek'],
    leave: wrap('leave') as QuotaLedger['leave'],
    claimAnyway: wrap('claimAnyway') as QuotaLedger['claimAnyway'],
    renew: wrap('renew') as QuotaLedger['renew'],
    bind: wrap('bind') as QuotaLedger['bind'],
    release: wrap('release') as QuotaLedger['release'],
    publishFreed: wrap('publishFreed') as QuotaLedger['publishFreed'],
    keptSeen: () => inner.keptSeen(),
    onFreed: (l) => inner.onFreed(l),
    onWake: (place, l) => inner.onWake(place, l),
    callBudgetMs: () => budget,
    probe: () => apply('probe', [], async () => undefined) as Promise<void>,
    everReached: extras.everReached ?? (() => false),
    close: wrap('close') as QuotaLedger['close'],
  };
  return ledger;
}

/** A pino logger at warn level and the messages it got, in order. */
export const warnLog = (): { logger: Logger; warnings: () => string[] } => {
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
  return { logger, warnings: () => lines.map((l) => (JSON.parse(l) as { msg: string }).msg) };
};
