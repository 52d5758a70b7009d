/** One spelling of a Nova endpoint: the scope of a quota ledger compares equal across spellings. */
import { describe, expect, it } from 'vitest';
import { ledgerScope, normaliseEndpoint, sameScope } from '../../src/core/endpoint.js';

describe('normaliseEndpoint', () => {
  it('lower-cases scheme and host, drops the default port, trailing slashes and a trailing /<project>', () => {
    expect(normaliseEndpoint('HTTPS://Nova.Example.COM:443/v2.1/')).toBe('https://nova.example.com/v2.1');
    expect(normaliseEndpoint('http://nova.example:80/v2.1//')).toBe('http://nova.example/v2.1');
    expect(normaliseEndpoint('http://nova.example:8774/v2.1')).toBe('http://nova.example:8774/v2.1');
    expect(normaliseEndpoint('http://nova.example:8774/v2.1/p1/', 'p1')).toBe('http://nova.example:8774/v2.1');
    expect(normaliseEndpoint('not a url/')).toBe('not a url');
  });

  it('sameScope: the same endpoint spelt two ways is one scope; another port, path or project is not', () => {
    const a = ledgerScope('http://nova.example:8774/v2.1', 'p1');
    expect(sameScope(a, ledgerScope('HTTP://NOVA.example:8774/v2.1/', 'p1'))).toBe(true);
    expect(sameScope(a, ledgerScope('http://nova.example:8774/v2.1/p1', 'p1'))).toBe(true);
    expect(sameScope(ledgerScope('https://nova.example/v2.1', 'p1'), ledgerScope('https://nova.example:443/v2.1', 'p1'))).toBe(true);
    expect(sameScope(a, ledgerScope('http://nova.example:8775/v2.1', 'p1'))).toBe(false);
    expect(sameScope(a, ledgerScope('http://nova.example:8774/compute/v2.1', 'p1'))).toBe(false);
    expect(sameScope(a, ledgerScope('http://nova.example:8774/v2.1', 'p2'))).toBe(false);
  });
});
