/** The Redis ledger's option and load errors, without a redis-server. */
import { describe, expect, it } from 'vitest';
import { ioredisLoadError, loadIoredis } from '../../src/redis/connection.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { ConfigError, LedgerConfigError, ValidationError } from '../../src/errors/index.js';
import { NovaClient } from '../../src/nova/index.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';

function notFound(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('ioredis is an optional peer dependency', () => {
  it.each([
    ['MODULE_NOT_FOUND', "Cannot find module 'ioredis'\nRequire stack:\n- /app/node_modules/nova-guard/dist/redis/connection.js"],
    ['ERR_MODULE_NOT_FOUND', "Cannot find package 'ioredis' imported from /app/node_modules/nova-guard/dist/redis/connection.js"],
  ])('%s for ioredis becomes a LedgerConfigError (a ConfigError) naming it and how to install it', (code, message) => {
    const cause = notFound(code, message);
    const e = ioredisLoadError(cause);
    expect(e).toBeInstanceOf(ConfigError);
    expect(e).toBeInstanceOf(LedgerConfigError);
    expect(e).toMatchObject({ kind: 'redis', reason: 'module-missing' });
    expect((e as Error).message).toBe("the Redis ledger needs the optional peer dependency ioredis (5.x), which is not installed. Fix: npm install ioredis@^5, or use ledger: 'in-process'");
    expect((e as Error).cause).toBe(cause);
    expect(() =>
      loadIoredis(() => {
        throw cause;
      }),
    ).toThrow(ConfigError);
  });

  it('any other load failure is left as it is (a dependency of ioredis missing, another error)', () => {
    const inner = notFound('MODULE_NOT_FOUND', "Cannot find module 'denque'");
    expect(ioredisLoadError(inner)).toBe(inner);
    const other = new SyntaxError('Unexpected token');
    expect(ioredisLoadError(other)).toBe(other);
  });

  it('installed (as here): loadIoredis gives the Redis class', () => {
    expect(typeof loadIoredis()).toBe('function');
    expect(loadIoredis().name).toBe('Redis');
  });
});

describe('url and redis options', () => {
  const client = new NovaClient({ endpoint: ENDPOINT, token: 'admin:demo' });

  it('forClient with url present but undefined says url is undefined', async () => {
    await expect(RedisQuotaLedger.forClient(client, { url: undefined })).rejects.toThrow(ValidationError);
    await expect(RedisQuotaLedger.forClient(client, { url: undefined })).rejects.toThrow(
      'RedisQuotaLedger: url is undefined: give url (a redis:// URL) or redis (an ioredis client)',
    );
    expect(() => new RedisQuotaLedger({ url: undefined, redis: undefined, endpoint: ENDPOINT, projectId: 'demo' })).toThrow(
      'RedisQuotaLedger: url and redis are undefined: give url (a redis:// URL) or redis (an ioredis client)',
    );
  });

  it("forClient refuses a projectId other than the client's own, before any connection", async () => {
    await expect(RedisQuotaLedger.forClient(client, { url: 'redis://127.0.0.1:1', projectId: 'another' })).rejects.toThrow(
      "RedisQuotaLedger.forClient: projectId another is not the client's project (demo); a ledger and its client serve one project",
    );
  });

  it('neither key given: exactly one of url and redis', () => {
    expect(() => new RedisQuotaLedger({ endpoint: ENDPOINT, projectId: 'demo' })).toThrow('RedisQuotaLedger needs exactly one of url and redis');
  });
});

describe('every value is checked before any connection', () => {
  it('an endpoint that is not an http(s) URL is a ValidationError naming it', () => {
    for (const endpoint of ['nova.example:8774/v2.1', 'ftp://nova.example/v2.1', 'redis://nova.example']) {
      expect(() => new RedisQuotaLedger({ url: 'redis://127.0.0.1:1', endpoint, projectId: 'p' })).toThrow(ValidationError);
      expect(() => new RedisQuotaLedger({ url: 'redis://127.0.0.1:1', endpoint, projectId: 'p' })).toThrow(/endpoint must be an http:\/\/ or https:\/\/ URL/);
    }
  });

  it('a logger that is neither pino nor has its level methods is a ValidationError, not a TypeError', () => {
    expect(() => new RedisQuotaLedger({ url: 'redis://127.0.0.1:1', endpoint: ENDPOINT, projectId: 'p', logger: { info: () => {} } as never })).toThrow(ValidationError);
    expect(() => new RedisQuotaLedger({ url: 'redis://127.0.0.1:1', endpoint: ENDPOINT, projectId: 'p', logger: { info: () => {} } as never })).toThrow(/logger must be .* warn is missing/);
  });
});
