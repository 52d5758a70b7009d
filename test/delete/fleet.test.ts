/**
 * The delete engine's port to a fleet watcher (`src/delete/fleet.ts`), with a link the test drives,
 * on FakeNova and fake timers: while the link consumes, a delete wait sends no look; a published
 * proof ends it only when it names Nova's 404 (rule 2 of `evidence.ts`; an absence is no proof); a status
 * is a look only while consuming; when the link stops consuming the wait looks at once; the guard's
 * ACTIVE wait (an `until` predicate) is answered too, the fleet watcher's own waits never.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type { FleetLink } from '../../src/delete/index.js';
import { waitForDelete } from '../../src/index.js';
import { clientFor, fakeMs, serverPath, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

/** A link the test drives; counts the interest changes it is told of. */
function link(consuming: boolean): FleetLink & { consuming: boolean; changes: number } {
  return { consuming, changes: 0, interestChanged() { this.changes++; } }; // prettier-ignore
}

describe('DeleteEngine with a fleet link', () => {
  it('consuming: the wait sends no look; a published 404 ends it as deleted; its interest is registered and dropped', async () => {
    const nova = await startNova({ deleteDelayMs: 1000 });
    const client = clientFor(nova);
    const l = link(true);
    client.deleteEngine.attachFleet(l);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const wait = client.deleteServer(id, { wait: true, intervalMs: 100, jitter: 0, timeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(5000);
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(0);
    expect(nova.requests.filter((r) => r.method === 'GET')).toHaveLength(0);
    expect(client.deleteEngine.interest()).toEqual([{ serverId: id, intervalMs: 100, confirmIntervalMs: 100, remainingMs: 55_000 }]);
    expect(l.changes).toBe(1);
    // A status and weaker "proofs" are no end.
    expect(client.deleteEngine.fleetObserved(id, { gone: false, server: { id, status: 'DELETED', 'OS-EXT-STS:task_state': null } })).toBe(true);
    expect(client.deleteEngine.fleetObserved(id, { gone: true })).toBe(false);
    expect(client.deleteEngine.fleetObserved(id, { gone: true, evidence: 'deleted' as never })).toBe(false);
    expect(client.deleteEngine.pendingWaits).toBe(1);
    expect(client.deleteEngine.fleetObserved(id, { gone: true, evidence: 'not-found' })).toBe(true);
    expect((await settle(wait)).outcome).toBe('deleted');
    expect(fakeMs()).toBe(5000);
    expect(client.deleteEngine.interest()).toEqual([]);
    expect(l.changes).toBe(2);
    expect(client.deleteEngine.idle).toBe(true);
  });

  it('a status is a look only while consuming; when the link stops consuming the wait looks at once, then at its interval', async () => {
    const nova = await startNova({ deleteDelayMs: 100_000 });
    const client = clientFor(nova);
    const l = link(true);
    client.deleteEngine.attachFleet(l);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const ac = new AbortController();
    const wait = client.deleteServer(id, { wait: true, intervalMs: 1000, jitter: 0, timeoutMs: 60_000, signal: ac.signal }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(3000);
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(0);
    l.consuming = false;
    expect(client.deleteEngine.fleetObserved(id, { gone: false, server: { id, status: 'ERROR', 'OS-EXT-STS:task_state': null } })).toBe(false);
    client.deleteEngine.fleetChanged();
    await vi.advanceTimersByTimeAsync(0);
    const looks = nova.requestsTo('GET', serverPath(id));
    expect(looks.map((r) => r.timeMs - looks[0]!.timeMs)).toEqual([0]);
    await vi.advanceTimersByTimeAsync(2000);
    expect(nova.requestsTo('GET', serverPath(id)).map((r) => r.timeMs - looks[0]!.timeMs)).toEqual([0, 1000, 2000]);
    // Consuming again: no more looks.
    l.consuming = true;
    client.deleteEngine.fleetChanged();
    await vi.advanceTimersByTimeAsync(5000);
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(3);
    ac.abort();
    expect(await settle(wait)).toMatchObject({ name: 'AbortError' });
  });

  it('a published ERROR or SOFT_DELETED with no task never ends a delete wait: it may predate the DELETE; the wait looks by itself and its own look decides', async () => {
    const nova = await startNova({ deleteDelayMs: 1500 });
    const client = clientFor(nova);
    const l = link(true);
    client.deleteEngine.attachFleet(l);
    // A server in ERROR is deleted; a watcher's look sent before the DELETE saw it in ERROR with no task.
    const id = nova.addServer({ status: 'ERROR' }).id;
    const wait = client.deleteServer(id, { wait: true, intervalMs: 1000, jitter: 0, timeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(500);
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(0);
    expect(client.deleteEngine.fleetObserved(id, { gone: false, server: { id, status: 'ERROR', 'OS-EXT-STS:task_state': null } })).toBe(true);
    expect(client.deleteEngine.fleetObserved(id, { gone: false, server: { id, status: 'SOFT_DELETED', 'OS-EXT-STS:task_state': null } })).toBe(false);
    await vi.advanceTimersByTimeAsync(0);
    // Its own look at once (ERROR with task_state deleting: goes on), then at its interval until the 404.
    const t0 = nova.requestsTo('DELETE', serverPath(id))[0]!.timeMs;
    expect(nova.requestsTo('GET', serverPath(id)).map((r) => r.timeMs - t0)).toEqual([500]);
    const end = await settle(wait);
    expect(end.outcome).toBe('deleted');
    expect(nova.requestsTo('GET', serverPath(id)).map((r) => r.timeMs - t0)).toEqual([500, 1500]);
  });

  it("the guard's ACTIVE wait (an until predicate) is the fleet's interest, with the whole body; the watcher's own wait (fleetWatch) never is", async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    client.deleteEngine.attachFleet(link(true));
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const now = client.clock.now();
    const spec = { intervalMs: 100, confirmIntervalMs: 100, jitter: 0, deadlineAt: now + 10_000, requestTimeoutMs: undefined, pollRetries: 4 };
    const end = client.deleteEngine.watch(id, { ...spec, until: (o) => !o.gone && o.server.status === 'ACTIVE' });
    expect(client.deleteEngine.interest()).toEqual([{ serverId: id, intervalMs: 100, confirmIntervalMs: 100, remainingMs: 10_000, whole: true }]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(0);
    // A published status ends it as its own look would, with the body published.
    expect(client.deleteEngine.fleetObserved(id, { gone: false, server: { id, status: 'ACTIVE', name: 'n' } })).toBe(true);
    expect((await settle(end)).server).toMatchObject({ status: 'ACTIVE', name: 'n' });
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(0);
    // The fleet watcher's own wait: not interest, and it looks by itself.
    const own = client.deleteEngine.watch(id, { ...spec, deadlineAt: client.clock.now() + 10_000, fleetWatch: true, until: (o) => !o.gone && o.server.status === 'ACTIVE' });
    expect(client.deleteEngine.interest()).toEqual([]);
    expect((await settle(own)).lastStatus).toBe('ACTIVE');
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(1);
  });

  it('a wait that starts on a server the latest brief listing had: its absence from the next one is no proof, it triggers one GET at once, whose 404 ends the wait', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const [a, b, c] = [0, 1, 2].map(() => nova.addServer({ status: 'ACTIVE' }).id) as [string, string, string];
    // Two deletions that stay under way: the engine's ticks send brief listings, which show c too.
    for (const id of [a, b]) nova.setServerBehavior(id, { onDelete: 'never' });
    const ac = new AbortController();
    const stuck = [a, b].map((id) => client.deleteServer(id, { wait: true, intervalMs: 1000, jitter: 0, timeoutMs: 60_000, signal: ac.signal }).catch((e: unknown) => e));
    await vi.advanceTimersByTimeAsync(3000);
    expect(client.deleteEngine.stats.briefListings).toBeGreaterThan(0);
    // c is destroyed (another client deleted it) before this client waits on it.
    nova.destroyServer(c);
    const r = await settle(waitForDelete(client, c, { intervalMs: 1000, jitter: 0, timeoutMs: 30_000 }));
    expect(r.outcome).toBe('deleted');
    // Before absence stopped being proof, it ended with no GET at all: now its own 404, one GET.
    expect(nova.requestsTo('GET', serverPath(c)).map((q) => q.status)).toEqual([404]);
    ac.abort();
    await Promise.all(stuck);
  });

  it('one link at a time; detaching makes the waits look by themselves', async () => {
    const nova = await startNova({ deleteDelayMs: 50 });
    const client = clientFor(nova);
    const detach = client.deleteEngine.attachFleet(link(true));
    expect(() => client.deleteEngine.attachFleet(link(true))).toThrow(/attached/);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const wait = client.deleteServer(id, { wait: true, intervalMs: 100, jitter: 0, timeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(0);
    detach();
    expect((await settle(wait)).outcome).toBe('deleted');
    expect(nova.requestsTo('GET', serverPath(id)).at(-1)!.status).toBe(404);
  });

  it("property: whatever the fleet publishes, in any order and at any delay, a wait ends deleted only after a published 404 ('absent' is no proof), and then at once", async () => {
    const kinds = ['not-found', 'absent', 'DELETED', 'deleted', '', undefined, true, 'gone', 'NotFound'] as const;
    const statuses = ['ACTIVE', 'DELETED', 'SHUTOFF', 'BUILD'] as const;
    const item = fc.oneof(
      fc.record({ proof: fc.constantFrom(...kinds), atMs: fc.integer({ min: 0, max: 4000 }) }),
      fc.record({ status: fc.constantFrom(...statuses), atMs: fc.integer({ min: 0, max: 4000 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(item, { maxLength: 8 }), fc.boolean(), async (items, consuming) => {
        const nova = await startNova({ deleteDelayMs: 1_000_000 });
        const client = clientFor(nova);
        const l = link(consuming);
        client.deleteEngine.attachFleet(l);
        const id = nova.addServer({ status: 'ACTIVE' }).id;
        const t0 = Date.now();
        const wait = client.deleteServer(id, { wait: true, intervalMs: 1000, jitter: 0, timeoutMs: 5000 }).then(
          (r) => ({ outcome: r.outcome, atMs: Date.now() - t0 }),
          (e: unknown) => ({ outcome: (e as Error).name, atMs: Date.now() - t0 }),
        );
        const sorted = [...items].sort((a, b) => a.atMs - b.atMs);
        for (const it of sorted) {
          await vi.advanceTimersByTimeAsync(Math.max(0, t0 + it.atMs - Date.now()));
          if ('proof' in it) client.deleteEngine.fleetObserved(id, { gone: true, evidence: it.proof as never });
          else client.deleteEngine.fleetObserved(id, { gone: false, server: { id, status: it.status, 'OS-EXT-STS:task_state': 'deleting' } });
        }
        const r = await settle(wait);
        const proof = sorted.find((it) => 'proof' in it && it.proof === 'not-found');
        // Nova does not delete the server within the wait (1000 s): the only 404 is a published one.
        if (proof) expect(r).toEqual({ outcome: 'deleted', atMs: proof.atMs });
        else expect(r.outcome).toBe('DeleteTimeoutError');
        // Nova itself never answered 404 while the wait ran (settle() runs the fake's timers to the end afterwards).
        expect(nova.requests.filter((q) => q.status === 404 && q.timeMs - t0 < r.atMs)).toEqual([]);
        expect(client.deleteEngine.idle).toBe(true);
        await nova.close();
      }),
      { numRuns: 40 },
    );
  });
});
