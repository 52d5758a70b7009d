/**
 * One AbortSignal shared by many client requests. The client follows it through each request's own
 * signal (`src/core/signalFanOut.ts`), so p-retry, p-timeout and axios listen to that one and not
 * to the caller's: 50 concurrent `getServer` calls add at most one listener to the shared signal and
 * none once they settle, and print no `MaxListenersExceededWarning` (before: 50 × 3 listeners, and
 * "11 abort listeners added to [AbortSignal]"). `deleteServers` of 50 with a signal, the same. An
 * abort still ends every request with an AbortError.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { AbortError } from '../../src/index.js';
import { clientFor, settle, startNova, useFakeClock } from '../helpers.js';
import { captureListenerWarnings, nextTicks } from '../listenerWarnings.js';

useFakeClock();

const warnings = captureListenerWarnings();

const N = 50;

describe('50 client requests sharing one AbortSignal', () => {
  it('getServer × 50: no MaxListenersExceededWarning, all answered, at most one listener while in flight and none after', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: /^\/servers\/[^/]+$/, delayMs: 50, times: Number.POSITIVE_INFINITY });
    const client = clientFor(nova);
    const ids = Array.from({ length: N }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const shared = new AbortController();
    const calls = Promise.all(ids.map((id) => client.getServer(id, { signal: shared.signal })));
    await settle(new Promise((r) => setTimeout(r, 10)));
    expect(getEventListeners(shared.signal, 'abort').length).toBeLessThanOrEqual(1);
    const servers = await settle(calls);
    await nextTicks();
    expect(servers.map((s) => s.id)).toEqual(ids);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(warnings()).toEqual([]);
  });

  it('unpinned, createServer × 50 while the version document is read: no MaxListenersExceededWarning, one read, at most one listener', async () => {
    const nova = await startNova({ maxTotalInstances: N, maxTotalCores: N });
    nova.inject({ method: 'GET', path: '/', delayMs: 50 });
    const client = clientFor(nova, { microversion: undefined });
    const shared = new AbortController();
    const calls = Promise.all(Array.from({ length: N }, (_, i) => client.createServer({ name: `s${i}`, flavorRef: '1', imageRef: 'img', networks: 'none' }, { signal: shared.signal })));
    await settle(new Promise((r) => setTimeout(r, 10)));
    expect(getEventListeners(shared.signal, 'abort').length).toBeLessThanOrEqual(1);
    const servers = await settle(calls);
    await nextTicks();
    expect(servers).toHaveLength(N);
    expect(nova.requestsTo('GET', '/')).toHaveLength(1);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(warnings()).toEqual([]);
  });

  it('an abort of the shared signal ends every request in flight with AbortError, and leaves no listener', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: /^\/servers\/[^/]+$/, hang: true, times: Number.POSITIVE_INFINITY });
    const client = clientFor(nova);
    const ids = Array.from({ length: N }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const shared = new AbortController();
    const calls = Promise.all(ids.map((id) => client.getServer(id, { signal: shared.signal }).then(() => 'answered', (e: unknown) => e)));
    await settle(new Promise((r) => setTimeout(r, 10)));
    shared.abort(new Error('stop'));
    const results = await settle(calls);
    await nextTicks();
    for (const r of results) expect(r).toBeInstanceOf(AbortError);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(warnings()).toEqual([]);
  });

  it('listServers × 50: no warning, at most one listener while they run, none after', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 50, times: Number.POSITIVE_INFINITY });
    const client = clientFor(nova);
    nova.addServer({ status: 'ACTIVE' });
    const shared = new AbortController();
    const calls = Promise.all(Array.from({ length: N }, () => client.listServers({}, { signal: shared.signal })));
    await settle(new Promise((r) => setTimeout(r, 10)));
    expect(getEventListeners(shared.signal, 'abort').length).toBeLessThanOrEqual(1);
    const lists = await settle(calls);
    await nextTicks();
    expect(lists.map((l) => l.length)).toEqual(Array(N).fill(1));
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(warnings()).toEqual([]);
  });

  it('deleteServers of 50 with a signal: all deleted, no warning, no listener left', async () => {
    const nova = await startNova({ deleteDelayMs: 100 });
    const client = clientFor(nova);
    const ids = Array.from({ length: N }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const shared = new AbortController();
    const r = await settle(client.deleteServers(ids, { wait: true, intervalMs: 200, timeoutMs: 60_000, signal: shared.signal }));
    await nextTicks();
    expect(r.succeeded).toHaveLength(N);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(warnings()).toEqual([]);
  });
});
