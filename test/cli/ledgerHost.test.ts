// `server create`'s look at a Redis ledger's host name before any request (src/cli/ledgerHost.ts):
// a name that does not resolve at any look within the window is a LedgerConfigError naming the host,
// where it came from and the fix, never the password; anything else goes on. Real DNS: `.invalid`
// never resolves (RFC 6761), `localhost` always does; a short window keeps the test quick.
import { lookup } from 'node:dns/promises';
import { describe, expect, it } from 'vitest';
import { LedgerConfigError } from '../../src/errors/index.js';
import { checkLedgerHost, ledgerHostName } from '../../src/cli/ledgerHost.js';

describe('the host name of a ledger string', () => {
  it('is looked up only for a redis:// or rediss:// URL naming a host, not an IP address', () => {
    expect(ledgerHostName('redis://:pw@nosuchhost:6379/2')).toBe('nosuchhost');
    expect(ledgerHostName('rediss://user:pw@cache.example.invalid')).toBe('cache.example.invalid');
    expect(ledgerHostName('redis://127.0.0.1:6379')).toBeUndefined();
    expect(ledgerHostName('redis://[::1]:6379')).toBeUndefined();
    expect(ledgerHostName('sqlite:/tmp/x.db')).toBeUndefined();
    expect(ledgerHostName('in-process')).toBeUndefined();
  });
});

/** A resolver that answers as a DNS does for a name nobody registered (what `.invalid` gets here). */
const notRegistered = (host: string): Promise<never> => Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));

/** What this machine's resolver answers for a `.invalid` name: ENOTFOUND where a DNS answers (a machine without one answers EAI_AGAIN, which goes on). */
const systemSaysNotFound = await lookup('nosuchhost.invalid').then(
  () => false,
  (e: { code?: unknown }) => e.code === 'ENOTFOUND',
);

describe('checkLedgerHost', () => {
  it('a name that does not resolve: LedgerConfigError (host-not-found) naming the host, --ledger and the fix; the password never shown', async () => {
    const started = performance.now();
    const e = await checkLedgerHost('redis://:Pa55-w0rd-x@nosuchhost.invalid:6379', 'flag', { windowMs: 300, lookup: notRegistered }).then(
      () => undefined,
      (err: unknown) => err as LedgerConfigError,
    );
    expect(e).toBeInstanceOf(LedgerConfigError);
    expect(e).toMatchObject({ kind: 'redis', reason: 'host-not-found' });
    expect(e!.message).toBe(
      "the Redis ledger's host name nosuchhost.invalid (--ledger redis://[REDACTED]@nosuchhost.invalid:6379) does not resolve (getaddrinfo ENOTFOUND nosuchhost.invalid, looked up for 300 ms). Fix: check the host name in --ledger, or use --ledger in-process",
    );
    expect(JSON.stringify(e)).not.toContain('Pa55');
    // looked at again within the window (a Redis container may be registering its name), not longer
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('from NOVA_GUARD_LEDGER: names the variable and its fix', async () => {
    await expect(checkLedgerHost('redis://nosuchhost.invalid', 'env', { windowMs: 0, lookup: notRegistered })).rejects.toThrow(
      "the Redis ledger's host name nosuchhost.invalid (NOVA_GUARD_LEDGER redis://nosuchhost.invalid) does not resolve (getaddrinfo ENOTFOUND nosuchhost.invalid, looked up for 0 ms). Fix: check the host name in NOVA_GUARD_LEDGER, or use NOVA_GUARD_LEDGER=in-process (or unset it)",
    );
  });

  it('a DNS that fails (EAI_AGAIN) is no typo: goes on', async () => {
    const failing = (host: string): Promise<never> => Promise.reject(Object.assign(new Error(`getaddrinfo EAI_AGAIN ${host}`), { code: 'EAI_AGAIN' }));
    await expect(checkLedgerHost('redis://cache.example:6379', 'flag', { windowMs: 0, lookup: failing })).resolves.toBeUndefined();
  });

  it.skipIf(!systemSaysNotFound)('the system resolver: a .invalid name is refused as a typo', async () => {
    await expect(checkLedgerHost('redis://nosuchhost.invalid', 'flag', { windowMs: 0 })).rejects.toMatchObject({ reason: 'host-not-found' });
  });

  it('a name that resolves, an IP address, another ledger: goes on (a Redis that refuses is the guard\'s degraded mode)', async () => {
    await expect(checkLedgerHost('redis://localhost:1', 'flag', { windowMs: 300 })).resolves.toBeUndefined();
    await expect(checkLedgerHost('redis://127.0.0.1:1', 'flag')).resolves.toBeUndefined();
    await expect(checkLedgerHost('sqlite:', 'env')).resolves.toBeUndefined();
  });
});
