/**
 * `InProcessFleet` (`src/delete/inProcessFleet.ts`) on FakeNova and fake timers: the first client
 * watches for the others; the others' delete waits and ACTIVE waits (`waitForActive`, the guard's)
 * send no looks of their own and end as their own looks would (a 404 or a proved absence; ACTIVE
 * with the whole body; ERROR); the watcher leaving hands over at once.
 */
import { describe, expect, it, vi } from 'vitest';
import { InProcessFleet, QuotaGuard, ValidationError, waitForActive, waitForDelete, type NovaClient } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, fakeMs, serverPath, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

/** A client whose requests are also recorded on their own (`METHOD path`). */
function countedClient(nova: FakeNova): { client: NovaClient; sent: string[] } {
  const sent: string[] = [];
  const adapter: typeof nova.adapter = (config) => {
    const url = new URL(config.url ?? '', config.baseURL ?? nova.endpoint);
    sent.push(`${(config.method ?? 'get').toUpperCase()} ${url.pathname.replace(/^\/v2\.1/, '')}`);
    return nova.adapter(config);
  };
  return { client: clientFor(nova, { adapter }), sent };
}

/** Two counted clients joined to a new fleet in this order: `a` watches, `b` consumes (its first round run). */
async function watcherAndConsumer(nova: FakeNova): Promise<{ a: ReturnType<typeof countedClient>; b: ReturnType<typeof countedClient>; fleet: InProcessFleet; ma: InProcessFleet.Member; mb: InProcessFleet.Member }> {
  const a = countedClient(nova);
  const b = countedClient(nova);
  const fleet = new InProcessFleet();
  const ma = await fleet.join(a.client);
  const mb = await fleet.join(b.client);
  await vi.advanceTimersByTimeAsync(0);
  return { a, b, fleet, ma, mb };
}

const looks = (sent: readonly string[]): string[] => sent.filter((r) => r.startsWith('GET /servers'));

