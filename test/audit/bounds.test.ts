/**
 * The audit's time box and the field's cases that make it partial or need both counting models: on
 * fake timers through FakeNova's in-process adapter, so deadlines are exact.
 */
import { describe, expect, it, vi } from 'vitest';
import { AbortError, auditQuota, OperationTimeoutError, formatAudit, ValidationError } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, fakeMs, rejection, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

const STUB = '00000000-0000-4000-8000-00000000cafe';
const NO_VALID_HOST = 'No valid host was found. There are not enough hosts available.';

/**
 * From now on the listing also shows a server of a cell that does not answer, as Nova does from
 * microversion 2.69 (a stub: id, status UNKNOWN, tenant_id, created, links; no name, metadata or
 * flavor), and its own GET answers 500 (Nova API guide, "Down cells"). Nova's legacy counting leaves
 * it out of the usage, as the fake does (it does not know the server).
 */
async function withDownCellStub(nova: FakeNova): Promise<void> {
  const servers = await clientFor(nova).listServers();
  nova.clearRequests();
  const stub = { id: STUB, status: 'UNKNOWN', tenant_id: nova.projectId, created: '2024-12-31T00:00:00Z', links: [] };
  nova.inject({ method: 'GET', path: '/servers/detail', status: 200, body: { servers: [...servers, stub] }, times: Infinity });
  nova.inject({
    method: 'GET',
    path: `/servers/${STUB}`,
    status: 500,
    body: { computeFault: { code: 500, message: 'Unexpected API Error.' } },
    times: Infinity,
  });
}

