/**
 * A server id given in another spelling than Nova's (upper case, no dashes: both pass the UUID check)
 * is put in Nova's canonical form (lower case, 8-4-4-4-12 dashes) before any request: the DELETE and
 * GETs go to the canonical path, the listing is matched on it, and the result names it. A live server
 * is never reported gone: `deleted` comes only with Nova's real 404 after `deleteDelayMs`. Fake timers.
 */
import { describe, expect, it } from 'vitest';
import { waitForDelete } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { T0, clientFor, serverPath, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const FAST = { intervalMs: 100, jitter: 0, timeoutMs: 10_000 } as const;
const DELETE_DELAY_MS = 1000;
const SPELLINGS: Record<string, (id: string) => string> = {
  'upper case': (id) => id.toUpperCase(),
  'no dashes': (id) => id.replace(/-/g, ''),
  'upper case without dashes': (id) => id.replace(/-/g, '').toUpperCase(),
};

/** The paths of the requests about single servers (`/servers/<x>...`, listings left out). */
const serverPaths = (nova: FakeNova): string[] => nova.requests.map((q) => q.path).filter((p) => /^\/servers\/(?!detail$)[^/]+/.test(p));

async function liveServer(): Promise<{ nova: FakeNova; id: string }> {
  const nova = await startNova({ deleteDelayMs: DELETE_DELAY_MS });
  const id = nova.addServer({ status: 'ACTIVE' }).id;
  return { nova, id };
}

describe.each(Object.entries(SPELLINGS))('a server id in %s', (_name, spell) => {
  it('deleteServer with wait: deleted only at the real 404, the DELETE sent to the canonical path, the canonical id reported', async () => {
    const { nova, id } = await liveServer();
    const client = clientFor(nova);
    const r = await settle(client.deleteServer(spell(id), { wait: true, ...FAST }));
    expect(r.outcome).toBe('deleted');
    expect(r.serverId).toBe(id);
    expect(r.elapsedMs).toBeGreaterThanOrEqual(DELETE_DELAY_MS);
    expect(nova.requests.find((q) => q.method === 'DELETE')).toMatchObject({ path: serverPath(id), status: 204 });
    expect(new Set(serverPaths(nova))).toEqual(new Set([serverPath(id)]));
    expect(nova.listServerStates().map((s) => s.id)).not.toContain(id);
    expect(client.unconfirmedDeletes()).toEqual([]);
  });

  it('deleteServer without wait: delete-requested (never already-gone) for a live server', async () => {
    const { nova, id } = await liveServer();
    const client = clientFor(nova);
    const r = await settle(client.deleteServer(spell(id), FAST));
    expect(r).toMatchObject({ outcome: 'delete-requested', serverId: id });
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
  });

  it('requestDelete: delete-requested, sent to the canonical path', async () => {
    const { nova, id } = await liveServer();
    const client = clientFor(nova);
    await expect(settle(client.requestDelete(spell(id)))).resolves.toBe('delete-requested');
    expect(serverPaths(nova)).toEqual([serverPath(id)]);
  });

  it('waitForDelete: deleted only at the real 404 (timeout while the server lives)', async () => {
    const { nova, id } = await liveServer();
    const client = clientFor(nova);
    const alive = await settle(waitForDelete(client, spell(id), { ...FAST, timeoutMs: 500 }));
    expect(alive.outcome).toBe('timeout');
    await settle(client.requestDelete(id));
    const since = Date.now() - T0;
    const r = await settle(waitForDelete(client, spell(id), FAST));
    expect(r.outcome).toBe('deleted');
    expect(Date.now() - T0 - since).toBeGreaterThanOrEqual(DELETE_DELAY_MS - 1);
    expect(new Set(serverPaths(nova))).toEqual(new Set([serverPath(id)]));
  });

  it('getServer: the server, read from the canonical path', async () => {
    const { nova, id } = await liveServer();
    const client = clientFor(nova);
    const s = await settle(client.getServer(spell(id)));
    expect(s.id).toBe(id);
    expect(serverPaths(nova)).toEqual([serverPath(id)]);
  });

  it('deleteServers: two spellings of one id are one server, deleted once, reported by its canonical id', async () => {
    const { nova, id } = await liveServer();
    const client = clientFor(nova);
    const r = await settle(client.deleteServers([spell(id), id], { wait: true, ...FAST }));
    expect(r.succeeded).toEqual([id]);
    expect(r.failed).toEqual([]);
    expect(nova.requests.filter((q) => q.method === 'DELETE').map((q) => q.path)).toEqual([serverPath(id)]);
  });
});
