import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigError,
  ConflictError,
  DeleteTimeoutError,
  OrphanedServerError,
  Reaper,
  ValidationError,
  readReaperState,
  reapServers,
  writeReaperState,
  type ReapEvent,
  type ReaperOptions,
} from '../../src/index.js';
import { fingerprintOf, planPass, emptyReaperState } from '../../src/reaper/plan.js';
import type { FakeNova, RecordedRequest } from '../../src/testing/index.js';
import { clientFor, settle, startNova, useFakeClock } from '../helpers.js';

// On fake timers through FakeNova's in-process adapter: pass intervals and delete timeouts are exact.
useFakeClock();

/** The reaper's own listings (a waiting delete may poll with `changes-since`: not counted). */
const listings = (nova: FakeNova): RecordedRequest[] => nova.requestsTo('GET', '/servers/detail').filter((q) => q.query['changes-since'] === undefined);

const HOUR = 3_600_000;
const SERVER = /^\/servers\/[0-9a-f-]{36}$/;
/** Fast deletions: millisecond polls, no re-delete. */
const FAST: Partial<ReaperOptions> = { deleteIntervalMs: 5, deleteTimeoutMs: 2000, deleteOptions: { jitter: 0, redeleteAfterMs: 0 } };

function seedFleet(nova: FakeNova): { ci1: string; ci2: string; young: string; other: string } {
  const old = Date.now() - 3 * HOUR;
  return {
    ci1: nova.addServer({ name: 'ci-1', createdMs: old }).id,
    ci2: nova.addServer({ name: 'ci-2', createdMs: old }).id,
    young: nova.addServer({ name: 'ci-young', createdMs: Date.now() - 60_000 }).id,
    other: nova.addServer({ name: 'db-1', createdMs: old }).id,
  };
}

const deletes = (nova: FakeNova): string[] => nova.requests.filter((r) => r.method === 'DELETE').map((r) => r.serverId ?? r.path);

