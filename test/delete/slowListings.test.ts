/**
 * Shared polling under slow listings, on fake timers against a scripted Nova: a server missing from
 * a slow `changes-since` listing is looked at by its own GET at once, not after the brief listing
 * that confirms the servers seen DELETED (which may take until the deadline).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NovaClient, waitForDelete } from '../../src/index.js';
import { ScriptedNova } from './support/scriptedNova.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a slow brief listing does not hold back the GETs of servers missing from the status listing', () => {
  it('a server Nova no longer knows ends deleted by its own GET while the brief listing hangs', async () => {
    const nova = new ScriptedNova();
    nova.add('00000000-0000-4000-8000-000000000000', { unknown: true }); // answers 404 to everything
    nova.add('00000001-0000-4000-8000-000000000000', { deletedAfterMs: 0 }); // DELETED from the start: confirmed by the brief listing
    nova.add('00000002-0000-4000-8000-000000000000', { deletedAfterMs: 0 });
    const slow = { '/servers/detail': 500, '/servers': 1000 } as Record<string, number>;
    nova.fault = ({ method, path, listing }) => (method === 'GET' && listing ? { kind: 'delay', ms: slow[path]! } : undefined);
    const client = new NovaClient({ endpoint: 'http://nova.test/v2.1', token: 'admin:p', adapter: nova.adapter, coalesce: true, requestTimeoutMs: 1000, maxRequestsPerSecond: Number.POSITIVE_INFINITY });
    const ends: Array<[string, string, number]> = [];
    // s0 gets no DELETE: its 404 would be checked by a brief listing, and the engine sends one listing
    // at a time, so that check (slow here) would hold the status listing back.
    for (const id of ['00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000']) {
      void client.requestDelete(id).catch(() => undefined);
    }
    await vi.advanceTimersByTimeAsync(0);
    const waits = ['00000000-0000-4000-8000-000000000000', '00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000'].map((id) =>
      waitForDelete(client, id, { intervalMs: 200, timeoutMs: 1500, jitter: 0 }).then(
        (r) => void ends.push([id, r.outcome, Date.now() - T0]),
        (e: unknown) => void ends.push([id, (e as Error).name, Date.now() - T0]),
      ),
    );
    await vi.advanceTimersByTimeAsync(3000);
    await Promise.all(waits);
    // The status listing answers at 500 ms without s0: its GET goes out then, beside the brief listing.
    const s0 = nova.seen.filter((q) => q.method === 'GET' && q.serverId === '00000000-0000-4000-8000-000000000000');
    expect(s0.map((q) => q.at - T0)[0]).toBe(500);
    expect(ends.find(([id]) => id === '00000000-0000-4000-8000-000000000000')).toEqual(['00000000-0000-4000-8000-000000000000', 'deleted', 500]);
  });
});
