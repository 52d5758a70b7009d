/**
 * Issue 29 attacks on the delete engine (an absence from a brief listing is only a trigger for the
 * server's own GET, whose `itemNotFound` 404 naming it is the proof). A cut listing drops a server
 * Nova still has; that server's own GETs then meet a proxy's answers: an HTML 404, a generic JSON
 * 404 that names no server, a hang, a 503 or a reset. No wait may end `deleted`, every wait ends at
 * its deadline, and nothing is left running. ScriptedNova on fake timers (jitter 0).
 */
import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';
import { describe, expect, it, vi } from 'vitest';
import { waitForDelete } from '../../src/index.js';
import { T0, hostileSetup, run, useHostileClock } from '../delete/support/hostile.js';
import type { Fault, ScriptedNova } from '../delete/support/scriptedNova.js';

/** Brief listings after the first keep only what `cut` keeps of Nova's answer (no next link). */
function cutBriefListings(nova: ScriptedNova, cut: (ids: readonly string[]) => readonly string[]): { adapter: AxiosAdapter } {
  let briefs = 0;
  const adapter: AxiosAdapter = async (config: InternalAxiosRequestConfig) => {
    const path = new URL(config.url ?? '', 'http://nova.test').pathname.replace(/^\/v2\.1/, '');
    const res = await nova.adapter(config);
    if (String(config.method ?? 'get').toUpperCase() !== 'GET' || path !== '/servers' || res.status !== 200) return res;
    if (++briefs === 1) return res;
    const body = JSON.parse(String(res.data)) as { servers: Array<{ id: string }> };
    const kept = new Set(cut(body.servers.map((s) => s.id)));
    return { ...res, data: JSON.stringify({ servers: body.servers.filter((s) => kept.has(s.id)) }) } satisfies AxiosResponse;
  };
  return { adapter };
}

useHostileClock();

const id = (k: number): string => `${String(k + 1).padStart(8, '0')}-0000-4000-8000-0000000000a9`;

/** Answers to the victim's GET that are not Nova's 404 for it and will not mend: its wait fails at once (a fatal look, `observe.ts`). */
const FATAL: ReadonlyArray<[string, Fault]> = [
  ['an HTML 404 of a proxy', { kind: 'proxy404' }],
  ['a generic JSON itemNotFound that names no server (a wrong route)', { kind: 'status', status: 404, body: { itemNotFound: { code: 404, message: 'The resource could not be found.' } } }],
  ['a 404 naming another server', { kind: 'status', status: 404, body: { itemNotFound: { code: 404, message: `Instance ${id(7)} could not be found.` } } }],
];

/** Transient answers: the victim's wait keeps looking until its timeout. */
const FAULTS: ReadonlyArray<[string, Fault]> = [
  ['a hang', { kind: 'hang' }],
  ['a 503', { kind: 'status', status: 503 }],
  ['a reset', { kind: 'reset' }],
];

