/**
 * Nova's Retry-After is waited out by every request of a delete or a wait, polls and listings
 * included, on the clock: a DELETE answered 503 with `Retry-After: 30` is not sent again before 30 s
 * (nor is anything else), a poll's Retry-After delays the next look, a shared listing's delays the
 * engine's next listing, and a pause past the call's deadline ends it with a timeout naming it.
 * ScriptedNova on fake timers.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeleteTimeoutError, NovaClient, waitForDelete } from '../../src/index.js';
import { ScriptedNova } from './support/scriptedNova.js';
import { settle as settleOnFakeClock } from './support/hostile.js';

/** Server ids: Nova's are UUIDs, and the library refuses anything else. */
const A = '0000000a-0000-4000-8000-000000000000';
const B = '0000000b-0000-4000-8000-000000000000';
const C = '0000000c-0000-4000-8000-000000000000';
const S1 = '00000001-0000-4000-8000-000000000000';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const client = (nova: ScriptedNova): NovaClient => new NovaClient({ endpoint: 'http://nova.test/v2.1', token: 'admin:demo', adapter: nova.adapter, microversion: '2.79' });

/** Settle `p` on the fake clock; its outcome and the fake time (ms since the call) it settled at. */
async function settle<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown; atMs: number }> {
  const r = await settleOnFakeClock(p, Date.now(), (ms) => vi.advanceTimersByTimeAsync(ms), 1_000_000);
  return { ...r, atMs: r.settledAt };
}

const unavailable = (seconds: number) => ({ kind: 'status' as const, status: 503, body: { computeFault: { code: 503, message: 'Service Unavailable' } }, headers: { 'Retry-After': String(seconds) } });

describe('Retry-After on a DELETE', () => {
  it('deleteServer --wait: a DELETE answered 503 + Retry-After: 30 is not sent again before 30 s, and nothing else goes out meanwhile', async () => {
    const nova = new ScriptedNova();
    nova.add(S1, { deletedAfterMs: 1000, goneAfterMs: 2000 });
    let deletes = 0;
    nova.fault = ({ method }) => (method === 'DELETE' && ++deletes <= 2 ? unavailable(30) : undefined);
    const t0 = Date.now();
    const r = await settle(client(nova).deleteServer(S1, { wait: true, intervalMs: 1000, timeoutMs: 300_000 }));
    expect(r.value).toMatchObject({ outcome: 'deleted' });
    const sent = nova.seen.map((s) => ({ at: s.at - t0, method: s.method, status: s.status }));
    const dels = sent.filter((s) => s.method === 'DELETE');
    expect(dels.map((d) => d.status)).toEqual([503, 503, 204]);
    expect(dels[1]!.at).toBeGreaterThanOrEqual(30_000);
    expect(dels[2]!.at - dels[1]!.at).toBeGreaterThanOrEqual(30_000);
    // Nothing between a 503 with Retry-After and the end of its pause.
    for (const d of dels.slice(0, 2)) expect(sent.filter((s) => s.at > d.at && s.at < d.at + 30_000)).toEqual([]);
  });

  it('a Retry-After longer than the call has left ends it by its deadline with DeleteTimeoutError naming the Retry-After (cause: the 503)', async () => {
    const nova = new ScriptedNova();
    nova.add(S1, { deletedAfterMs: 1000, goneAfterMs: 2000 });
    nova.fault = ({ method }) => (method === 'DELETE' ? unavailable(120) : undefined);
    const r = await settle(client(nova).deleteServer(S1, { wait: true, timeoutMs: 60_000 }));
    expect(r.error).toBeInstanceOf(DeleteTimeoutError);
    expect(r.atMs).toBeLessThanOrEqual(60_000);
    expect((r.error as Error).message).toContain('Retry-After 120 s');
    expect(((r.error as Error).cause as { status?: number }).status).toBe(503);
    expect(nova.seen.filter((s) => s.method === 'DELETE')).toHaveLength(1);
  });
});

describe('Retry-After on polls and listings', () => {
  it("a poll answered 503 + Retry-After: 20: the server's next look is at least 20 s later (intervalMs 1000)", async () => {
    const nova = new ScriptedNova();
    nova.add(S1, { deletedAfterMs: 60_000, goneAfterMs: 61_000 });
    let gets = 0;
    nova.fault = ({ method }) => (method === 'GET' && ++gets === 2 ? unavailable(20) : undefined);
    const c = client(nova);
    await settle(c.deleteServer(S1));
    const t0 = Date.now();
    const r = await settle(waitForDelete(c, S1, { intervalMs: 1000, timeoutMs: 300_000 }));
    expect(r.value).toMatchObject({ outcome: 'deleted' });
    const looks = nova.seen.filter((s) => s.method === 'GET').map((s) => ({ at: s.at - t0, status: s.status }));
    const paused = looks.findIndex((l) => l.status === 503);
    expect(paused).toBe(1);
    expect(looks[paused + 1]!.at - looks[paused]!.at).toBeGreaterThanOrEqual(20_000);
  });

  it("a shared listing answered 429 + Retry-After: 15 delays the engine's next request, listing or GET, by 15 s", async () => {
    const nova = new ScriptedNova();
    for (const id of [A, B, C]) nova.add(id, { deletedAfterMs: 40_000, goneAfterMs: 41_000 });
    let listings = 0;
    nova.fault = ({ listing }) =>
      listing !== undefined && ++listings === 2
        ? { kind: 'status', status: 429, body: { overLimit: { code: 429, message: 'Too many requests' } }, headers: { 'Retry-After': '15' } }
        : undefined;
    const c = client(nova);
    const r = await settle(c.deleteServers([A, B, C], { wait: true, intervalMs: 2000, timeoutMs: 300_000 }));
    expect(r.value?.succeeded).toHaveLength(3);
    const limited = nova.seen.find((s) => s.status === 429)!;
    const after = nova.seen.filter((s) => s.at > limited.at);
    expect(after.length).toBeGreaterThan(0);
    expect(after[0]!.at - limited.at).toBeGreaterThanOrEqual(15_000);
  });
});
