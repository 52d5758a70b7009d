/**
 * The delete engine's port to a fleet watcher (`src/delete/fleet.ts`), with a link the test drives,
 * on FakeNova and fake timers: while the link consumes, a delete wait sends no look; a published
 * proof ends it only when it names a 404 or a proved absence (rule 3 of `evidence.ts`); a status
 * is a look only while consuming; when the link stops consuming the wait looks at once; the guard's
 * kind of wait (an `until` predicate) always looks by itself.
 */
import { describe, expect, it, vi } from 'vitest';
import type { FleetLink } from '../../src/delete/index.js';
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

  it("a wait with an until predicate (the guard's ACTIVE wait, the fleet watcher's own) is never answered by the fleet", async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    client.deleteEngine.attachFleet(link(true));
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const now = client.clock.now();
    const end = client.deleteEngine.watch(id, { intervalMs: 100, confirmIntervalMs: 100, jitter: 0, deadlineAt: now + 10_000, requestTimeoutMs: undefined, pollRetries: 4, until: (o) => !o.gone && o.server.status === 'ACTIVE' });
    expect(client.deleteEngine.interest()).toEqual([]);
    expect((await settle(end)).lastStatus).toBe('ACTIVE');
    expect(nova.requestsTo('GET', serverPath(id))).toHaveLength(1);
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
});
