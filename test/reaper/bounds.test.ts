/**
 * The reaper's time box per pass, and the field's cases it must never reap: DELETED records, servers
 * of a cell that does not answer (UNKNOWN stubs), and servers that only a filter Nova dropped would
 * have excluded. On fake timers through FakeNova's in-process adapter: deadlines are exact.
 */
import { describe, expect, it, vi } from 'vitest';
import { AbortError, DeleteTimeoutError, OperationTimeoutError, ForbiddenError, Reaper, reapServers, ValidationError, type ReaperOptions } from '../../src/index.js';
import { emptyReaperState, planPass } from '../../src/reaper/plan.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, fakeMs, rejection, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const HOUR = 3_600_000;
const STUB = '00000000-0000-4000-8000-00000000cafe';
const GONE = '00000000-0000-4000-8000-00000000dead';
/** Fast deletions: millisecond polls, no re-delete. */
const FAST: Partial<ReaperOptions> = { deleteIntervalMs: 5, deleteOptions: { jitter: 0, redeleteAfterMs: 0 } };
const DELETES = (nova: FakeNova): string[] => nova.requests.filter((r) => r.method === 'DELETE').map((r) => r.path);

/** From now on every listing also shows `extra` records (as a changes-since listing or a down cell would). */
async function listAlso(nova: FakeNova, extra: Record<string, unknown>[]): Promise<void> {
  const servers = await clientFor(nova).listServers();
  nova.clearRequests();
  nova.inject({ method: 'GET', path: '/servers/detail', status: 200, body: { servers: [...servers, ...extra] }, times: Infinity });
}

