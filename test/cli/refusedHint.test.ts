/**
 * `refusedHint` (src/cli/common.ts): the hint a refused connection gets names the service that
 * refused it. A refused Keystone asked "is Nova running at http://.../v3/auth/tokens?".
 */
import { describe, expect, it } from 'vitest';
import { refusedHint } from '../../src/cli/common.js';
import { NovaNetworkError } from '../../src/errors/index.js';

const refused = (url: string): NovaNetworkError => new NovaNetworkError({ message: `POST ${url} failed without a response: ECONNREFUSED`, status: 0, method: 'POST', url, code: 'ECONNREFUSED' });

describe('refusedHint', () => {
  it("names Keystone, at its identity endpoint, for Keystone's token request", () => {
    expect(refusedHint(refused('http://127.0.0.1:1/v3/auth/tokens'))).toBe('; is Keystone running at http://127.0.0.1:1/v3?');
    expect(refusedHint(refused('https://user:pw@keystone.example:5000/identity/v3/auth/tokens'))).toBe('; is Keystone running at https://keystone.example:5000/identity/v3?');
  });

  it('names Nova, at its compute endpoint, for a compute request', () => {
    expect(refusedHint(refused('http://127.0.0.1:1/v2.1/servers/detail'))).toBe('; is Nova running at http://127.0.0.1:1/v2.1?');
    expect(refusedHint(refused('http://127.0.0.1:1/v2.1/limits'))).toBe('; is Nova running at http://127.0.0.1:1/v2.1?');
  });

  it('is empty for anything but a refused connection', () => {
    expect(refusedHint(new NovaNetworkError({ message: 'reset', status: 0, method: 'GET', url: 'http://127.0.0.1:1/v2.1/limits', code: 'ECONNRESET' }))).toBe('');
    expect(refusedHint(new Error('x'))).toBe('');
  });
});
