/**
 * The consuming side of a fleet watcher without any carrier (`src/delete/fleetConsumer.ts`), on a
 * real engine over FakeNova and fake timers: in sequence or not at all (a gap falls back with one
 * warning and resumes only at a later read), fencing by epoch, stalls, proofs always and statuses
 * only while consuming.
 */
import { describe, expect, it, vi } from 'vitest';
import { FleetConsumer, newFleetStats, type FleetLink, type FleetPublication } from '../../src/delete/index.js';
import { clientFor, serverPath, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

async function setup(stallMs = 1000) {
  const nova = await startNova({ deleteDelayMs: 1_000_000 });
  const client = clientFor(nova);
  const warnings: string[] = [];
  const logger = { ...client.logger, warn: (_o: unknown, m?: string) => void warnings.push(String(m)), info: () => undefined };
  const stats = newFleetStats();
  let catchUps = 0;
  const consumer = new FleetConsumer({ engine: client.deleteEngine, clock: client.clock, logger: logger as never, stats, stallMs, catchUp: () => void catchUps++ });
  const link: FleetLink = { get consuming() { return consumer.consuming; }, interestChanged: () => undefined }; // prettier-ignore
  client.deleteEngine.attachFleet(link);
  return { nova, client, consumer, stats, warnings, catchUps: () => catchUps };
}

const pub = (seq: number, epoch = 1, items: FleetPublication['items'] = []): FleetPublication => ({ epoch, seq, items });

describe('FleetConsumer', () => {
  it('resumes at the first publication in sequence; a gap falls back once (one warning) and resumes only at a later read', async () => {
    const { consumer, stats, warnings, catchUps } = await setup();
    consumer.beginRead();
    consumer.take(pub(1));
    expect([consumer.consuming, catchUps()]).toEqual([true, 1]);
    consumer.take(pub(2));
    consumer.take(pub(5));
    expect([consumer.consuming, stats.gaps, stats.fallbacks, warnings.length]).toEqual([false, 1, 1, 1]);
    expect(warnings[0]).toMatch(/2 missed before 5/);
    // Same read: no resume.
    consumer.take(pub(6));
    expect(consumer.consuming).toBe(false);
    consumer.beginRead();
    consumer.take(pub(7));
    expect([consumer.consuming, catchUps(), warnings.length]).toEqual([true, 2, 1]);
  });

  it('a publication of an older epoch is ignored; a stall falls back; statuses are looks only while consuming, proofs always', async () => {
    const { nova, client, consumer, stats } = await setup(1000);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const wait = client.deleteServer(id, { wait: true, intervalMs: 1000, jitter: 0, timeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(10);
    expect(client.deleteEngine.pendingWaits).toBe(1);
    consumer.sawEpoch(3);
    consumer.take(pub(1, 2, [{ i: id, s: { status: 'ERROR', 'OS-EXT-STS:task_state': null } }, { i: id, x: 'cannot answer' }]));
    expect([stats.staleEpoch, stats.proofs, client.deleteEngine.pendingWaits, consumer.consuming]).toEqual([1, 0, 1, false]);
    consumer.take(pub(2, 3));
    expect(consumer.consuming).toBe(true);
    const gets = (): number => nova.requestsTo('GET', serverPath(id)).length;
    const covered = gets();
    await vi.advanceTimersByTimeAsync(900);
    consumer.checkStall();
    expect([consumer.consuming, gets()]).toEqual([true, covered]);
    await vi.advanceTimersByTimeAsync(200);
    consumer.checkStall();
    expect([consumer.consuming, stats.fallbacks]).toEqual([false, 1]);
    // Fallen back: the wait looks by itself at once.
    await vi.advanceTimersByTimeAsync(0);
    expect(gets()).toBe(covered + 1);
    // Not consuming: a status is no look, a proof still ends the wait.
    consumer.take(pub(4, 3, [{ i: id, s: { status: 'ERROR', 'OS-EXT-STS:task_state': null } }]));
    expect(client.deleteEngine.pendingWaits).toBe(1);
    // An 'absent' of a watcher from before absence stopped being proof is no proof.
    consumer.take(pub(5, 3, [{ i: id, g: 'absent' as never }]));
    await vi.advanceTimersByTimeAsync(10);
    expect([client.deleteEngine.pendingWaits, stats.proofs]).toEqual([1, 0]);
    consumer.take(pub(6, 3, [{ i: id, g: 'not-found' }]));
    expect((await settle(wait)).outcome).toBe('deleted');
    expect(stats.proofs).toBe(1);
    // Nova never deleted it: every own look was a 200.
    expect(nova.requestsTo('GET', serverPath(id)).every((r) => r.status === 200)).toBe(true);
  });

  it("a deposed watcher's proof of deletion (an older epoch) still ends a wait: deletion is monotonic", async () => {
    const { nova, client, consumer, stats } = await setup(1000);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const wait = client.deleteServer(id, { wait: true, intervalMs: 1000, jitter: 0, timeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(10);
    consumer.sawEpoch(3);
    consumer.take(pub(1, 2, [{ i: id, g: 'not-found' }]));
    expect([stats.staleEpoch, stats.proofs]).toEqual([1, 1]);
    expect((await settle(wait)).outcome).toBe('deleted');
    // Nova deletes slowly here (1000 s): only the published proof can have ended it.
    expect(client.deleteEngine.pendingWaits).toBe(0);
  });
});
