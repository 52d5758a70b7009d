/**
 * The consuming side of a fleet watcher without any carrier (`src/delete/fleetConsumer.ts`), on a
 * real engine over FakeNova and fake timers: in sequence or not at all (a gap falls back with one
 * warning and resumes only at a later read), fencing by epoch, stalls, proofs always and statuses
 * only while consuming.
 */
import { describe, expect, it, vi } from 'vitest';
import { FleetConsumer, newFleetStats, type FleetLink, type FleetPublication } from '../../src/delete/index.js';
import { waitForDelete } from '../../src/index.js';
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
  const link: FleetLink = { get consuming() { return consumer.consuming; }, interestChanged: () => undefined, ownLookAlive: (id, at) => consumer.ownLookAlive(id, at) }; // prettier-ignore
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

describe('FleetConsumer: a proof Nova contradicts drops its watcher’s proofs', () => {
  it("the consumer's own GET finds the server alive after the proof: that epoch's proofs (published or kept) end no wait, one warning, one count; a newer watcher is consumed again", async () => {
    const { nova, client, consumer, stats, warnings } = await setup(60_000);
    const [a, b] = [nova.addServer({ status: 'ACTIVE' }).id, nova.addServer({ status: 'ACTIVE' }).id];
    consumer.beginRead();
    consumer.take(pub(1, 1));
    expect(consumer.consuming).toBe(true);
    // The watcher of epoch 1 publishes a false proof (Nova deletes nothing here): the wait it ends cannot be taken back.
    const first = waitForDelete(client, a, { intervalMs: 1000, jitter: 0, timeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(10);
    consumer.take(pub(2, 1, [{ i: a, g: 'not-found' }]));
    expect((await settle(first)).outcome).toBe('deleted');
    // A gap: this host looks by itself, and its own GET of a answers 200 ACTIVE, after the proof.
    consumer.take(pub(4, 1));
    expect(consumer.consuming).toBe(false);
    const again = waitForDelete(client, a, { intervalMs: 1000, jitter: 0, timeoutMs: 5000 });
    await vi.advanceTimersByTimeAsync(10);
    expect(nova.requestsTo('GET', serverPath(a)).map((q) => q.status)).toEqual([200]);
    expect(stats.distrusted).toBe(1);
    expect(warnings.filter((w) => /epoch 1 .*contradicts.*proofs are dropped/.test(w))).toHaveLength(1);
    // Epoch 1's later proofs, published or kept by the carrier, end no wait; nor does it resume consuming.
    const other = waitForDelete(client, b, { intervalMs: 1000, jitter: 0, timeoutMs: 5000 });
    await vi.advanceTimersByTimeAsync(10);
    consumer.beginRead();
    consumer.take(pub(5, 1, [{ i: b, g: 'not-found' }]));
    expect(consumer.proof(b, 'not-found', 1)).toBe(false);
    expect([consumer.consuming, client.deleteEngine.pendingWaits]).toEqual([false, 2]);
    expect((await settle(other)).outcome).toBe('timeout');
    expect((await settle(again)).outcome).toBe('timeout');
    expect(stats.proofs).toBe(1);
    // A newer watcher (epoch 2) is consumed again.
    consumer.beginRead();
    consumer.take(pub(6, 2));
    expect(consumer.consuming).toBe(true);
  });

  it('a later publication shows the server alive after its proof: the proof’s epoch is dropped, this host falls back at once and looks by itself', async () => {
    const { nova, client, consumer, stats } = await setup(60_000);
    const [a, b] = [nova.addServer({ status: 'ACTIVE' }).id, nova.addServer({ status: 'ACTIVE' }).id];
    consumer.beginRead();
    consumer.take(pub(1, 3));
    const wait = waitForDelete(client, b, { intervalMs: 1000, jitter: 0, timeoutMs: 5000 });
    await vi.advanceTimersByTimeAsync(10);
    expect(nova.requestsTo('GET', serverPath(b))).toEqual([]);
    consumer.take(pub(2, 3, [{ i: a, g: 'not-found' }]));
    consumer.take(pub(3, 3, [{ i: a, s: { status: 'ACTIVE', 'OS-EXT-STS:task_state': null } }, { i: b, g: 'not-found' }]));
    expect([stats.distrusted, consumer.consuming]).toEqual([1, false]);
    // b's proof came after the contradiction: no end; b's wait looks by itself now.
    await vi.advanceTimersByTimeAsync(10);
    expect(client.deleteEngine.pendingWaits).toBe(1);
    expect(nova.requestsTo('GET', serverPath(b)).length).toBeGreaterThan(0);
    expect((await settle(wait)).outcome).toBe('timeout');
  });

  it('a DELETED status after a proof, or an own look sent before the proof, is no contradiction', async () => {
    const { nova, client, consumer, stats } = await setup(60_000);
    const a = nova.addServer({ status: 'ACTIVE' }).id;
    consumer.beginRead();
    consumer.take(pub(1, 1));
    const wait = waitForDelete(client, a, { intervalMs: 1000, jitter: 0, timeoutMs: 5000 });
    await vi.advanceTimersByTimeAsync(10);
    consumer.take(pub(2, 1, [{ i: a, g: 'not-found' }]));
    await settle(wait);
    consumer.take(pub(3, 1, [{ i: a, s: { status: 'DELETED', 'OS-EXT-STS:task_state': null } }]));
    consumer.ownLookAlive(a, client.clock.now() - 1);
    expect([stats.distrusted, consumer.consuming]).toEqual([0, true]);
  });
});
