/**
 * An `AbortError` thrown by the delete functions for one server names it (`serverId`): whether the
 * signal was aborted before the call, during the DELETE, or during the wait; for `deleteServers`,
 * each server's rejection names its own server.
 */
import { describe, expect, it } from 'vitest';
import { AbortError, waitForDelete } from '../../src/index.js';
import { clientFor, rejection, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const WAIT = { intervalMs: 20, jitter: 0, timeoutMs: 5000 } as const;

/** An AbortController aborted after `ms` fake ms. */
function abortAfter(ms: number): AbortController {
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error('caller gave up')), ms);
  return ac;
}

describe('AbortError names the server', () => {
  it('deleteServer, signal aborted before the call: AbortError with serverId, no request', async () => {
    const nova = await startNova();
    const id = nova.addServer({ name: 'ci-1' }).id;
    const client = clientFor(nova);
    const e = await rejection(client.deleteServer(id, { signal: AbortSignal.abort(), wait: true }));
    expect(e).toBeInstanceOf(AbortError);
    expect((e as AbortError).serverId).toBe(id);
    expect(e.message).toContain(id);
    expect(nova.requests).toHaveLength(0);
  });

  it('deleteServer, aborted while the DELETE hangs: AbortError with serverId', async () => {
    const nova = await startNova();
    const id = nova.addServer({ name: 'ci-1' }).id;
    const client = clientFor(nova, { requestTimeoutMs: 10_000 });
    nova.inject({ method: 'DELETE', path: `/servers/${id}`, hang: true, times: 1 });
    const e = await rejection(settle(client.deleteServer(id, { ...WAIT, wait: true, signal: abortAfter(50).signal })));
    expect(e).toBeInstanceOf(AbortError);
    expect((e as AbortError).serverId).toBe(id);
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
  });

  it('deleteServer, aborted during the wait: AbortError with serverId', async () => {
    const nova = await startNova({ deleteDelayMs: 10_000 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    const client = clientFor(nova);
    const e = await rejection(settle(client.deleteServer(id, { ...WAIT, wait: true, signal: abortAfter(100).signal })));
    expect(e).toBeInstanceOf(AbortError);
    expect((e as AbortError).serverId).toBe(id);
    expect((e as AbortError).cause).toEqual(new Error('caller gave up'));
  });

  it('waitForDelete, aborted before the call and during the wait: AbortError with serverId', async () => {
    const nova = await startNova({ deleteDelayMs: 10_000 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    const client = clientFor(nova);
    const before = await rejection(waitForDelete(client, id, { ...WAIT, signal: AbortSignal.abort() }));
    expect(before).toBeInstanceOf(AbortError);
    expect((before as AbortError).serverId).toBe(id);
    await settle(client.requestDelete(id));
    const during = await rejection(settle(waitForDelete(client, id, { ...WAIT, signal: abortAfter(100).signal })));
    expect(during).toBeInstanceOf(AbortError);
    expect((during as AbortError).serverId).toBe(id);
    expect(during.message).toContain(id);
  });

  it('deleteServers, aborted during the waits: each rejection names its own server', async () => {
    const nova = await startNova({ deleteDelayMs: 10_000 });
    const ids = [nova.addServer({ name: 'ci-1' }).id, nova.addServer({ name: 'ci-2' }).id];
    const client = clientFor(nova);
    const r = await settle(client.deleteServers(ids, { ...WAIT, wait: true, signal: abortAfter(100).signal }));
    expect(r.results.map((x) => (x.status === 'rejected' ? [x.serverId, x.reason.constructor.name, (x.reason as AbortError).serverId] : [x.serverId, 'fulfilled']))).toEqual(
      ids.map((id) => [id, 'AbortError', id]),
    );
  });
});
