/**
 * Microversions negotiated as openstacksdk does (`src/nova/microversion.ts`, `versionDiscovery.ts`):
 * an unpinned client reads FakeNova's version document once and speaks the highest microversion both
 * know; a pinned one never reads it; a feature that needs more than the microversion a call goes at
 * fails before the request with a message naming it; a version document that cannot be read costs one
 * request a minute at most and never fails a call (it goes at 2.1).
 */
import type { AxiosAdapter, InternalAxiosRequestConfig } from 'axios';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BadRequestError, NovaClient, ValidationError } from '../../src/index.js';
import { CLIENT_MAX_MICROVERSION, parseVersionDocument, pickMicroversion, versionDocumentUrl } from '../../src/nova/microversion.js';
import type { FakeNova } from '../../src/testing/index.js';
import { T0, clientFor, rejection, settle, startNova } from '../helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

/** The fake's adapter, recording the compute microversion header of each request (`-` when none). */
function recording(nova: FakeNova): { adapter: AxiosAdapter; sent: Array<{ url: string; version: string }> } {
  const sent: Array<{ url: string; version: string }> = [];
  const adapter: AxiosAdapter = (config: InternalAxiosRequestConfig) => {
    const h = config.headers.get('OpenStack-API-Version');
    sent.push({ url: String(config.url), version: typeof h === 'string' ? h : '-' });
    return nova.adapter(config);
  };
  return { adapter, sent };
}

/** A client of `nova` without a pinned microversion. */
function unpinned(nova: FakeNova, adapter: AxiosAdapter = nova.adapter): NovaClient {
  return clientFor(nova, { microversion: undefined, adapter });
}

const versionDocReads = (nova: FakeNova): number => nova.requestsTo('GET', '/').length;

describe('microversion negotiation', () => {
  it("networks: 'none' without a pinned microversion: the client speaks the highest both know and Nova takes it", async () => {
    const nova = await startNova();
    const { adapter, sent } = recording(nova);
    const client = unpinned(nova, adapter);

    const server = await client.createServer({ name: 'mv', flavorRef: '1', imageRef: 'img', networks: 'none' });

    expect(server.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(versionDocReads(nova)).toBe(1);
    expect(sent.map((s) => s.version)).toEqual(['-', `compute ${CLIENT_MAX_MICROVERSION}`]);
    expect(sent[0]!.url).toBe(`${nova.url}/v2.1/`);
    expect(client.microversion).toBe('2.93');
    expect(await client.resolveMicroversion()).toBe('2.93');
  });

  it('a Nova newer than the client is spoken to at the client maximum; an older one at its own maximum', async () => {
    const newer = await startNova({ maxMicroversion: '2.96' });
    const older = await startNova({ maxMicroversion: '2.60' });
    expect(await unpinned(newer).resolveMicroversion()).toBe(CLIENT_MAX_MICROVERSION);
    expect(await unpinned(older).resolveMicroversion()).toBe('2.60');
  });

  it('pinned to 2.1: networks none fails before any request, naming 2.37 and the pin', async () => {
    const nova = await startNova();
    const client = clientFor(nova, { microversion: '2.1' });

    const e = await rejection(client.createServer({ name: 'mv', flavorRef: '1', imageRef: 'img', networks: 'none' }));

    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe("networks: 'none' needs compute microversion 2.37 or later; this client is pinned to 2.1");
    expect(nova.requests).toEqual([]);
  });

  it("a call pinned below the feature's microversion fails before its request too", async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const e = await rejection(client.createServer({ name: 'mv', flavorRef: '1', imageRef: 'img', networks: 'auto' }, { microversion: '2.36' }));
    expect(e.message).toBe("networks: 'auto' needs compute microversion 2.37 or later; this call is pinned to 2.36");
    const f = await rejection(client.listServers({ 'changes-before': '2026-01-01T00:00:00Z' }, { microversion: '2.65' }));
    expect(f.message).toBe('the changes-before filter needs compute microversion 2.66 or later; this call is pinned to 2.65');
    expect(nova.requests).toEqual([]);
  });

  it('a Nova whose maximum is below the feature: fails before the POST, naming what Nova supports', async () => {
    const nova = await startNova({ maxMicroversion: '2.25' });
    const client = unpinned(nova);

    const e = await rejection(client.createServer({ name: 'mv', flavorRef: '1', imageRef: 'img', tags: ['a'] }));

    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toMatch(/^tags needs compute microversion 2\.52 or later; Nova at \S+ supports 2\.1 to 2\.25$/);
    expect(nova.requestsTo('POST', '/servers')).toEqual([]);
  });

  it('FakeNova enforces the microversion as Nova does: networks none below 2.37 is its 400, a version above its maximum 406', async () => {
    const nova = await startNova();
    const e = await rejection(clientFor(nova, { microversion: '2.1' }).request({ method: 'POST', path: '/servers', body: { server: { name: 'x', flavorRef: '1', imageRef: 'img', networks: 'none' } } }));
    expect(e).toBeInstanceOf(BadRequestError);
    expect(e.message).toContain("'none' is not of type 'array'");
    const f = await rejection(clientFor(nova, { microversion: '2.94', retry: false }).getLimits());
    expect((f as { status?: number }).status).toBe(406);
    expect(f.message).toContain('Version 2.94 is not supported by the API. Minimum is 2.1 and maximum is 2.93.');
  });

  it('an unpinned create without networks gets networks auto (Nova requires the field from 2.37), as openstacksdk sends it', async () => {
    const nova = await startNova();
    const server = await unpinned(nova).createServer({ name: 'mv', flavorRef: '1', imageRef: 'img' });
    expect(nova.getServerState(server.id)).toBeDefined();
  });

  it('20 concurrent calls: the version document is read once, and each call goes at the negotiated microversion', async () => {
    const nova = await startNova();
    const { adapter, sent } = recording(nova);
    const client = unpinned(nova, adapter);

    await Promise.all(Array.from({ length: 20 }, () => client.getLimits()));
    await client.listServers();

    expect(versionDocReads(nova)).toBe(1);
    expect(sent.filter((s) => s.version === '-')).toHaveLength(1);
    expect(sent.filter((s) => s.version === 'compute 2.93')).toHaveLength(21);
    expect(client.stats.requests).toBe(22);
  });

  it('pinned: the version document is never read', async () => {
    const nova = await startNova();
    const client = clientFor(nova, { microversion: '2.79' });
    await Promise.all(Array.from({ length: 5 }, () => client.getLimits()));
    expect(versionDocReads(nova)).toBe(0);
    expect(client.stats.requests).toBe(5);
  });

  it('a 503 on the version document: the delete wait goes on at 2.1 and succeeds; no re-read within a minute, one after', async () => {
    vi.useFakeTimers({ now: T0 });
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/', status: 503, times: Number.POSITIVE_INFINITY });
    const { adapter, sent } = recording(nova);
    const client = unpinned(nova, adapter);
    const id = nova.addServer().id;

    const result = await settle(client.deleteServer(id, { wait: true, intervalMs: 100 }));

    expect(result.outcome).toBe('deleted');
    expect(versionDocReads(nova)).toBe(1); // one read, not retried, not repeated by each poll
    expect(sent.filter((s) => s.version !== '-').every((s) => s.version === 'compute 2.1' || s.version === 'compute 2.69')).toBe(true);
    expect(client.microversion).toBe('2.1');

    // networks none, document unread: the call goes at the lowest microversion that has it (2.37), and Nova takes it.
    await expect(client.createServer({ name: 'mv', flavorRef: '1', imageRef: 'img', networks: 'none' })).resolves.toMatchObject({ id: expect.any(String) });
    expect(versionDocReads(nova)).toBe(1);

    await vi.advanceTimersByTimeAsync(60_000);
    nova.clearFaults();
    expect(await settle(client.resolveMicroversion())).toBe('2.93');
    expect(versionDocReads(nova)).toBe(2);
    await settle(client.getLimits());
    expect(versionDocReads(nova)).toBe(2);
  });

  it('a caller that aborts while the document is read does not fail the others; nobody waiting aborts the read', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/', delayMs: 200 });
    const client = unpinned(nova);
    const ac = new AbortController();
    const aborted = client.getLimits({ signal: ac.signal });
    const other = client.getLimits();
    ac.abort();
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    await expect(other).resolves.toMatchObject({ absolute: expect.any(Object) });
    expect(versionDocReads(nova)).toBe(1);
  });
});

