/**
 * docs/quota-guard.md's table of options names every option `QuotaGuard` takes: the names are read
 * from the guard's own refusal of an unknown option ("known options: ..."), so an option added to
 * the spec without a row in the table fails here (found by a new user: `lostCreateSearches` was
 * taken and validated but had no row).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NovaClient } from '../../src/client.js';
import { ValidationError } from '../../src/errors/index.js';
import { QuotaGuard } from '../../src/guard/index.js';

const DOC = new URL('../../docs/quota-guard.md', import.meta.url);

function knownOptions(): string[] {
  const client = new NovaClient({ endpoint: 'http://127.0.0.1:1/v2.1', token: 'admin:demo' });
  try {
    new QuotaGuard(client, { notAnOption: 1 } as never);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    const m = /known options: (.*)$/.exec((e as Error).message);
    expect(m, (e as Error).message).not.toBeNull();
    return m![1]!.split(', ');
  }
  throw new Error('an unknown option was taken');
}

describe('docs/quota-guard.md: the options table', () => {
  it('has a row for every option QuotaGuard takes', () => {
    const names = knownOptions();
    expect(names.length).toBeGreaterThan(20);
    const rows = new Set([...readFileSync(DOC, 'utf8').matchAll(/^\| `([A-Za-z]+)(?:\([^)]*\))?` \|/gm)].map((m) => m[1]!));
    expect(names.filter((n) => !rows.has(n))).toEqual([]);
  });
});
