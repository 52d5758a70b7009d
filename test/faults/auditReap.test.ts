/**
 * Fault matrix, project-wide operations: `auditQuota` (fault on the first `/limits` read, and on a
 * ghost-check GET) and `reapServers` (a dry run with the fault on the listing; a real run with the
 * fault on the DELETE), on fake timers through FakeNova's in-process adapter. The audit never calls
 * a server a ghost on an answer that is not Nova's 404 for it; the reaper never reports a server
 * deleted that FakeNova still has, and a dry run sends no DELETE.
 */
import { describe, expect, it } from 'vitest';
import { auditQuota, reapServers } from '../../src/index.js';
import { startNova, useFakeClock } from '../helpers.js';
import { FAULT_NAMES, GARBLED, TRANSIENT, inject, matrixClient, outcomeClass, runCell, type FaultName } from './support.js';

useFakeClock();

const HOUR = 3_600_000;
/** Every cell settles by this (fake ms). */
const DEADLINE_MS = 5000;

/** The documented outcome of a read the operation cannot go on without, meeting `fault` once. */
function expectedRead(fault: FaultName): string {
  if (TRANSIENT.includes(fault)) return 'ok';
  if (fault === '401 twice') return 'AuthError';
  if (GARBLED.includes(fault)) return 'InvalidResponseError';
  if (fault === 'proxy 404') return 'NotFoundError';
  throw new Error(`no expectation for ${fault}`);
}

/** The documented outcome of a DELETE meeting `fault` once (see deletes.test.ts). */
function expectedDelete(fault: FaultName): string {
  if (TRANSIENT.includes(fault)) return 'ok';
  if (fault === '401 twice') return 'AuthError';
  // The reaper deletes with wait: a proxy's 2xx page is looked at and the DELETE sent again.
  if (GARBLED.includes(fault)) return 'ok';
  return 'DeleteFailedError';
}

const READ_CELLS = FAULT_NAMES.map((fault) => ({ fault, outcome: expectedRead(fault) }));

describe('fault matrix: auditQuota, fault on the first /limits read', () => {
  it.each(READ_CELLS)('$fault → $outcome', async ({ fault, outcome }) => {
    const nova = await startNova();
    nova.addServer({ name: 'ci-1', flavorId: '2' });
    const client = matrixClient(nova);
    inject(nova, fault, 'GET', '/limits');
    const s = await runCell(nova, auditQuota(client), DEADLINE_MS);
    expect(outcomeClass(s)).toBe(outcome);
    if (s.ok) {
      expect(s.value.verdict).toBe('consistent');
      expect(s.value.ghosts).toEqual([]);
      expect(s.value.resources.cores).toMatchObject({ reportedBefore: 2, counted: 2, reportedAfter: 2 });
    }
    expect(nova.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });
});

describe('fault matrix: auditQuota, fault on the ghost check of a live server', () => {
  // A failed ghost GET is noted, never fatal, and never makes the live server a ghost; only a 401
  // after re-authentication ends the audit (AuthError: no later request could succeed either).
  const GHOST_CELLS = FAULT_NAMES.map((fault) => ({ fault, outcome: fault === '401 twice' ? 'AuthError' : 'ok' }));
  it.each(GHOST_CELLS)('$fault → $outcome, no ghost', async ({ fault, outcome }) => {
    const nova = await startNova();
    const id = nova.addServer({ name: 'ci-1', flavorId: '2' }).id;
    const client = matrixClient(nova);
    inject(nova, fault, 'GET', `/servers/${id}`);
    const s = await runCell(nova, auditQuota(client), DEADLINE_MS);
    expect(outcomeClass(s)).toBe(outcome);
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
    if (!s.ok) return;
    expect(s.value.ghosts, 'a live server is never a ghost').toEqual([]);
    expect(s.value.servers.map((x) => x.id)).toEqual([id]);
  });
});

describe('fault matrix: reapServers dry run, fault on the listing', () => {
  it.each(READ_CELLS)('$fault → $outcome', async ({ fault, outcome }) => {
    const nova = await startNova();
    const id = nova.addServer({ name: 'ci-1', createdMs: Date.now() - 3 * HOUR }).id;
    const client = matrixClient(nova);
    inject(nova, fault, 'GET', '/servers/detail');
    const s = await runCell(nova, reapServers(client, { prefix: 'ci-', olderThanMs: HOUR, dryRun: true, passIntervalMs: 100 }), DEADLINE_MS);
    expect(outcomeClass(s)).toBe(outcome);
    if (s.ok) {
      expect(s.value.deleted).toEqual([]);
      expect(s.value.skipped.map((k) => [k.serverId, k.reason])).toEqual([[id, 'dry-run']]);
    }
    expect(nova.requests.filter((r) => r.method !== 'GET'), 'a dry run sends no DELETE').toEqual([]);
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
  });
});

describe('fault matrix: reapServers, fault on the DELETE', () => {
  it.each(FAULT_NAMES.map((fault) => ({ fault, outcome: expectedDelete(fault) })))('$fault → $outcome', async ({ fault, outcome }) => {
    const nova = await startNova({ deleteDelayMs: 50 });
    const id = nova.addServer({ name: 'ci-1', createdMs: Date.now() - 3 * HOUR }).id;
    const client = matrixClient(nova);
    inject(nova, fault, 'DELETE', `/servers/${id}`);
    const reap = reapServers(client, {
      prefix: 'ci-',
      olderThanMs: HOUR,
      passIntervalMs: 100,
      deleteIntervalMs: 20,
      deleteTimeoutMs: 2000,
      deleteOptions: { jitter: 0, redeleteAfterMs: 0 },
    });
    const s = await runCell(nova, reap, DEADLINE_MS);
    expect(s.ok, 'deletion failures are in `failed`, not thrown').toBe(true);
    if (!s.ok) return;
    if (outcome === 'ok') {
      expect(s.value.deleted.map((d) => [d.serverId, d.outcome])).toEqual([[id, 'deleted']]);
      expect(s.value.failed).toEqual([]);
    } else {
      expect(s.value.deleted, 'never reported deleted').toEqual([]);
      expect(s.value.failed.map((f) => [f.serverId, f.error.constructor.name])).toEqual([[id, outcome]]);
    }
    for (const d of s.value.deleted) expect(nova.getServerState(d.serverId), 'reported deleted: FakeNova has it no more').toBeUndefined();
  });
});