describe('InProcessFleet', () => {
  it("a change in one member's waits reads that member's interest only, and the watcher still looks for every member", async () => {
    const nova = await startNova({ deleteDelayMs: 3000 });
    const clients = [countedClient(nova), countedClient(nova), countedClient(nova), countedClient(nova)];
    const fleet = new InProcessFleet();
    for (const c of clients) await fleet.join(c.client);
    await vi.advanceTimersByTimeAsync(0);
    const reads = clients.map((c) => {
      const engine = c.client.deleteEngine;
      const counter = { n: 0 };
      const interest = engine.interest.bind(engine);
      engine.interest = () => {
        counter.n++;
        return interest();
      };
      return counter;
    });
    const ids = [nova.addServer({ status: 'ACTIVE' }).id, nova.addServer({ status: 'ACTIVE' }).id];
    const first = clients[1]!.client.deleteServer(ids[0]!, { wait: true, intervalMs: 1000, jitter: 0 });
    await vi.advanceTimersByTimeAsync(0);
    expect(reads.map((r) => r.n)).toEqual([0, 1, 0, 0]);
    const second = clients[3]!.client.deleteServer(ids[1]!, { wait: true, intervalMs: 1000, jitter: 0 });
    await vi.advanceTimersByTimeAsync(0);
    expect(reads.map((r) => r.n)).toEqual([0, 1, 0, 1]);
    expect((await settle(first)).outcome).toBe('deleted');
    expect((await settle(second)).outcome).toBe('deleted');
    // Only the watcher (the first member) looked; each consumer sent its DELETE alone.
    expect(looks(clients[1]!.sent)).toEqual([]);
    expect(looks(clients[3]!.sent)).toEqual([]);
    expect(nova.requestsTo('GET', serverPath(ids[1]!)).at(-1)!.status).toBe(404);
    fleet.close();
  });

  it("a consumer's deleteServer({ wait: true }) sends its DELETE only: the watcher looks, and its 404 ends the wait as deleted", async () => {
    const nova = await startNova({ deleteDelayMs: 3000 });
    const a = countedClient(nova);
    const b = countedClient(nova);
    const fleet = new InProcessFleet();
    // The member and its counters are named through the class, as a user of `nova-guard` names them.
    const ma: InProcessFleet.Member = await fleet.join(a.client);
    const mb: InProcessFleet.Member = await fleet.join(b.client);
    const stats: InProcessFleet.Stats = mb.stats;
    await vi.advanceTimersByTimeAsync(0);
    expect([ma.watching, mb.watching, mb.consuming, mb.epoch]).toEqual([true, false, true, 1]);
    expect(stats).toBe(mb.stats);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const r = await settle(b.client.deleteServer(id, { wait: true, intervalMs: 1000, jitter: 0 }));
    expect(r.outcome).toBe('deleted');
    expect(b.sent).toEqual([`DELETE ${serverPath(id)}`]);
    // The watcher's looks: one at once, then every second; the last is Nova's 404.
    expect(looks(a.sent).length).toBeGreaterThanOrEqual(3);
    expect(nova.requestsTo('GET', serverPath(id)).at(-1)!.status).toBe(404);
    expect(mb.stats.proofs).toBe(1);
    expect(ma.stats.published).toBeGreaterThan(0);
    fleet.close();
    expect(fleet.size).toBe(0);
  });

  it("a consumer's waitForActive sends no GET: a published ACTIVE ends it with the server's whole body; a published ERROR ends it as error", async () => {
    const nova = await startNova({ buildDelayMs: 2500 });
    const { a, b, fleet } = await watcherAndConsumer(nova);
    const s = await b.client.createServer({ name: 'active-one', flavorRef: '1', imageRef: 'img', networks: 'none' });
    const builds: string[] = [];
    const r = await settle(waitForActive(b.client, s.id, { intervalMs: 1000, jitter: 0, onBuild: (body) => void builds.push(String(body.status)) }));
    expect(r.outcome).toBe('active');
    expect(r.server).toMatchObject({ id: s.id, name: 'active-one', status: 'ACTIVE', flavor: expect.anything() });
    expect(builds.length).toBeGreaterThan(0);
    expect(looks(b.sent)).toEqual([]);
    expect(looks(a.sent).length).toBeGreaterThanOrEqual(2);
    // Nova's recheck puts the next create in ERROR: the consumer learns it from the watcher.
    nova.failCreatesWithQuotaRecheck(1);
    const e = await b.client.createServer({ name: 'error-one', flavorRef: '1', imageRef: 'img', networks: 'none' });
    const re = await settle(waitForActive(b.client, e.id, { intervalMs: 1000, jitter: 0 }));
    expect(re.outcome).toBe('error');
    expect(looks(b.sent)).toEqual([]);
    fleet.close();
  });

  it("the whole body a consumer's ACTIVE wait gets from the watcher leaves out the server's user data (an admin's GET shows it)", async () => {
    const nova = await startNova({ buildDelayMs: 1500 });
    const { a, b, fleet, ma } = await watcherAndConsumer(nova);
    const secret = Buffer.from('#cloud-config\npassword: hunter2-in-user-data\n').toString('base64');
    const s = await b.client.createServer({ name: 'with-user-data', flavorRef: '1', imageRef: 'img', networks: 'none', user_data: secret });
    // FakeNova shows it to an admin, as Nova does from 2.3.
    expect((await a.client.getServer(s.id))['OS-EXT-SRV-ATTR:user_data']).toBe(secret);
    const published: unknown[] = [];
    const r = await settle(waitForActive(b.client, s.id, { intervalMs: 1000, jitter: 0, onBuild: (body) => void published.push(body) }));
    expect(r.outcome).toBe('active');
    expect(looks(b.sent)).toEqual([]);
    expect(ma.stats.published).toBeGreaterThan(0);
    expect(r.server).toMatchObject({ id: s.id, name: 'with-user-data', status: 'ACTIVE' });
    expect(r.server).not.toHaveProperty('OS-EXT-SRV-ATTR:user_data');
    expect(JSON.stringify([r.server, published])).not.toContain(secret);
    fleet.close();
  });

  it("a consumer's guarded create sends its /limits and POST only; the watcher answers its ACTIVE wait", async () => {
    const nova = await startNova({ buildDelayMs: 1500 });
    const { b, fleet } = await watcherAndConsumer(nova);
    const guard = new QuotaGuard(b.client, { activeIntervalMs: 1000 });
    const server = await settle(guard.createServer({ name: 'guarded', flavorRef: '1', imageRef: 'img', networks: 'none' }));
    expect(server).toMatchObject({ name: 'guarded', status: 'ACTIVE' });
    expect(looks(b.sent)).toEqual([]);
    expect(b.sent.filter((x) => x === 'POST /servers')).toHaveLength(1);
    await guard.close();
    fleet.close();
  });

  it('the watcher leaving hands over at once: the next member watches (a new epoch) and its pending wait looks by itself', async () => {
    const nova = await startNova({ deleteDelayMs: 5000 });
    const a = countedClient(nova);
    const b = countedClient(nova);
    const c = countedClient(nova);
    const fleet = new InProcessFleet();
    const ma = await fleet.join(a.client);
    const mb = await fleet.join(b.client);
    const mc = await fleet.join(c.client);
    await vi.advanceTimersByTimeAsync(0);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const wait = b.client.deleteServer(id, { wait: true, intervalMs: 1000, jitter: 0 });
    const other = nova.addServer({ status: 'ACTIVE' }).id;
    const waitC = c.client.deleteServer(other, { wait: true, intervalMs: 1000, jitter: 0 });
    await vi.advanceTimersByTimeAsync(2000);
    expect(looks(b.sent)).toEqual([]);
    ma.leave();
    ma.leave();
    expect([mb.watching, mb.consuming, mb.epoch, mb.stats.elections]).toEqual([true, false, 2, 1]);
    expect((await settle(wait)).outcome).toBe('deleted');
    expect((await settle(waitC)).outcome).toBe('deleted');
    expect(looks(b.sent).length).toBeGreaterThan(0);
    // The third member consumed the new watcher's publications: no look of its own.
    expect(looks(c.sent)).toEqual([]);
    expect(mc.stats.fallbacks).toBe(0);
    fleet.close();
  });

  it('one fleet link per client: joining twice, or a client linked elsewhere, is refused', async () => {
    const nova = await startNova();
    const a = clientFor(nova);
    const fleet = new InProcessFleet();
    await fleet.join(a);
    await expect(fleet.join(a)).rejects.toThrow(ValidationError);
    await expect(new InProcessFleet().join(a)).rejects.toThrow('a fleet link is attached to this client already: one fleet per client (a Redis ledger with fleetWatcher, or one InProcessFleet)');
    fleet.close();
  });

  it('join of something that is not a client (null, undefined, a plain object with a projectId) is a ValidationError, not a TypeError', async () => {
    const fleet = new InProcessFleet();
    for (const bad of [null, undefined, 'client', { projectId: 'demo', endpoint: async () => 'http://nova.test' }]) {
      await expect(fleet.join(bad as never)).rejects.toThrow(new ValidationError(`InProcessFleet.join needs a NovaClient (got ${bad === null ? 'null' : typeof bad})`));
    }
    expect(fleet.size).toBe(0);
  });

  it('one endpoint and one project a fleet: a client of another project or endpoint, or with no projectId, is refused before it joins; another spelling of the endpoint is the same', async () => {
    const nova = await startNova();
    const fleet = new InProcessFleet();
    const a = clientFor(nova);
    await fleet.join(a);
    // Another project at the same endpoint: its servers would answer 404 to the watcher's client.
    await expect(fleet.join(clientFor(nova, { token: 'admin:another-project' }))).rejects.toThrow(/project .*another-project/);
    // The same project at another endpoint (another region).
    await expect(fleet.join(clientFor(nova, { endpoint: 'http://nova.region-two.example:8774/v2.1' }))).rejects.toThrow(/region-two/);
    await expect(fleet.join(clientFor(nova, { token: 'opaque-token' }))).rejects.toThrow(/no projectId/);
    expect(fleet.size).toBe(1);
    // The same endpoint spelt another way (host case, default port, trailing slash) joins.
    const u = new URL(nova.endpoint);
    const respelt = `${u.protocol}//${u.hostname.toUpperCase()}:${u.port}${u.pathname}/`;
    await fleet.join(clientFor(nova, { endpoint: respelt }));
    expect(fleet.size).toBe(2);
    fleet.close();
  });

  it("a consumer's wait that came later with a longer timeout is still answered after the first wait's deadline: it ends deleted at Nova's 404, not as a timeout", async () => {
    const nova = await startNova({ deleteDelayMs: 20_000 });
    const { b, fleet, mb } = await watcherAndConsumer(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    await b.client.deleteServer(id);
    const first = waitForDelete(b.client, id, { intervalMs: 1000, jitter: 0, timeoutMs: 5000 });
    await vi.advanceTimersByTimeAsync(1000);
    let settledAt: number | undefined;
    const later = waitForDelete(b.client, id, { intervalMs: 1000, jitter: 0, timeoutMs: 60_000 }).finally(() => (settledAt = fakeMs()));
    await vi.advanceTimersByTimeAsync(60_000);
    expect((await first).outcome).toBe('timeout');
    // Before the fix the watcher's fleet wait kept the first deadline: no look after 5 s, a timeout at 61 s.
    expect((await later).outcome).toBe('deleted');
    expect(settledAt!).toBeLessThan(23_000);
    expect(looks(b.sent)).toEqual([]);
    expect(mb.consuming).toBe(true);
    fleet.close();
  });

  it("a consumer's wait that came later with a shorter interval is looked at on it: the watcher's fleet wait follows the interest's intervals", async () => {
    const nova = await startNova({ deleteDelayMs: 1_000_000 });
    const { a, b, fleet } = await watcherAndConsumer(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    await b.client.deleteServer(id);
    const slow = waitForDelete(b.client, id, { intervalMs: 10_000, jitter: 0, timeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(1000);
    const fast = waitForDelete(b.client, id, { intervalMs: 1000, jitter: 0, timeoutMs: 60_000 });
    const before = looks(a.sent).length;
    await vi.advanceTimersByTimeAsync(10_000);
    // Before the fix the watcher kept the first wait's 10 s interval: one look in these 10 s.
    expect(looks(a.sent).length - before).toBeGreaterThanOrEqual(8);
    expect(looks(b.sent)).toEqual([]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect([(await slow).outcome, (await fast).outcome]).toEqual(['timeout', 'timeout']);
    fleet.close();
  });

  it('when the short-interval wait ends, the watcher goes back to the longer interval of the waits left (no more looks than they ask for)', async () => {
    const nova = await startNova({ deleteDelayMs: 1_000_000 });
    const { a, b, fleet } = await watcherAndConsumer(nova);
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    await b.client.deleteServer(id);
    const fast = waitForDelete(b.client, id, { intervalMs: 1000, jitter: 0, timeoutMs: 5000 });
    await vi.advanceTimersByTimeAsync(1000);
    const slow = waitForDelete(b.client, id, { intervalMs: 10_000, jitter: 0, timeoutMs: 120_000 });
    await vi.advanceTimersByTimeAsync(10_000);
    expect((await fast).outcome).toBe('timeout');
    const before = looks(a.sent).length;
    await vi.advanceTimersByTimeAsync(40_000);
    // Every 10 s (4 or 5 looks), not every second as the ended wait asked.
    expect(looks(a.sent).length - before).toBeLessThanOrEqual(5);
    expect(looks(a.sent).length - before).toBeGreaterThanOrEqual(3);
    await vi.advanceTimersByTimeAsync(120_000);
    expect((await slow).outcome).toBe('timeout');
    fleet.close();
  });
});
