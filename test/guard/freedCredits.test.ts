/**
 * `FreedCredits` (`src/guard/freedCredits.ts`) on its own: when a guard has a credit to hand to
 * `publishFreed`. A credit needs the claim counted, the kept reading noted when the client's deletion
 * of the server began, and a DELETE of the server that Nova accepted after that (not Nova's 404).
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { FreedCredits } from '../../src/guard/freedCredits.js';
import { InProcessQuotaLedger, type QuotaLedger } from '../../src/ledger/index.js';

/** A ledger whose `keptSeen()` answers `seq` (the rest: an in-process ledger). */
function keptAt(seq: number): QuotaLedger {
  const ledger = new InProcessQuotaLedger();
  return Object.assign(Object.create(ledger) as QuotaLedger, { keptSeen: () => seq });
}

describe('FreedCredits', () => {
  it('credits a counted server whose DELETE, sent after the kept reading was noted, Nova accepted', () => {
    const c = new FreedCredits(systemClock);
    c.counted('srv', 'claim-1');
    c.deleting('srv', keptAt(7), true);
    c.accepted('srv');
    expect(c.take('srv')).toEqual({ claimId: 'claim-1', keptSeq: 7 });
    expect(c.size).toBe(0);
  });

  it('no credit when no DELETE of the server was accepted (Nova answered 404: someone else deleted it, maybe before the reading)', () => {
    const c = new FreedCredits(systemClock);
    c.counted('srv', 'claim-1');
    c.deleting('srv', keptAt(7), true);
    expect(c.take('srv')).toBeUndefined();
  });

  it('no credit for an acceptance heard before the deletion started (it answered a DELETE from before the reading was noted)', () => {
    const c = new FreedCredits(systemClock);
    c.counted('srv', 'claim-1');
    c.accepted('srv');
    c.deleting('srv', keptAt(7), true);
    expect(c.take('srv')).toBeUndefined();
  });

  it('no credit when the client already had a deletion of the server pending before the guard heard of one (`first` false)', () => {
    const c = new FreedCredits(systemClock);
    c.counted('srv', 'claim-1');
    c.deleting('srv', keptAt(7), false);
    c.accepted('srv');
    expect(c.take('srv')).toBeUndefined();
  });
});
