/**
 * Microversion negotiation under faults (`src/nova/versionDiscovery.ts`, `request.ts`, `client.ts`):
 * the version document is waited for within each call's own time limit (at most half of what is
 * left, at most 5 s) and the call goes on at 2.1 with the rest; a 200 that is no version document is
 * a failed read (read again after a minute); a 406 to the negotiated microversion is answered by
 * Nova's stated maximum and one more try; versions are kept in canonical form; the document is read
 * at most once a minute whatever happens. All on fake timers with FakeNova.
 */
import { describe, expect, it } from 'vitest';
import { NovaApiError } from '../../src/index.js';
import { classifyVersionDocument, parseVersionDocument, rangeOf406 } from '../../src/nova/microversion.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, rejection, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const HANG = { method: 'GET', path: '/', hang: true, times: Number.POSITIVE_INFINITY } as const;
const reads = (nova: FakeNova): number => nova.requestsTo('GET', '/').length;
const body = { name: 'mv', flavorRef: '1', imageRef: 'img' };

/** `p` settled on the fake clock, and how long it took (fake ms). */
async function timed<T>(p: Promise<T>): Promise<{ ms: number; value?: T; error?: Error }> {
  const start = Date.now();
  try {
    const value = await settle(p);
    return { ms: Date.now() - start, value };
  } catch (error) {
    return { ms: Date.now() - start, error: error as Error };
  }
}

describe('the version document is read within the call\'s own time limit', () => {
  it('listServers with tags and timeoutMs 1000 on a client of requestTimeoutMs 60000: settles by 1000 ms, listed at 2.26', async () => {
    const nova = await startNova();
    nova.inject(HANG);
    nova.addServer();
    const c = clientFor(nova, { microversion: undefined, requestTimeoutMs: 60_000 });

    const r = await timed(c.listServers({ tags: 'a' }, { timeoutMs: 1000 }));

    expect(r.error).toBeUndefined();
    expect(r.ms).toBeLessThanOrEqual(1000);
    expect(nova.requestsTo('GET', '/servers/detail')).toHaveLength(1);
  });

  it('createServer with requestTimeoutMs 1000 on a client of requestTimeoutMs 60000: created by 1000 ms (at 2.1)', async () => {
    const nova = await startNova();
    nova.inject(HANG);
    const c = clientFor(nova, { microversion: undefined, requestTimeoutMs: 60_000 });

    const r = await timed(c.createServer(body, { requestTimeoutMs: 1000 }));

    expect(r.error).toBeUndefined();
    expect(r.ms).toBeLessThanOrEqual(1000);
    expect(nova.getServerState(r.value!.id)).toBeDefined();
  });

  it('a signal that aborts while the document is read ends the call with an AbortError, nothing sent but the read', async () => {
    const nova = await startNova();
    nova.inject(HANG);
    const c = clientFor(nova, { microversion: undefined });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const r = await timed(c.createServer(body, { signal: ac.signal }));
    expect(r.error?.name).toBe('AbortError');
    expect(r.ms).toBeLessThanOrEqual(300);
    expect(nova.requestsTo('POST', '/servers')).toEqual([]);
  });
});

describe('a short-deadline call goes on at 2.1 within its own time', () => {
  it('deleteServer wait timeoutMs 10000, document hanging, default requestTimeoutMs: the DELETE is sent and the server deleted', async () => {
    const nova = await startNova();
    nova.inject(HANG);
    const id = nova.addServer().id;
    const c = clientFor(nova, { microversion: undefined });

    const r = await timed(c.deleteServer(id, { wait: true, timeoutMs: 10_000, intervalMs: 500 }));

    expect(r.error).toBeUndefined();
    expect(r.value!.outcome).toBe('deleted');
    expect(r.ms).toBeLessThanOrEqual(10_000);
    expect(nova.requestsTo('DELETE', `/servers/${id}`)).toHaveLength(1);
    expect(reads(nova)).toBe(1);
  });

  it('getLimits with requestTimeoutMs 1000, no retry: answered by 1000 ms, never "GET /limits timed out" unsent', async () => {
    const nova = await startNova();
    nova.inject(HANG);
    const c = clientFor(nova, { microversion: undefined });

    const r = await timed(c.getLimits({ requestTimeoutMs: 1000, retry: false }));

    expect(r.error).toBeUndefined();
    expect(r.value!.absolute).toEqual(expect.any(Object));
    expect(r.ms).toBe(500); // half the attempt's time for the document, the rest for /limits
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
  });

  it('a time-out of /limits itself still names /limits (it was sent)', async () => {
    const nova = await startNova();
    nova.inject(HANG);
    nova.inject({ method: 'GET', path: '/limits', hang: true });
    const c = clientFor(nova, { microversion: undefined });
    const r = await timed(c.getLimits({ requestTimeoutMs: 1000, retry: false }));
    expect(r.error?.message).toMatch(/GET \S+\/limits/);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
  });
});

