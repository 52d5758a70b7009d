/**
 * A brief listing (`GET /servers`, no next link) that something in front of Nova cut: a proxy, a
 * cache or a page size drops some servers and keeps others, or keeps only the first page. Such a
 * listing looks complete and plausibly the project's (it still shows servers known to exist), so
 * no rule about the listing itself can catch it: an absence is never proof (`evidence.ts`). A
 * server missing from it gets its own GET, and only Nova's 404 for that GET ends its wait.
 * ScriptedNova on fake timers, jitter 0; the first listing is whole, every later one is cut.
 */
import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';
import { describe, expect, it } from 'vitest';
import { waitForDelete } from '../../src/index.js';
import { T0, hostileSetup, run, useHostileClock } from './support/hostile.js';
import type { ScriptedNova } from './support/scriptedNova.js';

useHostileClock();

const id = (k: number): string => `${String(k + 1).padStart(8, '0')}-0000-4000-8000-00000000000c`;

/** What a cut keeps of the ids Nova lists, in Nova's order. */
export type Cut = (ids: readonly string[]) => readonly string[];

/** The cuts of the defect report: 1 of 10 dropped, 1 of 10 kept, the first 20 of 40. */
export const CUTS: ReadonlyArray<[string, number, (all: readonly string[]) => Cut]> = [
  ['drops 1 of 10 pending servers', 10, (all) => (ids) => ids.filter((x) => x !== all[3])],
  ['keeps only 1 of 10', 10, (all) => (ids) => ids.filter((x) => x === all[0])],
  ['keeps its first 20 of 40 (first page only, no next link)', 40, () => (ids) => ids.slice(0, 20)],
];

/**
 * An adapter in front of `nova` whose brief listings after the first keep only what `cut` keeps of
 * Nova's answer (no next link): the rest of the request goes to Nova unchanged.
 */
export function cutBriefListings(nova: ScriptedNova, cut: Cut): { adapter: AxiosAdapter; briefs: () => number } {
  let briefs = 0;
  const adapter: AxiosAdapter = async (config: InternalAxiosRequestConfig) => {
    const path = new URL(config.url ?? '', 'http://nova.test').pathname.replace(/^\/v2\.1/, '');
    const res = await nova.adapter(config);
    if (String(config.method ?? 'get').toUpperCase() !== 'GET' || path !== '/servers' || res.status !== 200) return res;
    briefs++;
    if (briefs === 1) return res;
    const body = JSON.parse(String(res.data)) as { servers: Array<{ id: string }> };
    const kept = new Set(cut(body.servers.map((s) => s.id)));
    return { ...res, data: JSON.stringify({ servers: body.servers.filter((s) => kept.has(s.id)) }) } satisfies AxiosResponse;
  };
  return { adapter, briefs: () => briefs };
}

/** Delete `n` servers (deleting until `goneAfterMs`), wait on each, with the brief listings cut. */
async function play(n: number, makeCut: (all: readonly string[]) => Cut, goneAfterMs: number, timeoutMs: number) {
  const all = Array.from({ length: n }, (_, k) => id(k));
  const { nova, client, front } = hostileSetup();
  const { adapter, briefs } = cutBriefListings(nova, makeCut(all));
  front.override = ({ config }) => adapter(config) as Promise<AxiosResponse>;
  for (const x of all) nova.add(x, { goneAfterMs });
  for (const x of all) await client.requestDelete(x);
  const ends = new Map<string, { outcome: string; at: number }>();
  const waits = all.map((x) =>
    waitForDelete(client, x, { intervalMs: 1000, timeoutMs, jitter: 0 }).then((r) => void ends.set(x, { outcome: r.outcome, at: Date.now() - T0 })),
  );
  const settled = await run(Promise.all(waits), timeoutMs + 5000);
  expect(settled.error).toBeUndefined();
  return { nova, client, all, ends, briefs };
}

/** Every `deleted` end came at or after Nova's own 404 for that server's GET. */
function expectDeletedOnlyOnOwn404(nova: ScriptedNova, ends: Map<string, { outcome: string; at: number }>): void {
  for (const [x, end] of ends) {
    if (end.outcome !== 'deleted') continue;
    const own404 = nova.seen.filter((q) => q.serverId === x && q.method === 'GET' && q.status === 404 && q.at - T0 <= end.at);
    expect({ x, own404: own404.length > 0 }).toEqual({ x, own404: true });
    expect(end.at).toBeGreaterThanOrEqual(nova.goneAt(x)! - T0);
  }
}

describe('a partial brief listing (no next link) while Nova still shows the servers deleting', () => {
  it.each(CUTS)('that %s ends no wait deleted: each ends at its timeout, still deleting', async (_what, n, makeCut) => {
    // Nova takes 60 s to delete them; the waits end after 8 s.
    const { nova, client, all, ends, briefs } = await play(n, makeCut, 60_000, 8000);
    expect([...ends.values()].filter((e) => e.outcome === 'deleted')).toEqual([]);
    expect(briefs()).toBeGreaterThan(3);
    for (const x of all) expect(ends.get(x)).toEqual({ outcome: 'timeout', at: 8000 });
    // Nova never answered 404 for them: no wait could end on a 404.
    expect(nova.seen.filter((q) => q.status === 404)).toEqual([]);
    // A server a listing dropped got its GET at once (one each, beyond its cadence), then one when due.
    expect(client.deleteEngine.stats.absenceGets).toBeLessThanOrEqual(all.length);
    for (const x of all) expect(nova.seen.filter((q) => q.serverId === x && q.method === 'GET').length).toBeLessThanOrEqual(8 + 1);
  });

  it.each(CUTS)('that %s: once Nova destroys them, every wait ends deleted on its own 404, with at most one GET beyond its cadence', async (_what, n, makeCut) => {
    const goneAfterMs = 5000;
    const { nova, client, all, ends } = await play(n, makeCut, goneAfterMs, 30_000);
    for (const x of all) expect(ends.get(x)?.outcome).toBe('deleted');
    expectDeletedOnlyOnOwn404(nova, ends);
    for (const x of all) {
      const end = ends.get(x)!;
      // Confirmed within two intervals of its destruction (the listings' tick, then its GET).
      expect(end.at).toBeLessThanOrEqual(nova.goneAt(x)! - T0 + 2000);
      // Its GETs: one an interval at most (a server the cut listing hides is looked at when due), plus the one its absence triggered.
      const gets = nova.seen.filter((q) => q.serverId === x && q.method === 'GET');
      expect(gets.length).toBeLessThanOrEqual(Math.floor(end.at / 1000) + 1);
    }
    expect(client.deleteEngine.stats.absenceGets).toBeLessThanOrEqual(all.length);
  });
});