describe('Reaper: the two-pass rule', () => {
  it('a candidate seen once is not deleted; seen again unchanged, it is', async () => {
    const nova = await startNova({ deleteDelayMs: 5 });
    const { ci1, ci2, young, other } = seedFleet(nova);
    const reaper = new Reaper(clientFor(nova), { prefix: 'ci-', olderThanMs: 2 * HOUR, ...FAST });

    const p1 = await settle(reaper.pass());
    expect(p1.pass).toBe(1);
    expect(p1.listed).toBe(4);
    expect(p1.deleted).toEqual([]);
    expect(p1.failed).toEqual([]);
    expect(p1.candidates.map((c) => [c.serverId, c.confirmed]).sort()).toEqual([
      [ci1, false],
      [ci2, false],
    ].sort());
    expect(p1.skipped.map((s) => [s.serverId, s.reason]).sort()).toEqual([
      [ci1, 'first-sighting'],
      [ci2, 'first-sighting'],
      [young, 'too-young'],
    ].sort());
    expect(deletes(nova)).toEqual([]);

    const p2 = await settle(reaper.pass());
    expect(p2.pass).toBe(2);
    expect(p2.deleted.map((d) => [d.serverId, d.name, d.outcome]).sort()).toEqual([
      [ci1, 'ci-1', 'deleted'],
      [ci2, 'ci-2', 'deleted'],
    ].sort());
    expect(p2.deleted.every((d) => d.ageMs >= 3 * HOUR)).toBe(true);
    expect(p2.skipped.map((s) => [s.serverId, s.reason])).toEqual([[young, 'too-young']]);
    expect(deletes(nova).sort()).toEqual([ci1, ci2].sort());
    expect(nova.getServerState(ci1)).toBeUndefined();
    expect(nova.getServerState(young)?.status).toBe('ACTIVE');
    expect(nova.getServerState(other)?.status).toBe('ACTIVE');
    expect(reaper.state.candidates).toEqual({});
    expect(reaper.state.passes).toBe(2);
  });

  it('a candidate that vanished between passes is not deleted (and no DELETE is sent for it)', async () => {
    const nova = await startNova();
    const { ci1, ci2 } = seedFleet(nova);
    const reaper = new Reaper(clientFor(nova), { prefix: 'ci-', olderThanMs: 2 * HOUR, ...FAST });
    await settle(reaper.pass());
    nova.destroyServer(ci1);
    const p2 = await settle(reaper.pass());
    expect(p2.deleted.map((d) => d.serverId)).toEqual([ci2]);
    expect(p2.skipped.find((s) => s.serverId === ci1)).toMatchObject({ reason: 'vanished', name: 'ci-1' });
    expect(deletes(nova)).toEqual([ci2]);
  });

  it('a candidate that changed between passes (stopped by someone) is not deleted, and is deleted a pass later if it stays so', async () => {
    const nova = await startNova();
    const { ci1, ci2 } = seedFleet(nova);
    const client = clientFor(nova);
    const reaper = new Reaper(client, { prefix: 'ci-', olderThanMs: 2 * HOUR, ...FAST });
    await settle(reaper.pass());
    await client.request({ method: 'POST', path: `/servers/${ci1}/action`, body: { 'os-stop': null } });
    expect(nova.getServerState(ci1)?.status).toBe('SHUTOFF');
    const p2 = await settle(reaper.pass());
    expect(p2.deleted.map((d) => d.serverId)).toEqual([ci2]);
    expect(p2.skipped.find((s) => s.serverId === ci1)?.reason).toBe('changed');
    expect(deletes(nova)).toEqual([ci2]);
    const p3 = await settle(reaper.pass());
    expect(p3.deleted.map((d) => d.serverId)).toEqual([ci1]);
  });

  it('selects the fleet by metadata key and value', async () => {
    const nova = await startNova();
    const old = Date.now() - 3 * HOUR;
    const mine = nova.addServer({ name: 'a', metadata: { fleet: 'adt' }, createdMs: old }).id;
    nova.addServer({ name: 'b', metadata: { fleet: 'other' }, createdMs: old });
    nova.addServer({ name: 'c', createdMs: old });
    const reaper = new Reaper(clientFor(nova), { metadataKey: 'fleet', metadataValue: 'adt', olderThanMs: HOUR, ...FAST });
    await settle(reaper.pass());
    const p2 = await settle(reaper.pass());
    expect(p2.deleted.map((d) => d.serverId)).toEqual([mine]);
    expect(deletes(nova)).toEqual([mine]);
  });

  it('a ghost (DELETE answers 404, still listed and counted: an orphaned mapping) is not deleted: it fails with OrphanedServerError', async () => {
    const nova = await startNova();
    const id = nova.addServer({ name: 'ci-ghost', createdMs: Date.now() - 3 * HOUR }).id;
    nova.makeGhost(id);
    const reaper = new Reaper(clientFor(nova), { prefix: 'ci-', olderThanMs: HOUR, ...FAST });
    await settle(reaper.pass());
    const p2 = await settle(reaper.pass());
    expect(p2.deleted).toEqual([]);
    expect(p2.failed.map((f) => [f.serverId, f.error instanceof OrphanedServerError, (f.error as OrphanedServerError).finding.kind])).toEqual([[id, true, 'orphan-mapping']]);
  });
});

