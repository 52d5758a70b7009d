/** DegradedShare: the share of the last good reading a process may spend while the ledger is out of reach. */
import { describe, expect, it } from 'vitest';
import { DegradedShare } from '../../src/guard/degradedShare.js';
import type { Admission } from '../../src/guard/ledger.js';

const needs = { cores: 2, ramMiB: 0, instances: 1 };
const none = { cores: 0, ramMiB: 0, instances: 0 };
const refused = (holders: number): Admission => ({ admitted: false, inFlight: none, ahead: none, holders });

describe('DegradedShare', () => {
  it('divides by the most holders the ledger has reported, not by a later answer that under-counts them (a holder not called yet, a Redis restarted empty)', () => {
    const share = new DegradedShare();
    share.noteGood({ cores: 8 }, refused(3), needs);
    expect(share.share?.cores).toBe(2);
    // After a restart the holder entries are gone: the first answer says 1 holder, the fleet is still 3.
    share.noteGood({ cores: 8 }, refused(1), needs);
    expect(share.share?.cores).toBe(2);
    expect(share.take(needs)).toBe(1);
    expect(share.take(needs)).toEqual({ allowance: { cores: 0, ramMiB: Number.POSITIVE_INFINITY, instances: Number.POSITIVE_INFINITY } });
  });


  it('an outage that ends and begins again before a good admission does not hand out the same share twice', () => {
    const share = new DegradedShare();
    share.noteGood({ cores: 8 }, refused(3), needs);
    expect(share.take(needs)).toBe(1);
    // The probe answered (episode over once its grace has run), the next call failed again: no new
    // reading, same share.
    share.end(0, 0);
    expect(share.inGrace(1)).toBe(false);
    expect(share.take(needs)).toEqual({ allowance: { cores: 0, ramMiB: Number.POSITIVE_INFINITY, instances: Number.POSITIVE_INFINITY } });
    // A good admission notes a new share: its spending starts over.
    share.end(2, 0);
    expect(share.inGrace(3)).toBe(false);
    share.noteGood({ cores: 8 }, refused(3), needs);
    expect(share.take(needs)).toBe(3);
  });

  it('after the ledger answers again, admissions keep counting against the share for the grace, and a good admission then cannot renew it', () => {
    const share = new DegradedShare();
    share.noteGood({ cores: 8 }, refused(2), needs);
    expect(share.take(needs)).toBe(1);
    share.end(1000, 10_000);
    expect(share.inGrace(5000)).toBe(true);
    // a good admission in the grace: the share stays what it was, and so does its spending
    share.noteGood({ cores: 100 }, refused(1), needs);
    expect(share.share?.cores).toBe(4);
    expect(share.take(needs)).toBe(1);
    expect(share.take(needs)).toEqual({ allowance: { cores: 0, ramMiB: Number.POSITIVE_INFINITY, instances: Number.POSITIVE_INFINITY } });
    expect(share.inGrace(11_000)).toBe(false);
    share.noteGood({ cores: 100 }, refused(1), needs);
    expect(share.share?.cores).toBe(50); // (100 cores) / (the most holders seen: 2)
  });
});