describe('a version document that hangs', () => {
  it('the read gives up at half the requestTimeoutMs: the call goes on at 2.1 within its own limit, and the next calls do not read it again for a minute', async () => {
    vi.useFakeTimers({ now: T0 });
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/', hang: true, times: Number.POSITIVE_INFINITY });
    const client = clientFor(nova, { microversion: undefined, requestTimeoutMs: 1000, retry: false });

    const start = Date.now();
    await settle(client.getLimits());
    expect(Date.now() - start).toBe(500);
    for (let i = 0; i < 5; i++) await settle(client.getLimits());

    expect(versionDocReads(nova)).toBe(1);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(6);
    expect(client.microversion).toBe('2.1');
  });

  it('callers that all end first (an abort) abandon the read; it counts as failed, so the next call does not read it again', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/', hang: true, times: Number.POSITIVE_INFINITY });
    const client = unpinned(nova);
    const ac = new AbortController();
    const call = client.getLimits({ signal: ac.signal });
    await new Promise((r) => setTimeout(r, 20));
    ac.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    await client.getLimits();
    expect(versionDocReads(nova)).toBe(1);
  });
});

describe('version documents and the choice', () => {
  it('reads both document shapes; a Nova without microversions or above the client names none', () => {
    expect(parseVersionDocument({ version: { id: 'v2.1', version: '2.79', min_version: '2.1' } })).toEqual({ min: '2.1', max: '2.79' });
    expect(parseVersionDocument({ versions: [{ id: 'v2.0', version: '' }, { id: 'v2.1', version: '2.93', min_version: '2.1' }] })).toEqual({ min: '2.1', max: '2.93' });
    expect(parseVersionDocument({ version: { id: 'v2.0', version: '' } })).toBeUndefined();
    expect(parseVersionDocument('<html>proxy</html>')).toBeUndefined();
    expect(pickMicroversion({ min: '2.1', max: '2.100' })).toBe('2.93');
    expect(pickMicroversion({ min: '2.1', max: '2.60' })).toBe('2.60');
    expect(pickMicroversion({ min: '2.95', max: '2.100' })).toBeUndefined();
    expect(pickMicroversion(undefined)).toBeUndefined();
  });

  it('the document is at the /v2.1/ root, the project id left out', () => {
    expect(versionDocumentUrl('http://nova:8774/v2.1')).toBe('http://nova:8774/v2.1/');
    expect(versionDocumentUrl('http://nova:8774/v2.1/3f2a')).toBe('http://nova:8774/v2.1/');
    expect(versionDocumentUrl('https://cloud/compute/v2.1/')).toBe('https://cloud/compute/v2.1/');
    expect(versionDocumentUrl('https://cloud/compute')).toBe('https://cloud/compute/');
  });
});