describe('Reaper: failures settle one by one', () => {
  it('one stuck server among several: the others are deleted, the stuck one fails with DeleteTimeoutError, in bounded time', async () => {
    const nova = await startNova({ deleteDelayMs: 10 });
    const old = Date.now() - 3 * HOUR;
    const ids = [1, 2, 3, 4].map((i) => nova.addServer({ name: `ci-${i}`, createdMs: old }).id);
    const stuck = ids[1]!;
    nova.setServerBehavior(stuck, { onDelete: 'never' });
    const reaper = new Reaper(clientFor(nova), { prefix: 'ci-', olderThanMs: HOUR, ...FAST, deleteTimeoutMs: 300 });
    await settle(reaper.pass());
    const t0 = performance.now();
    const p2 = await settle(reaper.pass());
    const elapsed = performance.now() - t0;
    expect(p2.deleted.map((d) => d.serverId).sort()).toEqual(ids.filter((id) => id !== stuck).sort());
    expect(p2.failed).toHaveLength(1);
    expect(p2.failed[0]!.serverId).toBe(stuck);
    expect(p2.failed[0]!.error).toBeInstanceOf(DeleteTimeoutError);
    expect((p2.failed[0]!.error as DeleteTimeoutError).lastTaskState).toBe('deleting');
    // On the fake clock the pass ends exactly when the stuck server's deleteTimeoutMs runs out.
    expect(elapsed).toBe(300);
    // the stuck one is remembered and retried by the next pass, despite its own task_state change
    expect(reaper.state.candidates[stuck]?.deleteAttempted).toBe(true);
    const p3 = await settle(reaper.pass());
    expect(p3.failed.map((f) => f.serverId)).toEqual([stuck]);
    expect(nova.requestsTo('DELETE', `/servers/${stuck}`)).toHaveLength(2);
  });

  it('with concurrency 1 a stuck server first in line still lets the rest through', async () => {
    const nova = await startNova();
    const old = Date.now() - 3 * HOUR;
    for (const i of [1, 2, 3]) nova.addServer({ name: `ci-${i}`, createdMs: old - i * 1000 });
    const reaper = new Reaper(clientFor(nova), { prefix: 'ci-', olderThanMs: HOUR, ...FAST, deleteTimeoutMs: 150, concurrency: 1 });
    await settle(reaper.pass());
    // whichever the reaper takes first is the stuck one
    const order: string[] = [];
    const r2 = new Reaper(clientFor(nova), {
      prefix: 'ci-',
      olderThanMs: HOUR,
      ...FAST,
      deleteTimeoutMs: 150,
      concurrency: 1,
      state: reaper.state,
      onEvent: (e) => {
        if (e.type === 'delete-started') {
          order.push(e.serverId);
          if (order.length === 1) nova.setServerBehavior(e.serverId, { onDelete: 'never' });
        }
      },
    });
    const p2 = await settle(r2.pass());
    expect(p2.failed.map((f) => f.serverId)).toEqual([order[0]]);
    expect(p2.deleted.map((d) => d.serverId).sort()).toEqual(order.slice(1).sort());
    expect(order).toHaveLength(3);
  });

  it('abort during a stuck deletion ends the pass at once with AbortError', async () => {
    const nova = await startNova();
    const id = nova.addServer({ name: 'ci-x', createdMs: Date.now() - 3 * HOUR }).id;
    nova.setServerBehavior(id, { onDelete: 'never' });
    const controller = new AbortController();
    const reaper = new Reaper(clientFor(nova), {
      prefix: 'ci-',
      olderThanMs: HOUR,
      ...FAST,
      deleteTimeoutMs: 60_000,
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === 'delete-started') setTimeout(() => controller.abort(), 30);
      },
    });
    await settle(reaper.pass());
    const t0 = performance.now();
    const err = await settle(reaper.pass()).catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
    expect(performance.now() - t0).toBe(30);
    expect(reaper.state.candidates[id]?.deleteAttempted).toBe(true);
  });

  it('a locked server fails with ConflictError; the others are deleted', async () => {
    const nova = await startNova();
    const old = Date.now() - 3 * HOUR;
    const a = nova.addServer({ name: 'ci-a', createdMs: old }).id;
    const b = nova.addServer({ name: 'ci-b', createdMs: old }).id;
    nova.lock(a);
    const client = clientFor(nova, { token: `worker:${nova.projectId}` });
    const reaper = new Reaper(client, { prefix: 'ci-', olderThanMs: HOUR, ...FAST });
    await settle(reaper.pass());
    const p2 = await settle(reaper.pass());
    expect(p2.deleted.map((d) => d.serverId)).toEqual([b]);
    expect(p2.failed.map((f) => [f.serverId, f.error.constructor])).toEqual([[a, ConflictError]]);
  });
});