describe('a server a cut listing drops, whose own GET meets a proxy (issue 29 attack)', () => {
  it.each(FAULTS)('GET answered by %s: never deleted, ends at its timeout with nothing running', async (_what, fault) => {
    const n = 5;
    const all = Array.from({ length: n }, (_, k) => id(k));
    const victim = all[2]!;
    const { nova, client, front } = hostileSetup({ requestTimeoutMs: 3000 });
    const { adapter } = cutBriefListings(nova, (ids) => ids.filter((x) => x !== victim));
    front.override = ({ config }) => adapter(config) as Promise<AxiosResponse>;
    // Nova takes 60 s to delete them; the waits end after 10 s.
    for (const x of all) nova.add(x, { goneAfterMs: 60_000 });
    for (const x of all) await client.requestDelete(x);
    nova.fault = (req) => (req.method === 'GET' && req.serverId === victim ? fault : undefined);
    const ends = new Map<string, { outcome: string; at: number }>();
    const waits = all.map((x) =>
      waitForDelete(client, x, { intervalMs: 1000, timeoutMs: 10_000, jitter: 0 }).then((r) => void ends.set(x, { outcome: r.outcome, at: Date.now() - T0 })),
    );
    const settled = await run(Promise.all(waits), 20_000);
    expect(settled.error).toBeUndefined();
    for (const x of all) expect({ x, outcome: ends.get(x)?.outcome }).toEqual({ x, outcome: 'timeout' });
    // Settled by the deadline (10 s after the start; the fake clock steps by 10 ms).
    for (const x of all) expect(ends.get(x)!.at).toBeLessThanOrEqual(10_010);
    // The victim's deletion is still unconfirmed: the client still owes it.
    expect(client.deleteEngine.stats.absenceGets).toBeLessThanOrEqual(1);
    const victimGets = nova.seen.filter((q) => q.serverId === victim && q.method === 'GET').length;
    // One GET an interval at most, plus the one the absence triggered.
    expect(victimGets).toBeLessThanOrEqual(11 + 1);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('a server a cut listing drops, whose own GET gets a 404 that is not Nova’s for it (issue 29 attack)', () => {
  it.each(FATAL)('GET answered by %s: that wait fails (never deleted), the server stays unconfirmed, the others time out', async (_what, fault) => {
    const n = 4;
    const all = Array.from({ length: n }, (_, k) => id(k));
    const victim = all[1]!;
    const { nova, client, front } = hostileSetup();
    const { adapter } = cutBriefListings(nova, (ids) => ids.filter((x) => x !== victim));
    front.override = ({ config }) => adapter(config) as Promise<AxiosResponse>;
    for (const x of all) nova.add(x, { goneAfterMs: 60_000 });
    for (const x of all) await client.deleteServer(x);
    nova.fault = (req) => (req.method === 'GET' && req.serverId === victim ? fault : undefined);
    const ends = new Map<string, string>();
    const waits = all.map((x) =>
      waitForDelete(client, x, { intervalMs: 1000, timeoutMs: 8000, jitter: 0 }).then(
        (r) => void ends.set(x, r.outcome),
        (e: unknown) => void ends.set(x, `rejected ${(e as Error).name}`),
      ),
    );
    const settled = await run(Promise.all(waits), 20_000);
    expect(settled.error).toBeUndefined();
    expect(ends.get(victim)).toMatch(/^rejected /);
    for (const x of all) if (x !== victim) expect(ends.get(x)).toBe('timeout');
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toContain(victim);
  });
});

describe('absences while Nova rate-limits (issue 29 attack: a failing Nova gets no more requests)', () => {
  it('listings drop every server while their GETs answer 429: at most one absence GET in all, GETs not above the cadence', async () => {
    const n = 6;
    const all = Array.from({ length: n }, (_, k) => id(k));
    const { nova, client, front } = hostileSetup();
    // Every brief listing after the first is empty (a misrouted cache), Nova still has them all.
    const { adapter } = cutBriefListings(nova, () => []);
    front.override = ({ config }) => adapter(config) as Promise<AxiosResponse>;
    for (const x of all) nova.add(x, { goneAfterMs: 60_000 });
    for (const x of all) await client.requestDelete(x);
    nova.fault = (req) => (req.method === 'GET' && req.serverId !== undefined ? { kind: 'status', status: 429, headers: { 'retry-after': '2' } } : undefined);
    const outcomes: string[] = [];
    const waits = all.map((x) => waitForDelete(client, x, { intervalMs: 1000, timeoutMs: 15_000, jitter: 0 }).then((r) => void outcomes.push(r.outcome)));
    const settled = await run(Promise.all(waits), 30_000);
    expect(settled.error).toBeUndefined();
    expect(outcomes.filter((o) => o === 'deleted')).toEqual([]);
    const gets = nova.seen.filter((q) => q.method === 'GET' && q.serverId !== undefined).length;
    const listings = nova.seen.filter((q) => q.method === 'GET' && q.serverId === undefined).length;
    // Reported, for the comparison with the old code on the same timeline.
    console.info(`429 timeline: ${gets} GETs, ${listings} listings, ${client.deleteEngine.stats.absenceGets} absence GETs`);
    // With Nova answering 429 and asking for 2 s, every server gets at most one GET per 2 s window, plus one absence GET.
    expect(gets).toBeLessThanOrEqual(n * (15 / 2 + 1) + n);
  });
});
