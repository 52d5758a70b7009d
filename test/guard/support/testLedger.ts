// A test ledger over an InProcessQuotaLedger: records each call (name, fake ms since T0) and may fail
// some calls; optionally has the protocol's optional methods (acquire, probe, callBudgetMs), built
// over the in-process ledger's limits + admit + join.
import { InProcessQuotaLedger } from '../../../src/ledger/inProcess.js';
import type { Acquisition, AcquireRequest, LimitsReading, QuotaLedger } from '../../../src/ledger/port.js';
import { rawHeadroomOf } from '../../../src/ledger/headroom.js';
import { T0 } from '../../helpers.js';
import { pino } from 'pino';
import type { Logger } from '../../../src/core/logger.js';

/**
 * What a call does: forward (`ok`), reject (`reject`), reject as a store that cannot be reached
 * (`down`: the error is marked `ledgerDown`), never settle (`hang`), answer `false` (`lose`: a renew
 * that finds the lease lost), forward after 500 ms (`late`), or forward after that many ms.
 */
export type Fault = 'ok' | 'reject' | 'down' | 'hang' | 'lose' | 'late' | number;

/** The optional methods the test ledger has. */
export interface TestLedgerExtras {
  /** Give the ledger `acquire` (over limits + admit + join). */
  acquire?: boolean;
  /** Give the ledger `probe` (decided by the fault function as method `probe`). */
  probe?: boolean;
  /** What `callBudgetMs()` reports (absent: no `callBudgetMs`). */
  budgetMs?: number;
  /** The `holders` every admission reports (absent: admissions do not say). */
  holders?: number;
  /** What `members()` answers (absent: the inner ledger's, its one holder). */
  members?: string[];
  /** The ledger's `placeTtlMs` (absent: 0). */
  placeTtlMs?: number;
  /** What `everReached()` answers (absent: no `everReached`). */
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
  const ledger: QuotaLedger & { calls: Array<[string, number]> } = {
    kind: 'test',
    holder: inner.holder,
    placeTtlMs: extras.placeTtlMs ?? 0,
    members: () => extras.members ?? inner.members(),
    calls,
    join: wrap('join') as QuotaLedger['join'],
    leave: wrap('leave') as QuotaLedger['leave'],
    limits: wrap('limits') as QuotaLedger['limits'],
    admit: (request) =>
      apply('admit', [request], async () => {
        const admission = await inner.admit(request);
        return extras.holders === undefined ? admission : { ...admission, holders: extras.holders };
      }) as ReturnType<QuotaLedger['admit']>,
    claimAnyway: wrap('claimAnyway') as QuotaLedger['claimAnyway'],
    renew: wrap('renew') as QuotaLedger['renew'],
    bind: wrap('bind') as QuotaLedger['bind'],
    release: wrap('release') as QuotaLedger['release'],
    publishFreed: wrap('publishFreed') as QuotaLedger['publishFreed'],
    onFreed: (l) => inner.onFreed(l),
    close: wrap('close') as QuotaLedger['close'],
  };
  if (extras.acquire) {
    ledger.acquire = (request: AcquireRequest, read: (s: AbortSignal | undefined) => Promise<LimitsReading>, signal: AbortSignal | undefined) =>
      apply('acquire', [request], async () => {
        const reading = await inner.limits(read, signal);
        const admission = await inner.admit({ place: request.place, needs: request.needs, headroom: rawHeadroomOf(reading.absolute), stamp: reading.stamp, ttlMs: request.ttlMs });
        const place = !admission.admitted && request.joinIfShort && !request.place ? await inner.join(request.needs) : request.place;
        return { ...admission, reading, place, ...(extras.holders === undefined ? {} : { holders: extras.holders }) };
      }) as Promise<Acquisition>;
  }
  if (extras.probe) ledger.probe = () => apply('probe', [], async () => undefined) as Promise<void>;
  if (extras.everReached) ledger.everReached = extras.everReached;
  if (extras.budgetMs !== undefined) {
    const budget = extras.budgetMs;
    ledger.callBudgetMs = () => budget;
  }
  return ledger;
}

/** A pino logger at warn level and the messages it got, in order. */
export const warnLog = (): { logger: Logger; warnings: () => string[] } => {
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
  return { logger, warnings: () => lines.map((l) => (JSON.parse(l) as { msg: string }).msg) };
};