describe('reapServers', () => {
  it('runs two passes passIntervalMs apart and deletes what both saw', async () => {
    const nova = await startNova();
    const { ci1, ci2, young } = seedFleet(nova);
    const events: ReapEvent['type'][] = [];
    const r = await settle(reapServers(clientFor(nova), { prefix: 'ci-', olderThanMs: 2 * HOUR, passIntervalMs: 30, ...FAST, onEvent: (e) => events.push(e.type) }));
    expect(r.passes).toHaveLength(2);
    expect(r.deleted.map((d) => d.serverId).sort()).toEqual([ci1, ci2].sort());
    expect(r.failed).toEqual([]);
    expect(r.skipped.map((s) => [s.serverId, s.reason])).toEqual([[young, 'too-young']]);
    expect(r.candidates.map((c) => c.confirmed)).toEqual([true, true]);
    // The two passes' listings, then the delete waits' one whole listing of the project (two servers
    // deleted at once are listed together: `test/delete/tick.test.ts`).
    const lists = listings(nova);
    expect(lists).toHaveLength(3);
    expect(lists[1]!.timeMs - lists[0]!.timeMs).toBe(30);
    expect(lists[2]!.timeMs).toBeGreaterThanOrEqual(Math.min(...nova.requests.filter((q) => q.method === 'DELETE').map((q) => q.timeMs)));
    expect(events.filter((e) => e === 'listed')).toHaveLength(2);
    expect(events).toContain('waiting');
    expect(events.filter((e) => e === 'deleted')).toHaveLength(2);
  });

  it('returns after one pass when there is no candidate (no waiting)', async () => {
    const nova = await startNova();
    nova.addServer({ name: 'ci-new' });
    const t0 = performance.now();
    const r = await settle(reapServers(clientFor(nova), { prefix: 'ci-', olderThanMs: HOUR, passIntervalMs: 5000 }));
    expect(performance.now() - t0).toBe(0);
    expect(r.passes).toHaveLength(1);
    expect(r.skipped.map((s) => s.reason)).toEqual(['too-young']);
    expect(listings(nova)).toHaveLength(1);
  });

  it('dry run: lists what would be deleted and sends zero DELETEs', async () => {
    const nova = await startNova();
    const { ci1, ci2 } = seedFleet(nova);
    const r = await settle(reapServers(clientFor(nova), { prefix: 'ci-', olderThanMs: 2 * HOUR, passIntervalMs: 5, dryRun: true }));
    expect(r.dryRun).toBe(true);
    expect(r.deleted).toEqual([]);
    expect(r.skipped.filter((s) => s.reason === 'dry-run').map((s) => s.serverId).sort()).toEqual([ci1, ci2].sort());
    expect(nova.requests.filter((q) => q.method !== 'GET')).toHaveLength(0);
    expect(nova.requests.filter((q) => SERVER.test(q.path))).toHaveLength(0);
    expect(nova.getServerState(ci1)?.status).toBe('ACTIVE');
  });

  it('bad options are refused before any request', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    await expect(reapServers(client, { olderThanMs: HOUR })).rejects.toThrow(/needs a fleet/);
    await expect(reapServers(client, { prefix: '', olderThanMs: HOUR })).rejects.toThrow(ValidationError);
    await expect(reapServers(client, { prefix: 'ci-' } as ReaperOptions)).rejects.toThrow(/olderThanMs is required/);
    await expect(reapServers(client, { prefix: 'ci-', olderThanMs: -1 })).rejects.toThrow(ValidationError);
    await expect(reapServers(client, { metadataValue: 'x', olderThanMs: 1 })).rejects.toThrow(/metadataValue needs metadataKey/);
    await expect(reapServers(client, { prefix: 'ci-', olderThanMs: 1, deleteTimeoutMs: 0 })).rejects.toThrow(ValidationError);
    await expect(reapServers(client, { prefix: 'ci-', olderThanMs: 1, concurrency: 0 })).rejects.toThrow(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });

  it('abort between passes rejects with AbortError and deletes nothing', async () => {
    const nova = await startNova();
    seedFleet(nova);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const err = await settle(reapServers(clientFor(nova), { prefix: 'ci-', olderThanMs: HOUR, passIntervalMs: 5000, signal: controller.signal }).catch((e: unknown) => e));
    expect((err as Error).name).toBe('AbortError');
    expect(deletes(nova)).toEqual([]);
  });
});

describe('Reaper state for cron jobs', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('one pass per run, the state kept in a file: the second run deletes what the first saw', async () => {
    const nova = await startNova();
    const { ci1, ci2 } = seedFleet(nova);
    dir = await mkdtemp(join(tmpdir(), 'reaper-'));
    const file = join(dir, 'state.json');
    const run = async (): Promise<Awaited<ReturnType<Reaper['pass']>>> => {
      const reaper = new Reaper(clientFor(nova), { prefix: 'ci-', olderThanMs: 2 * HOUR, ...FAST, state: await readReaperState(file) });
      const r = await settle(reaper.pass());
      await writeReaperState(file, reaper.state);
      return r;
    };
    const first = await run();
    expect(first.deleted).toEqual([]);
    const saved = JSON.parse(await readFile(file, 'utf8')) as { version: number; passes: number; candidates: Record<string, unknown> };
    expect(saved.version).toBe(1);
    expect(saved.passes).toBe(1);
    expect(Object.keys(saved.candidates).sort()).toEqual([ci1, ci2].sort());
    const second = await run();
    expect(second.pass).toBe(2);
    expect(second.deleted.map((d) => d.serverId).sort()).toEqual([ci1, ci2].sort());
    expect((await readReaperState(file)).candidates).toEqual({});
  });

  it('a missing file is a fresh state; a broken one is a ConfigError naming the file', async () => {
    dir = await mkdtemp(join(tmpdir(), 'reaper-'));
    expect(await readReaperState(join(dir, 'none.json'))).toEqual({ version: 1, passes: 0, lastPassMs: null, candidates: {} });
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{"version": 2}');
    const err = await readReaperState(bad).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).file).toBe(bad);
    await writeFile(bad, 'not json');
    await expect(readReaperState(bad)).rejects.toThrow(ConfigError);
  });

  it('run(): a daemon loop, a pass per interval until aborted', async () => {
    const nova = await startNova();
    const { ci1, ci2 } = seedFleet(nova);
    const reaper = new Reaper(clientFor(nova), { prefix: 'ci-', olderThanMs: 2 * HOUR, ...FAST });
    const controller = new AbortController();
    const deleted: string[] = [];
    const passes = await settle(reaper.run({
      intervalMs: 10,
      signal: controller.signal,
      onPass: (r) => {
        deleted.push(...r.deleted.map((d) => d.serverId));
        if (r.pass === 3) controller.abort();
      },
    }));
    expect(passes).toBe(3);
    expect(deleted.sort()).toEqual([ci1, ci2].sort());
    // A listing a pass, and the delete waits' one whole listing of the two servers deleted at once.
    expect(listings(nova)).toHaveLength(4);
  });

  it('refuses a second pass while one is running', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 30 });
    const reaper = new Reaper(clientFor(nova), { prefix: 'ci-', olderThanMs: HOUR });
    const first = reaper.pass();
    await expect(reaper.pass()).rejects.toThrow(/already running/);
    await settle(first);
  });
});

