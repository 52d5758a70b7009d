/**
 * A brief listing cut short by a next link the client cannot follow (no marker: a proxy's `?page=2`)
 * proves no absence: the servers of the later pages are not gone.
 */
import { describe, expect, it } from 'vitest';
import { waitForDelete } from '../../src/index.js';
import { hostileSetup, reply, run, useHostileClock } from './support/hostile.js';


useHostileClock();

describe('a listing whose next link names no marker', () => {
  it('is a failed listing: a server on its unreadable second page is not taken for gone', async () => {
    const { nova, client, front } = hostileSetup();
    const ids = ['00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000', '00000003-0000-4000-8000-000000000000'];
    for (const id of ids) {
      nova.add(id, {}); // accepted, never deleted
      await client.requestDelete(id);
    }
    let briefs = 0;
    front.override = ({ config, method, path }) => {
      if (method !== 'GET' || path !== '/servers') return undefined;
      briefs++;
      // The first listing fits one page; later ones are cut by a proxy's page size, its next link without a marker.
      if (briefs === 1) return reply(config, 200, { servers: ids.map((id) => ({ id, links: [] })) });
      return reply(config, 200, { servers: ids.slice(0, 2).map((id) => ({ id, links: [] })), servers_links: [{ rel: 'next', href: 'http://nova.test/v2.1/servers?page=2' }] });
    };
    const results = await Promise.all(ids.map((id) => run(waitForDelete(client, id, { intervalMs: 1000, timeoutMs: 20_000, jitter: 0 }))));
    expect(briefs).toBeGreaterThan(2);
    for (const r of results) expect(r.value).toMatchObject({ outcome: 'timeout', lastStatus: 'ACTIVE' });
    expect(client.deleteEngine.stats.listingFailures).toBeGreaterThan(0);
  });
});