describe('a 200 that is not a version document is a failed read', () => {
  for (const [what, page] of [
    ['an HTML maintenance page', '<html><body>Down for maintenance</body></html>'],
    ['{}', {}],
    ['a version that is not 2.<minor>', { version: { id: 'v2.1', version: 'soon', min_version: '2.1' } }],
  ] as const) {
    it(`${what}: the call goes at 2.1 (networks none at 2.37), and the document is read again after a minute`, async () => {
      const nova = await startNova();
      nova.inject({ method: 'GET', path: '/', status: 200, body: page });
      const c = clientFor(nova, { microversion: undefined });

      await expect(settle(c.createServer({ ...body, networks: 'none' }))).resolves.toMatchObject({ id: expect.any(String) });
      expect(c.microversion).toBe('2.1');
      await settle(c.getLimits());
      expect(reads(nova)).toBe(1); // not again within the minute

      await settle(new Promise((r) => setTimeout(r, 60_000)));
      expect(await settle(c.resolveMicroversion())).toBe('2.93');
      expect(reads(nova)).toBe(2);
    });
  }

  it('a Nova before microversions ("version": "") is a document: 2.1 for the client\'s life, read once', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/', status: 200, body: { version: { id: 'v2.0', version: '', min_version: '' } } });
    const c = clientFor(nova, { microversion: undefined });
    expect(await settle(c.resolveMicroversion())).toBe('2.1');
    await settle(new Promise((r) => setTimeout(r, 120_000)));
    expect(await settle(c.resolveMicroversion())).toBe('2.1');
    expect(reads(nova)).toBe(1);
  });
});

describe('a 406 to the negotiated microversion', () => {
  it('a document that said 2.93 to a Nova of 2.79: Nova\'s stated maximum is taken, the DELETE sent again once, the server deleted', async () => {
    const nova = await startNova({ maxMicroversion: '2.79' });
    nova.inject({ method: 'GET', path: '/', status: 200, body: { version: { id: 'v2.1', version: '2.93', min_version: '2.1' } } });
    const id = nova.addServer().id;
    const c = clientFor(nova, { microversion: undefined });

    const r = await timed(c.deleteServer(id, { wait: true, intervalMs: 500 }));

    expect(r.error).toBeUndefined();
    expect(r.value!.outcome).toBe('deleted');
    expect(c.microversion).toBe('2.79');
    expect(nova.requestsTo('DELETE', `/servers/${id}`)).toHaveLength(2); // 406 at 2.93, 204 at 2.79
    await expect(settle(c.getLimits())).resolves.toMatchObject({ absolute: expect.any(Object) });
    await expect(settle(c.createServer({ ...body, networks: 'none' }))).resolves.toMatchObject({ id: expect.any(String) });
    expect(reads(nova)).toBe(1);
  });

  it('a create and a tags listing refused at 2.93 are sent again once at 2.79', async () => {
    const nova = await startNova({ maxMicroversion: '2.79' });
    const doc = { version: { id: 'v2.1', version: '2.93', min_version: '2.1' } };
    nova.inject({ method: 'GET', path: '/', status: 200, body: doc });
    const c = clientFor(nova, { microversion: undefined });
    await expect(settle(c.createServer({ ...body, networks: 'none' }))).resolves.toMatchObject({ id: expect.any(String) });
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(2);

    const nova2 = await startNova({ maxMicroversion: '2.79' });
    nova2.inject({ method: 'GET', path: '/', status: 200, body: doc });
    const c2 = clientFor(nova2, { microversion: undefined });
    await expect(settle(c2.listServers({ tags: 'a' }))).resolves.toEqual([]);
    expect(nova2.requestsTo('GET', '/servers/detail')).toHaveLength(2);
    expect(c2.microversion).toBe('2.79');
  });

  it('a 406 that names no range: 2.1 until the document is read again, not sooner than a minute after the last read', async () => {
    const nova = await startNova();
    const c = clientFor(nova, { microversion: undefined });
    expect(await settle(c.resolveMicroversion())).toBe('2.93');
    nova.inject({ method: 'GET', path: '/limits', status: 406, body: { computeFault: { code: 406, message: 'Not Acceptable' } } });

    await expect(settle(c.getLimits())).resolves.toMatchObject({ absolute: expect.any(Object) });
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(2);
    expect(c.microversion).toBe('2.1');
    await settle(c.getLimits());
    expect(reads(nova)).toBe(1);

    await settle(new Promise((r) => setTimeout(r, 60_000)));
    await settle(c.getLimits());
    expect(reads(nova)).toBe(2);
    expect(c.microversion).toBe('2.93');
  });

  it('a POST refused by a 406 that names no range (something in front of Nova) is not sent again: one POST, the 406 thrown', async () => {
    const nova = await startNova();
    const c = clientFor(nova, { microversion: undefined, retry: false });
    expect(await settle(c.resolveMicroversion())).toBe('2.93');
    nova.inject({ method: 'POST', path: '/servers', status: 406, body: { computeFault: { code: 406, message: 'Not Acceptable' } } });
    const e = await rejection(settle(c.createServer({ name: 'x', flavorRef: '1', imageRef: 'cirros', networks: 'none' })));
    expect((e as NovaApiError).status).toBe(406);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(1);
    expect(nova.listServerStates()).toHaveLength(0);
  });

  it('a pinned client\'s 406 is the user\'s error: not sent again, the document never read', async () => {
    const nova = await startNova({ maxMicroversion: '2.79' });
    const c = clientFor(nova, { microversion: '2.93', retry: false });
    const e = await rejection(settle(c.getLimits()));
    expect(e).toBeInstanceOf(NovaApiError);
    expect((e as NovaApiError).status).toBe(406);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
    expect(reads(nova)).toBe(0);
  });
});