describe('planPass (pure)', () => {
  const base = { id: '00000001-0000-4000-8000-000000000000', name: 'ci-1', status: 'ACTIVE', created: '2026-01-01T00:00:00Z', updated: '2026-01-01T00:00:00Z', metadata: {} };
  const nowMs = Date.parse('2026-01-01T03:00:00Z');
  const plan = (servers: (typeof base)[], previous = emptyReaperState(), dryRun = false): ReturnType<typeof planPass> =>
    planPass({ servers, previous, selector: { prefix: 'ci-' }, olderThanMs: HOUR, dryRun, nowMs });

  it('renamed out of the fleet between passes: left-fleet, not deleted', () => {
    const first = plan([base]);
    const second = plan([{ ...base, name: 'kept-1' }], first.next);
    expect(second.toDelete).toEqual([]);
    expect(second.skipped).toEqual([{ serverId: '00000001-0000-4000-8000-000000000000', name: 'kept-1', reason: 'left-fleet', detail: expect.any(String) }]);
    expect(second.next.candidates).toEqual({});
  });

  it('metadata or updated time changed: changed, first seen again', () => {
    const first = plan([base]);
    const second = plan([{ ...base, metadata: { job: '42' } }], first.next);
    expect(second.skipped.map((s) => s.reason)).toEqual(['changed']);
    expect(second.next.candidates['00000001-0000-4000-8000-000000000000']!.firstSeenMs).toBe(nowMs);
    const third = plan([{ ...base, metadata: { job: '42' } }], second.next);
    expect(third.toDelete.map((t) => t.server.id)).toEqual(['00000001-0000-4000-8000-000000000000']);
    expect(plan([{ ...base, updated: '2026-01-01T02:00:00Z' }], first.next).skipped.map((s) => s.reason)).toEqual(['changed']);
  });

  it('a deletion already attempted ignores its own changes', () => {
    const first = plan([base]);
    first.next.candidates['00000001-0000-4000-8000-000000000000']!.deleteAttempted = true;
    const second = plan([{ ...base, updated: '2026-01-01T02:59:00Z' }], first.next);
    expect(second.toDelete.map((t) => t.server.id)).toEqual(['00000001-0000-4000-8000-000000000000']);
  });

  it('ages, dry run, missing created, deleted status', () => {
    expect(plan([{ ...base, created: 'garbage' }]).skipped.map((s) => s.reason)).toEqual(['no-created-time']);
    expect(plan([{ ...base, status: 'SOFT_DELETED' }]).skipped.map((s) => s.reason)).toEqual(['deleted-status']);
    expect(plan([{ ...base, created: '2026-01-01T02:00:01Z' }]).skipped.map((s) => [s.reason, s.ageMs])).toEqual([['too-young', HOUR - 1000]]);
    expect(plan([{ ...base, created: '2026-01-01T02:00:00Z' }]).candidates.map((c) => c.ageMs)).toEqual([HOUR]);
    const first = plan([base], emptyReaperState(), true);
    const second = plan([base], first.next, true);
    expect(second.toDelete).toEqual([]);
    expect(second.skipped.map((s) => s.reason)).toEqual(['dry-run']);
    expect(second.candidates[0]!.confirmed).toBe(true);
  });

  it('fingerprints ignore metadata key order', () => {
    expect(fingerprintOf({ ...base, metadata: { a: '1', b: '2' } })).toBe(fingerprintOf({ ...base, metadata: { b: '2', a: '1' } }));
  });
});
