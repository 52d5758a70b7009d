/**
 * Through an `InProcessFleet` (FakeNova, fake timers): the watcher's brief listing cut in front of
 * Nova (a proxy, a cache, a page size) ends no other host's wait. The absence only makes the watcher
 * GET the server once; its 404 is the proof it publishes, one GET for every host waiting.
 */
import { describe, expect, it } from 'vitest';
import { waitForDelete } from '../../src/index.js';
import { serverPath, settle, startNova, useFakeClock } from '../helpers.js';
import { cutClient, joinedFleet, type Cut } from './support/fleet.js';

useFakeClock();

const CUTS: ReadonlyArray<[string, number, (all: readonly string[]) => Cut]> = [
  ['drops 1 of 10', 10, (all) => (ids) => ids.filter((x) => x !== all[3])],
  ['keeps 1 of 10', 10, (all) => (ids) => ids.filter((x) => x === all[0])],
  ['keeps its first 20 of 40', 40, () => (ids) => ids.slice(0, 20)],
];

describe('InProcessFleet: a watcher whose brief listing is cut', () => {
  it.each(CUTS)('that %s ends no other host’s wait before Nova’s 404; one GET a server confirms it for every host', async (_what, n, makeCut) => {
    const nova = await startNova({ deleteDelayMs: 5000 });
    const ids = Array.from({ length: n }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const a = cutClient(nova, makeCut(ids));
    const b = cutClient(nova, (x) => x);
    const c = cutClient(nova, (x) => x);
    const { fleet, consumers: [mb, mc] } = await joinedFleet(a.client, b.client, c.client);
    const t0 = Date.now();
    const ends = new Map<string, { outcome: string; atMs: number }>();
    const note = (host: string, id: string) => (r: { outcome: string }) => void ends.set(`${host} ${id}`, { outcome: r.outcome, atMs: Date.now() - t0 });
    // b deletes them all; c waits on them too.
    const waits = ids.flatMap((id) => [
      b.client.deleteServer(id, { wait: true, intervalMs: 500, jitter: 0, timeoutMs: 30_000 }).then(note('b', id)),
      waitForDelete(c.client, id, { intervalMs: 500, jitter: 0, timeoutMs: 30_000 }).then(note('c', id)),
    ]);
    await settle(Promise.all(waits));
    expect(ends.size).toBe(2 * n);
    for (const [key, end] of ends) {
      const id = key.split(' ')[1]!;
      expect({ key, outcome: end.outcome }).toEqual({ key, outcome: 'deleted' });
      // Ended only after Nova's 404 for that very server (the defect: 0.2-0.6 s into a 5 s delete).
      const first404 = nova.requestsTo('GET', serverPath(id)).find((q) => q.status === 404);
      expect(first404).toBeDefined();
      expect(end.atMs).toBeGreaterThanOrEqual(first404!.timeMs - t0);
      expect(end.atMs).toBeGreaterThanOrEqual(5000);
    }
    // The consumers sent no look of their own: the watcher's one 404 a server is every host's proof.
    expect(b.sent.filter((r) => r.startsWith('GET'))).toEqual([]);
    expect(c.sent).toEqual([]);
    for (const id of ids) expect(nova.requestsTo('GET', serverPath(id)).filter((q) => q.status === 404)).toHaveLength(1);
    expect(mb.stats.proofs).toBe(n);
    expect(mc.stats.proofs).toBe(n);
    fleet.close();
  });
});