describe('auditQuota: timeoutMs', () => {
  it('rejects with OperationTimeoutError (a timeout, not an AbortError) at timeoutMs exactly when a request hangs, and leaves no request or timer behind', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.inject({ method: 'GET', path: '/servers/detail', hang: true });
    const client = clientFor(nova, { requestTimeoutMs: 3_600_000 });
    const e = await rejection(settle(auditQuota(client, { timeoutMs: 10_000 })));
    expect(e).toBeInstanceOf(OperationTimeoutError);
    expect(e).not.toBeInstanceOf(AbortError);
    expect(e.message).toBe('The quota audit did not finish within timeoutMs (10000 ms)');
    expect(fakeMs()).toBe(10_000);
    const sent = nova.requests.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(nova.requests.length).toBe(sent);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('has a default of 300000 ms', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/limits', hang: true });
    const e = await rejection(settle(auditQuota(clientFor(nova, { requestTimeoutMs: 3_600_000 }))));
    expect(e).toBeInstanceOf(OperationTimeoutError);
    expect(fakeMs()).toBe(300_000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('ghost checks still queued or running at the deadline are dropped: no GET after it', async () => {
    const nova = await startNova();
    const ids = Array.from({ length: 6 }, () => nova.addServer({ flavorId: '1' }).id);
    nova.inject({ method: 'GET', path: /^\/servers\/[0-9a-f-]{36}$/, delayMs: 4_000, times: Infinity });
    const e = await rejection(settle(auditQuota(clientFor(nova), { timeoutMs: 5_000, ghostCheckConcurrency: 2 })));
    expect(e).toBeInstanceOf(OperationTimeoutError);
    expect(fakeMs()).toBe(5_000);
    const ghostGets = (): number => ids.reduce((n, id) => n + nova.requestsTo('GET', `/servers/${id}`).length, 0);
    expect(ghostGets()).toBe(4); // two at 0 s, two more at 4 s; none after the deadline
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ghostGets()).toBe(4);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a caller abort rejects with the AbortError of the abort, not the deadline, and stops at once', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/servers/detail', hang: true });
    const ac = new AbortController();
    const p = auditQuota(clientFor(nova, { requestTimeoutMs: 3_600_000 }), { signal: ac.signal, timeoutMs: 10_000 });
    setTimeout(() => ac.abort(), 1_000);
    const e = await rejection(settle(p));
    expect(e).toBeInstanceOf(AbortError);
    expect(e.message).not.toMatch(/timeoutMs/);
    expect(fakeMs()).toBe(1_000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a finished audit leaves no timer (the time box is cleared)', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const a = await settle(auditQuota(clientFor(nova), { timeoutMs: 10_000 }));
    expect(a.verdict).toBe('consistent');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('refuses a bad timeoutMs before any request', async () => {
    const nova = await startNova();
    for (const timeoutMs of [-1, Number.NaN, 2 ** 31]) {
      await expect(auditQuota(clientFor(nova), { timeoutMs })).rejects.toBeInstanceOf(ValidationError);
    }
    expect(nova.requests).toHaveLength(0);
  });
});

describe('auditQuota: servers of a cell that does not answer (status UNKNOWN stubs, 2.69+)', () => {
  it('marks the audit partial, never checks or counts the stub as freed, and keeps cores/RAM inconclusive', async () => {
    const nova = await startNova();
    nova.addServer({ name: 'ci-1', flavorId: '2' });
    await withDownCellStub(nova);
    const a = await settle(auditQuota(clientFor(nova)));
    expect(a.partial).toBe(true);
    expect(a.partialReasons).toEqual([
      '1 listed server has status UNKNOWN: a cell does not answer, so their size is unknown, Nova may not count them, and servers of that cell may be missing from the listing',
    ]);
    expect(a.unreachable.map((s) => [s.id, s.status, s.name])).toEqual([[STUB, 'UNKNOWN', undefined]]);
    // It exists: one instance in the count (Nova's legacy counting leaves it out: not under-reporting).
    expect(a.resources.instances).toMatchObject({ reportedBefore: 1, counted: 2, verdict: 'consistent' });
    expect(a.resources.cores).toMatchObject({ counted: 2, verdict: 'inconclusive', drift: null });
    expect(a.uncounted).toEqual([{ serverId: STUB, reason: 'status UNKNOWN: its cell does not answer' }]);
    expect(a.verdict).toBe('inconclusive');
    expect(a.ghosts).toEqual([]);
    expect(nova.requestsTo('GET', `/servers/${STUB}`)).toHaveLength(0);
    expect(a.notes).toEqual([]);
    expect(a.summary).toMatch(/ Partial audit: 1 listed server has status UNKNOWN/);
    expect(formatAudit(a)).toMatch(/^PARTIAL: 1 listed server has status UNKNOWN/m);
  });

  it('with counting from placement (Nova still counts the stub) instances stay consistent: not over-reported', async () => {
    const nova = await startNova();
    nova.addServer({ name: 'ci-1', flavorId: '2' });
    nova.setUsageDrift({ instances: 1, cores: 1, ram: 512 });
    await withDownCellStub(nova);
    const a = await settle(auditQuota(clientFor(nova)));
    expect(a.resources.instances).toMatchObject({ reportedBefore: 2, counted: 2, drift: 0, verdict: 'consistent' });
    expect(a.partial).toBe(true);
  });

  it('an audit without such a server is not partial', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const a = await settle(auditQuota(clientFor(nova)));
    expect(a.partial).toBe(false);
    expect(a.partialReasons).toEqual([]);
    expect(a.unreachable).toEqual([]);
  });
});

describe('auditQuota: servers never scheduled (NoValidHost, cell0)', () => {
  it('legacy counting (their cores and RAM counted): consistent, and listed as unscheduled', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const id = nova.addServer({ flavorId: '2', status: 'ERROR', vmState: 'error', faultMessage: NO_VALID_HOST }).id;
    const a = await settle(auditQuota(clientFor(nova)));
    expect(a.unscheduled.map((s) => s.id)).toEqual([id]);
    expect(a.resources.cores).toMatchObject({ reportedBefore: 3, counted: 3, drift: 0, verdict: 'consistent' });
    expect(a.resources.instances).toMatchObject({ reportedBefore: 2, counted: 2, verdict: 'consistent' });
    expect(a.verdict).toBe('consistent');
    expect(a.partial).toBe(false);
  });

  it('counting from placement (an instance, no cores or RAM): consistent, not under-reported', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.addServer({ flavorId: '2', status: 'ERROR', vmState: 'error', faultMessage: NO_VALID_HOST });
    nova.setUsageDrift({ cores: -2, ram: -2048 });
    const a = await settle(auditQuota(clientFor(nova)));
    expect(a.resources.cores).toMatchObject({ reportedBefore: 1, counted: 3, drift: -2, verdict: 'consistent' });
    expect(a.resources.ramMiB).toMatchObject({ reportedBefore: 512, counted: 2560, drift: -2048, verdict: 'consistent' });
    expect(a.resources.instances).toMatchObject({ reportedBefore: 2, counted: 2, drift: 0, verdict: 'consistent' });
    expect(a.verdict).toBe('consistent');
    expect(a.summary).toMatch(/servers never scheduled \(no valid host: no cores or RAM under counting from placement\)/);
  });

  it('an ERROR server whose fault is not NoValidHost gets no such allowance: under-reported', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.addServer({ flavorId: '2', status: 'ERROR', vmState: 'error', faultMessage: 'Build of instance aborted: disk full' });
    nova.setUsageDrift({ cores: -2, ram: -2048 });
    const a = await settle(auditQuota(clientFor(nova)));
    expect(a.unscheduled).toEqual([]);
    expect(a.resources.cores).toMatchObject({ drift: -2, verdict: 'under-reported' });
    expect(a.verdict).toBe('under-reported');
  });
});