describe('version strings', () => {
  it('"2.60\\n" is kept as "2.60"', async () => {
    const nova = await startNova({ maxMicroversion: '2.60' });
    nova.inject({ method: 'GET', path: '/', status: 200, body: { version: { id: 'v2.1', version: '2.60\n', min_version: ' 2.1 ' } } });
    const c = clientFor(nova, { microversion: undefined });
    expect(await settle(c.resolveMicroversion())).toBe('2.60');
    expect(c.microversion).toBe('2.60');
    expect(parseVersionDocument({ version: { id: 'v2.1', version: ' 2.060 ' } })).toBeUndefined();
  });

  it('a maximum below the minimum: Nova\'s minimum when the client knows it, else a failed read', () => {
    expect(parseVersionDocument({ version: { id: 'v2.1', version: '2.1', min_version: '2.5' } })).toEqual({ min: '2.5', max: '2.5' });
    expect(classifyVersionDocument({ version: { id: 'v2.1', version: '2.1', min_version: '2.95' } })).toEqual({ kind: 'invalid', why: 'its maximum 2.1 is below its minimum 2.95' });
    expect(classifyVersionDocument({})).toMatchObject({ kind: 'invalid' });
    expect(classifyVersionDocument('<html>')).toMatchObject({ kind: 'invalid' });
    expect(classifyVersionDocument({ version: { id: 'v2.0', version: '' } })).toEqual({ kind: 'none' });
  });

  it('a document with max below min (2.1 < 2.5) is spoken to at 2.5', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/', status: 200, body: { version: { id: 'v2.1', version: '2.1', min_version: '2.5' } } });
    const c = clientFor(nova, { microversion: undefined });
    expect(await settle(c.resolveMicroversion())).toBe('2.5');
  });

  it("Nova's range from its 406 message", () => {
    expect(rangeOf406('Version 2.93 is not supported by the API. Minimum is 2.1 and maximum is 2.79.')).toEqual({ min: '2.1', max: '2.79' });
    expect(rangeOf406('Not Acceptable')).toBeUndefined();
  });
});

describe('a slow Nova gets no more requests', () => {
  it('document hanging, 30 short calls over 59 s: one read; one more after the minute', async () => {
    const nova = await startNova();
    nova.inject(HANG);
    const c = clientFor(nova, { microversion: undefined });
    for (let i = 0; i < 30; i++) {
      await settle(c.getLimits({ requestTimeoutMs: 400 }));
      await settle(new Promise((r) => setTimeout(r, 1_500)));
    }
    expect(reads(nova)).toBe(1);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(30);
    await settle(new Promise((r) => setTimeout(r, 20_000)));
    await settle(c.getLimits({ requestTimeoutMs: 400 }));
    expect(reads(nova)).toBe(2);
  });

  it('406s that name no range from a Nova that keeps refusing: the document at most once a minute', async () => {
    const nova = await startNova();
    const c = clientFor(nova, { microversion: undefined });
    nova.inject({ method: 'GET', path: '/limits', status: 406, body: { computeFault: { code: 406, message: 'Not Acceptable' } }, times: Number.POSITIVE_INFINITY });
    for (let i = 0; i < 10; i++) {
      await settle(c.getLimits()).catch(() => undefined);
      await settle(new Promise((r) => setTimeout(r, 10_000)));
    }
    // 100 s: the first read, and at most one a minute after it.
    expect(reads(nova)).toBeLessThanOrEqual(2);
  });
});
