/**
 * Issue 29 attack on the fleet: the elected watcher's brief listing drops a server Nova still has,
 * and the GET its absence triggers meets a proxy's 404 (an HTML page, or a JSON `itemNotFound` that
 * names no server). The watcher must publish no proof; the hosts waiting on the server must not end
 * `deleted`, and must settle by their deadline. FakeNova, InProcessFleet, fake timers.
 */
import type { AxiosResponse } from 'axios';
import { describe, expect, it } from 'vitest';
import { waitForDelete, type NovaClient } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, serverPath, settle, startNova, useFakeClock } from '../helpers.js';
import { cutClient, joinedFleet } from '../delete/support/fleet.js';

useFakeClock();

const PROXY_404S: ReadonlyArray<[string, string, string]> = [
  ['an HTML 404 page', 'text/html', '<html><body><h1>404 Not Found</h1></body></html>'],
  ['a JSON itemNotFound naming no server', 'application/json', JSON.stringify({ itemNotFound: { code: 404, message: 'The resource could not be found.' } })],
];

/** A client whose brief listings after the first drop `victim`, and whose GETs of `victim` get the proxy's 404. */
function proxiedClient(nova: FakeNova, victim: string, type: string, page: string): { client: NovaClient; sent: string[] } {
  return cutClient(
    nova,
    (ids) => ids.filter((s) => s !== victim),
    (method, path, config) =>
      method === 'GET' && path === serverPath(victim) ? ({ status: 404, statusText: 'Not Found', data: page, headers: { 'content-type': type }, config, request: {} } satisfies AxiosResponse) : undefined,
  );
}

describe('InProcessFleet: the watcher’s absence GET meets a proxy 404 (issue 29 attack)', () => {
  it.each(PROXY_404S)('%s: no proof published, no host ends deleted, every wait settles by its deadline', async (_what, type, page) => {
    const nova = await startNova({ deleteDelayMs: 60_000 });
    const ids = Array.from({ length: 3 }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const victim = ids[1]!;
    const a = proxiedClient(nova, victim, type, page);
    const b = { client: clientFor(nova) };
    const c = { client: clientFor(nova) };
    const { fleet, consumers: [mb, mc] } = await joinedFleet(a.client, b.client, c.client);
    const t0 = Date.now();
    const ends = new Map<string, { outcome: string; atMs: number }>();
    const note = (host: string, id: string) => ({
      ok: (r: { outcome: string }) => void ends.set(`${host} ${id}`, { outcome: r.outcome, atMs: Date.now() - t0 }),
      ko: (e: unknown) => void ends.set(`${host} ${id}`, { outcome: `rejected ${(e as Error).name}`, atMs: Date.now() - t0 }),
    });
    const waits = ids.flatMap((id) => {
      const nb = note('b', id);
      const nc = note('c', id);
      return [
        b.client.deleteServer(id, { wait: true, intervalMs: 500, jitter: 0, timeoutMs: 8000 }).then(nb.ok, nb.ko),
        waitForDelete(c.client, id, { intervalMs: 500, jitter: 0, timeoutMs: 8000 }).then(nc.ok, nc.ko),
      ];
    });
    await settle(Promise.all(waits));
    expect(ends.size).toBe(2 * ids.length);
    for (const [key, end] of ends) {
      expect({ key, outcome: end.outcome }).not.toEqual({ key, outcome: 'deleted' });
      expect(end.atMs).toBeLessThanOrEqual(8000 + 600);
    }
    expect(mb.stats.proofs + mc.stats.proofs).toBe(0);
    // The deletion b asked for is still owed.
    expect(b.client.unconfirmedDeletes().map((u) => u.serverId)).toContain(victim);
    fleet.close();
  });
});
