/**
 * Quota messages that almost match: nova-guard never returns NaN numbers and never invents a
 * resource; what it cannot read is still a quota error ('bare'), what is not a quota message stays
 * undefined.
 */
import { describe, expect, it } from 'vitest';
import { parseQuotaMessage } from '../../src/index.js';

describe('almost-legacy quota messages', () => {
  it.each([
    ['thousands separators with spaces', 'Quota exceeded for cores: Requested 2, but already used 1 000 of 2 000 cores'],
    ['thousands separators with commas', 'Quota exceeded for ram: Requested 2048, but already used 1,048,576 of 1,050,000 ram'],
    ['a negative request', 'Quota exceeded for cores: Requested -2, but already used 514 of 515 cores'],
    ['a negative usage', 'Quota exceeded for cores: Requested 2, but already used -1 of 515 cores'],
    ['a fraction', 'Quota exceeded for cores: Requested 2.5, but already used 9 of 10 cores'],
    ['an exponent', 'Quota exceeded for cores: Requested 1e3, but already used 9 of 10 cores'],
    ['no numbers', 'Quota exceeded for cores: Requested , but already used  of  cores'],
    ['extra spaces', 'Quota exceeded for cores:  Requested 2,  but already used 514 of 515 cores'],
  ])('%s: a quota error without numbers (never NaN)', (_what, message) => {
    expect(parseQuotaMessage(message)).toEqual({ shape: 'bare', resources: [], permanent: false, service: 'compute' });
  });

  it('upper-case resource names are Nova names in lower case', () => {
    expect(parseQuotaMessage('quota exceeded for CORES: requested 2, but already used 9 of 10 CORES')).toEqual({
      shape: 'legacy',
      resources: [{ name: 'cores', requested: 2, used: 9, allowed: 10 }],
      permanent: false, service: 'compute',
    });
  });

  it('min-max instance counts still read as their upper bound', () => {
    expect(parseQuotaMessage('Quota exceeded for instances: Requested 1-3, but already used 9 of 10 instances')?.resources).toEqual([
      { name: 'instances', requested: 3, used: 9, allowed: 10 },
    ]);
  });

  it.each([
    'Kontingent überschritten für cores: Angefordert 2, aber bereits 514 von 515 cores verwendet',
    "Policy doesn't allow os_compute_api:servers:create to be performed.",
    'Maximum number of instances exceeded',
  ])('%j is not a quota message', (message) => {
    expect(parseQuotaMessage(message)).toBeUndefined();
  });

  it('no parsed number is ever NaN across 200 mangled variants', () => {
    const base = 'Quota exceeded for cores, ram: Requested 2, 2048, but already used 9, 1000 of 10, 4096 cores, ram';
    const junk = [' ', ',', '-', '.', 'x', '1', '٣', '\u00a0'];
    for (let i = 0; i < 200; i++) {
      const at = (i * 37) % base.length;
      const message = base.slice(0, at) + junk[i % junk.length]! + base.slice(at + (i % 3));
      for (const r of parseQuotaMessage(message)?.resources ?? []) {
        expect([r.requested, r.used, r.allowed].every(Number.isInteger), `${message} → ${JSON.stringify(r)}`).toBe(true);
      }
    }
  });
});
