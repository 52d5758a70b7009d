/**
 * Option values of the wrong type are refused with a ValidationError naming the option, before any
 * request: `insecure: 'false'` (or `'no'`, `1`) must never turn TLS verification off, and `logger:
 * null` is a ValidationError, not a TypeError from deep inside.
 */
import { describe, expect, it } from 'vitest';
import { KeystoneAuth, NovaClient, QuotaGuard, ValidationError } from '../../src/index.js';

const CLIENT = { endpoint: 'https://nova.invalid/v2.1', token: 't' } as const;
const KEYSTONE = { authUrl: 'https://keystone.invalid/v3', username: 'u', password: 'pw-secret-1', projectName: 'p' } as const;

/** The error `fn` throws (it must throw). */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('did not throw');
}

describe('insecure must be a boolean: a string or number never turns TLS verification off', () => {
  it.each<unknown>(['false', 'no', 'true', 1, 0, null])('NovaClient insecure: %j is a ValidationError naming insecure', (insecure) => {
    const e = thrown(() => new NovaClient({ ...CLIENT, insecure } as never));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toContain('insecure must be a boolean');
  });

  it.each<unknown>(['false', 'no', 1])('KeystoneAuth insecure: %j is a ValidationError naming insecure', (insecure) => {
    const e = thrown(() => new KeystoneAuth({ ...KEYSTONE, insecure } as never));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toContain('insecure must be a boolean');
  });

  it('insecure true and false are taken', () => {
    expect(() => new NovaClient({ ...CLIENT, insecure: false })).not.toThrow();
    expect(() => new NovaClient({ ...CLIENT, insecure: true })).not.toThrow();
  });
});

describe('NovaClient options of the wrong type are ValidationErrors naming the option', () => {
  const BAD: Array<[string, unknown]> = [
    ['userAgent', 42],
    ['userAgent', ''],
    ['projectId', ''],
    ['projectId', 7],
    ['logger', null],
    ['logger', 'console'],
    ['logger', {}],
    ['caCert', 1],
    ['caCert', null],
    ['clientCert', {}],
    ['clientKey', true],
    ['microversion', 2.79],
  ];
  it.each(BAD)('%s: %j', (name, value) => {
    const e = thrown(() => new NovaClient({ ...CLIENT, [name]: value } as never));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toContain(name);
  });

  it('good values are taken: a Buffer CA, a console-like logger, a user agent, a project id', () => {
    const logger = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
    expect(() => new NovaClient({ ...CLIENT, caCert: Buffer.from('x'), logger, userAgent: 'ci/1', projectId: 'p1', microversion: '2.79' })).not.toThrow();
  });
});

describe('KeystoneAuth options of the wrong type are ValidationErrors naming the option', () => {
  const BAD: Array<[string, unknown]> = [
    ['logger', null],
    ['caCert', 5],
    ['clientKey', {}],
    ['interface', 3],
  ];
  it.each(BAD)('%s: %j', (name, value) => {
    const e = thrown(() => new KeystoneAuth({ ...KEYSTONE, [name]: value } as never));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toContain(name);
  });
});

describe('QuotaGuard logger', () => {
  it.each<unknown>([null, 'console', {}])('%j is a ValidationError naming logger, not a TypeError', (logger) => {
    const client = new NovaClient(CLIENT);
    const e = thrown(() => new QuotaGuard(client, { logger } as never));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toContain('logger');
  });
});