describe('Reaper.pass: timeoutMs', () => {
  it('a listing that hangs rejects the pass with OperationTimeoutError (not AbortError) at timeoutMs, state unchanged, nothing left running', async () => {
    const nova = await startNova();
    nova.addServer({ name: 'ci-1', createdMs: Date.now() - 3 * HOUR });
    nova.inject({ method: 'GET', path: '/servers/detail', hang: true });
    const reaper = new Reaper(clientFor(nova, { requestTimeoutMs: 3_600_000 }), { prefix: 'ci-', olderThanMs: HOUR, timeoutMs: 20_000 });
    const e = await rejection(settle(reaper.pass()));
    expect(e).toBeInstanceOf(OperationTimeoutError);
    expect(e).not.toBeInstanceOf(AbortError);
    expect(e.message).toBe('The reaper pass did not finish within timeoutMs (20000 ms)');
    expect(fakeMs()).toBe(20_000);
    expect(reaper.state).toEqual(emptyReaperState());
    await vi.advanceTimersByTimeAsync(60_000);
    expect(nova.requests).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('has a default of 900000 ms per pass', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/servers/detail', hang: true });
    const e = await rejection(settle(new Reaper(clientFor(nova, { requestTimeoutMs: 3_600_000 }), { prefix: 'ci-', olderThanMs: HOUR }).pass()));
    expect(e).toBeInstanceOf(OperationTimeoutError);
    expect(fakeMs()).toBe(900_000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('deletions get what is left of the pass: stuck ones fail with DeleteTimeoutError by timeoutMs, later ones are not started', async () => {
    const nova = await startNova();
    const old = Date.now() - 3 * HOUR;
    const ids = [1, 2, 3].map((i) => nova.addServer({ name: `ci-${i}`, createdMs: old - i * 1000 }).id);
    for (const id of ids) nova.setServerBehavior(id, { onDelete: 'never' });
    const reaper = new Reaper(clientFor(nova), { prefix: 'ci-', olderThanMs: HOUR, ...FAST, deleteIntervalMs: 1_000, concurrency: 1, deleteTimeoutMs: 6_000, timeoutMs: 10_000 });
    await settle(reaper.pass());
    const t0 = fakeMs();
    const p2 = await settle(reaper.pass());
    // The first gets its 6 s, the second the 4 s left, the third nothing.
    expect(fakeMs() - t0).toBe(10_000);
    expect(p2.failed.map((f) => [f.error.constructor.name, (f.error as Partial<DeleteTimeoutError>).timeoutMs])).toEqual([
      ['DeleteTimeoutError', 6_000],
      ['DeleteTimeoutError', 4_000],
      ['OperationTimeoutError', 10_000],
    ]);
    expect(p2.failed[2]!.error.message).toBe("not attempted: the pass's timeoutMs ran out before this deletion could start");
    expect(DELETES(nova)).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(DELETES(nova)).toHaveLength(2);
    expect(vi.getTimerCount()).toBe(0);
    // all three stay candidates: the next pass tries again
    expect(Object.keys(reaper.state.candidates).sort()).toEqual([...ids].sort());
  });

  it('reapServers settles within 2 × timeoutMs + passIntervalMs however stuck the servers are', async () => {
    const nova = await startNova();
    const id = nova.addServer({ name: 'ci-1', createdMs: Date.now() - 3 * HOUR }).id;
    nova.setServerBehavior(id, { onDelete: 'never' });
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 20_000, times: Infinity });
    const client = clientFor(nova, { requestTimeoutMs: 3_600_000 });
    const options = { prefix: 'ci-', olderThanMs: HOUR, ...FAST, deleteIntervalMs: 1_000, timeoutMs: 30_000, passIntervalMs: 5_000 };
    const r = await settle(reapServers(client, options));
    // first pass: 20 s listing; 5 s pause; second pass: 20 s listing + the 10 s left for the deletion
    expect(fakeMs()).toBe(55_000);
    expect(r.failed.map((f) => [f.serverId, f.error instanceof DeleteTimeoutError])).toEqual([[id, true]]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('refuses a bad timeoutMs before any request', async () => {
    const nova = await startNova();
    for (const timeoutMs of [0, -1, Number.NaN, 2 ** 31]) {
      expect(() => new Reaper(clientFor(nova), { prefix: 'ci-', olderThanMs: 0, timeoutMs })).toThrow(ValidationError);
    }
    expect(nova.requests).toHaveLength(0);
  });
});

describe('Reaper: records it must never DELETE', () => {
  it('a DELETED record (as a changes-since listing carries) of the fleet is never deleted, on any pass', async () => {
    const nova = await startNova();
    const live = nova.addServer({ name: 'ci-live', createdMs: Date.now() - 3 * HOUR }).id;
    await listAlso(nova, [
      { id: GONE, name: 'ci-gone', status: 'DELETED', 'OS-EXT-STS:vm_state': 'deleted', 'OS-EXT-STS:task_state': null, created: '2024-12-31T00:00:00Z', metadata: {} },
    ]);
    const r = await settle(reapServers(clientFor(nova), { prefix: 'ci-', olderThanMs: HOUR, ...FAST, passIntervalMs: 1_000 }));
    expect(DELETES(nova)).toEqual([`/servers/${live}`]);
    expect(nova.requestsTo('GET', `/servers/${GONE}`)).toHaveLength(0);
    expect(r.skipped.filter((s) => s.serverId === GONE).map((s) => [s.reason, s.detail])).toEqual([['deleted-status', 'status DELETED: already deleted']]);
  });

  it('a server of a cell that does not answer (UNKNOWN stub, 2.69+) is never deleted and is reported as unreachable', async () => {
    const nova = await startNova();
    const live = nova.addServer({ name: 'ci-live', createdMs: Date.now() - 3 * HOUR }).id;
    await listAlso(nova, [{ id: STUB, status: 'UNKNOWN', tenant_id: nova.projectId, created: '2024-12-31T00:00:00Z', links: [] }]);
    const events: unknown[] = [];
    const r = await settle(
      reapServers(clientFor(nova), { prefix: 'ci-', olderThanMs: 0, ...FAST, passIntervalMs: 1_000, onEvent: (e) => e.type === 'listed' && events.push(e.unreachable) }),
    );
    expect(DELETES(nova)).toEqual([`/servers/${live}`]);
    expect(nova.requestsTo('GET', `/servers/${STUB}`)).toHaveLength(0);
    expect(r.unreachable).toEqual([STUB]);
    expect(r.passes.map((p) => p.unreachable)).toEqual([[STUB], [STUB]]);
    expect(events).toEqual([1, 1]);
  });

  it('a candidate whose cell stops answering is skipped as status-unknown, forgotten, and seen anew when its cell is back', () => {
    const base = { id: 'a', name: 'ci-a', status: 'ACTIVE', created: '2024-12-31T00:00:00Z', metadata: {} };
    const nowMs = Date.parse('2025-01-01T00:00:00Z');
    const input = { selector: { prefix: 'ci-' }, olderThanMs: 0, dryRun: false, nowMs };
    const p1 = planPass({ ...input, servers: [base], previous: emptyReaperState() });
    const p2 = planPass({ ...input, servers: [{ id: 'a', status: 'UNKNOWN', created: base.created }], previous: p1.next });
    expect(p2.toDelete).toEqual([]);
    expect(p2.skipped.map((s) => [s.serverId, s.name, s.reason])).toEqual([['a', 'ci-a', 'status-unknown']]);
    expect(p2.unreachable).toEqual(['a']);
    expect(p2.next.candidates).toEqual({});
    const p3 = planPass({ ...input, servers: [base], previous: p2.next });
    expect(p3.toDelete).toEqual([]);
    expect(p3.skipped.map((s) => s.reason)).toEqual(['first-sighting']);
  });
});

describe('Reaper as a non-admin: ownership on the client side only', () => {
  it('sends no metadata, all_tenants, deleted or status filter, and deletes only the servers carrying the fleet tag', async () => {
    const nova = await startNova();
    const old = Date.now() - 3 * HOUR;
    const ours = nova.addServer({ name: 'w-1', metadata: { pool: 'ci' }, createdMs: old }).id;
    nova.addServer({ name: 'w-2', metadata: { pool: 'other' }, createdMs: old });
    nova.addServer({ name: 'w-3', metadata: {}, createdMs: old });
    const client = clientFor(nova, { token: `member:${nova.projectId}` });
    const r = await settle(reapServers(client, { prefix: 'w-', metadataKey: 'pool', metadataValue: 'ci', olderThanMs: HOUR, ...FAST, passIntervalMs: 1_000 }));
    expect(r.deleted.map((d) => d.serverId)).toEqual([ours]);
    expect(DELETES(nova)).toEqual([`/servers/${ours}`]);
    const listings = nova.requestsTo('GET', '/servers/detail').filter((q) => q.query['changes-since'] === undefined);
    expect(listings).toHaveLength(2);
    for (const q of listings) for (const k of ['metadata', 'all_tenants', 'deleted', 'status']) expect(q.query).not.toHaveProperty(k);
  });

  it("a policy 403 on the listing (status=DELETED for a non-admin) rejects the pass at once: one request, no retry", async () => {
    const nova = await startNova();
    nova.addServer({ name: 'ci-1', createdMs: Date.now() - 3 * HOUR });
    nova.inject({
      method: 'GET',
      path: '/servers/detail',
      status: 403,
      body: { forbidden: { code: 403, message: 'Only administrators may list deleted instances' } },
      times: Infinity,
    });
    const reaper = new Reaper(clientFor(nova, { token: `member:${nova.projectId}` }), { prefix: 'ci-', olderThanMs: HOUR });
    const e = await rejection(settle(reaper.pass()));
    expect(e).toBeInstanceOf(ForbiddenError);
    expect(e.message).toMatch(/Only administrators may list deleted instances/);
    expect(fakeMs()).toBe(0);
    expect(nova.requests).toHaveLength(1);
    expect(reaper.state).toEqual(emptyReaperState());
    expect(vi.getTimerCount()).toBe(0);
  });
});
