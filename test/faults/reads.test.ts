/**
 * Fault matrix, reads: `getServer`, `listServers` and `getLimits` against every fault of the matrix,
 * on fake timers through FakeNova's in-process adapter. A transient fault of a GET is retried (or,
 * for a 401, re-authenticated once) and the call succeeds; a 2xx body Nova never sends is an
 * `InvalidResponseError` after one request; a second 401 is an `AuthError`; a proxy's 404 is a
 * `NotFoundError`. Every call settles by its deadline and leaves no timer and no request behind.
 */
import { describe, expect, it } from 'vitest';
import type { NovaClient } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova, useFakeClock } from '../helpers.js';
import { FAULT_NAMES, GARBLED, REQUEST_TIMEOUT_MS, TRANSIENT, inject, matrixClient, outcomeClass, runCell, type FaultName } from './support.js';

useFakeClock();

/** Deadline of one read in fake ms: 5 retries with a 200 ms request time limit, or a 1 s Retry-After. */
const DEADLINE_MS = 3000;

/** The documented outcome of a GET that meets `fault` once. */
function expectedRead(fault: FaultName): { outcome: string; attempts: number } {
  if (TRANSIENT.includes(fault)) return { outcome: 'ok', attempts: 2 };
  if (fault === '401 twice') return { outcome: 'AuthError', attempts: 2 };
  if (GARBLED.includes(fault)) return { outcome: 'InvalidResponseError', attempts: 1 };
  if (fault === 'proxy 404') return { outcome: 'NotFoundError', attempts: 1 };
  throw new Error(`no expectation for ${fault}`);
}

interface ReadOp {
  name: string;
  path: (id: string) => string;
  call: (client: NovaClient, id: string) => Promise<unknown>;
  check: (value: unknown, id: string, nova: FakeNova) => void;
}

const OPS: ReadOp[] = [
  {
    name: 'getServer',
    path: (id) => `/servers/${id}`,
    call: (c, id) => c.getServer(id),
    check: (v, id) => expect((v as { id: string }).id).toBe(id),
  },
  {
    name: 'listServers',
    path: () => '/servers/detail',
    call: (c) => c.listServers(),
    check: (v, id) => expect((v as Array<{ id: string }>).map((s) => s.id)).toEqual([id]),
  },
  {
    name: 'getLimits',
    path: () => '/limits',
    call: (c) => c.getLimits(),
    check: (v) => expect((v as { absolute: Record<string, unknown> }).absolute['totalInstancesUsed']).toBe(1),
  },
];

const CELLS = OPS.flatMap((op) => FAULT_NAMES.map((fault) => ({ op, fault, ...expectedRead(fault) })));

describe('fault matrix: reads', () => {
  it.each(CELLS)('$op.name × $fault → $outcome', async ({ op, fault, outcome, attempts }) => {
    const nova = await startNova();
    const id = nova.addServer({ name: 'ci-1' }).id;
    const client = matrixClient(nova);
    inject(nova, fault, 'GET', op.path(id));
    const s = await runCell(nova, op.call(client, id), DEADLINE_MS);
    expect(outcomeClass(s)).toBe(outcome);
    if (s.ok) op.check(s.value, id, nova);
    // A rate limit's Retry-After (1 s) is waited out; a hang ends at the request time limit.
    if (fault === '429 Retry-After' || fault === '413 overLimit retryAfter') expect(s.atMs).toBeGreaterThanOrEqual(1000);
    if (fault === 'hang') expect(s.atMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS);
    expect(nova.requestsTo('GET', op.path(id))).toHaveLength(attempts);
    expect(nova.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });
});
