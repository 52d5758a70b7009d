/**
 * The reaper against a real Nova 26.2: leftover servers of a test fleet (a name prefix unique to the run,
 * or a metadata key) are deleted only after two passes that saw them unchanged; a dry run sends no
 * DELETE; a server outside the fleet, a server changed between passes and a server too young are left
 * alone; ERROR servers are reaped like the others.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Reaper, reapServers, type NovaClient, type ReapEvent, type Server } from '../../src/index.js';
import { createActiveServer, createServer, memberClient, project, usage, waitForServer } from './support/realNova.js';

const p = project('reaper');

beforeAll(() => p.cleanup());
afterAll(() => p.cleanup());
beforeEach(() => p.cleanup());

const deletes = (c: NovaClient): number => c.stats.byMethod['DELETE'] ?? 0;
const FAST = { olderThanMs: 0, passIntervalMs: 50, deleteIntervalMs: 25, deleteTimeoutMs: 60_000 } as const;

/** A fleet name unique to this test: its servers are `ng-it-<fleet>-<label>-<random>`. */
function fleet(): { label: (l: string) => string; prefix: string } {
  const id = `reap${Math.random().toString(36).slice(2, 7)}`;
  return { label: (l) => `${id}-${l}`, prefix: `ng-it-${id}-` };
}

const ids = (servers: Array<{ serverId: string }>): string[] => servers.map((s) => s.serverId).sort();
const listedIds = async (): Promise<string[]> => (await p.member.listServers()).map((s) => s.id).sort();

describe('reapServers on a real Nova', () => {
  it('dry run: two passes, every leftover "would be deleted", no DELETE sent', async () => {
    const f = fleet();
    const leftovers = await Promise.all(['a', 'b'].map((l) => createActiveServer(p, f.label(l))));
    const other = await createActiveServer(p, 'not-the-fleet');
    const client = memberClient(p.nova);

    const r = await reapServers(client, { ...FAST, prefix: f.prefix, dryRun: true });

    expect(r.dryRun).toBe(true);
    expect(r.passes).toHaveLength(2);
    expect(r.passes[0]!.skipped.map((s) => s.reason)).toEqual(['first-sighting', 'first-sighting']);
    expect(r.skipped.map((s) => s.reason)).toEqual(['dry-run', 'dry-run']);
    expect(ids(r.skipped)).toEqual(leftovers.map((s) => s.id).sort());
    expect(r.candidates.map((c) => c.confirmed)).toEqual([true, true]);
    expect(r.candidates.map((c) => c.status)).toEqual(['ACTIVE', 'ACTIVE']);
    expect(r.deleted).toEqual([]);
    expect(r.failed).toEqual([]);
    expect(r.passes.map((x) => x.listed)).toEqual([3, 3]);
    expect(deletes(client)).toBe(0);
    expect(await listedIds()).toEqual([...leftovers.map((s) => s.id), other.id].sort());
  });

  it('deletes the leftovers (ACTIVE and ERROR) on the second pass, with wait, and leaves the rest', async () => {
    const f = fleet();
    const active = await Promise.all(['a', 'b'].map((l) => createActiveServer(p, f.label(l))));
    const errored = await createServer(p, f.label('nvh'), p.nova.flavors.noValidHost);
    expect((await waitForServer(p.member, errored.id, (s) => s.status !== 'BUILD'))?.status).toBe('ERROR');
    const other = await createActiveServer(p, 'not-the-fleet', p.nova.flavors.vcpus2);
    const client = memberClient(p.nova);
    const events: ReapEvent['type'][] = [];

    const r = await reapServers(client, { ...FAST, prefix: f.prefix, onEvent: (e) => void events.push(e.type) });

    const fleetIds = [...active.map((s) => s.id), errored.id].sort();
    expect(r.passes).toHaveLength(2);
    expect(r.passes[0]!.deleted).toEqual([]);
    expect(ids(r.passes[0]!.skipped)).toEqual(fleetIds);
    expect(ids(r.deleted)).toEqual(fleetIds);
    expect(r.deleted.map((d) => d.outcome)).toEqual(['deleted', 'deleted', 'deleted']);
    for (const d of r.deleted) expect(d.elapsedMs).toBeLessThan(60_000);
    expect(r.failed).toEqual([]);
    expect(r.skipped).toEqual([]);
    expect(deletes(client)).toBe(3);
    expect(events.filter((e) => e === 'deleted')).toHaveLength(3);
    expect(events.filter((e) => e === 'listed')).toHaveLength(2);
    // The wait ended when Nova had freed the cores: only the other server is left, and counted.
    expect(await listedIds()).toEqual([other.id]);
    expect(await usage(p.member)).toEqual({ cores: 2, instances: 1, ram: 2048 });
  });

  it('servers younger than olderThanMs: one pass, no candidate, no DELETE', async () => {
    const f = fleet();
    const young = await createActiveServer(p, f.label('young'));
    const client = memberClient(p.nova);

    const r = await reapServers(client, { ...FAST, olderThanMs: 3_600_000, prefix: f.prefix });

    expect(r.passes).toHaveLength(1);
    expect(r.candidates).toEqual([]);
    expect(r.skipped.map((s) => [s.serverId, s.reason])).toEqual([[young.id, 'too-young']]);
    expect(deletes(client)).toBe(0);
    expect(await listedIds()).toEqual([young.id]);
  });
});

describe('Reaper passes on a real Nova', () => {
  it('a metadata fleet: a server changed between passes is seen anew and deleted a pass later', async () => {
    const key = `ng-fleet-${Math.random().toString(36).slice(2, 7)}`;
    const create = async (label: string, metadata: Record<string, string>): Promise<Server> => {
      const s = await p.member.createServer({ name: `ng-it-${label}`, flavorRef: p.nova.flavors.vcpus1, imageRef: p.nova.imageId, networks: 'none', metadata });
      p.created.add(s.id);
      return (await waitForServer(p.member, s.id, (x) => x.status === 'ACTIVE'))!;
    };
    const stable = await create('meta-stable', { [key]: 'ci' });
    const touched = await create('meta-touched', { [key]: 'ci' });
    const otherValue = await create('meta-other', { [key]: 'prod' });
    const client = memberClient(p.nova);
    // passIntervalMs is reapServers' (the pause between its two passes); a Reaper's passes are the caller's.
    const { passIntervalMs: _pause, ...reaperOptions } = FAST;
    const reaper = new Reaper(client, { ...reaperOptions, metadataKey: key, metadataValue: 'ci' });

    const first = await reaper.pass();
    await p.member.request({ method: 'PUT', path: `/servers/${touched.id}/metadata/note`, body: { meta: { note: 'still in use' } } });
    const second = await reaper.pass();
    const third = await reaper.pass();

    expect(first.skipped.map((s) => s.reason)).toEqual(['first-sighting', 'first-sighting']);
    expect(ids(first.candidates)).toEqual([stable.id, touched.id].sort());
    expect(second.deleted.map((d) => [d.serverId, d.outcome])).toEqual([[stable.id, 'deleted']]);
    expect(second.skipped.map((s) => [s.serverId, s.reason])).toEqual([[touched.id, 'changed']]);
    expect(third.deleted.map((d) => [d.serverId, d.outcome])).toEqual([[touched.id, 'deleted']]);
    expect([first.pass, second.pass, third.pass]).toEqual([1, 2, 3]);
    expect(reaper.state.candidates).toEqual({});
    expect(deletes(client)).toBe(2);
    expect(await listedIds()).toEqual([otherValue.id]);
  });
});
