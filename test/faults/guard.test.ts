/**
 * Fault matrix, the guard: `QuotaGuard.createServer` with every fault of the matrix on its
 * `POST /servers`, on fake timers through FakeNova's in-process adapter (README "Quota guard"). A
 * POST is never retried blindly: only a rate limit (429, 413 `overLimit` with `retryAfter`) or a 401
 * answered before Nova did anything is sent again. Whatever the outcome, no server is left behind:
 * a create that fails leaves FakeNova with no server, one that succeeds with exactly the server it
 * returned.
 */
import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';
import { describe, expect, it } from 'vitest';
import { QuotaGuard } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova, useFakeClock } from '../helpers.js';
import { FAULT_NAMES, GARBLED, inject, matrixClient, outcomeClass, runCell, GUARD_DEADLINE_MS, GUARD_OPTIONS, type FaultName } from './support.js';

useFakeClock();


const body = { name: 'ci-1', flavorRef: '2', imageRef: 'img', networks: 'none' as const };

/** The documented outcome of a guarded create whose POST meets `fault` once, and how many POSTs it sends. */
function expectedCreate(fault: FaultName): { outcome: string; posts: number } {
  switch (fault) {
    // A lost answer (5xx, no response, a 2xx without the server): the guard searches for the server by
    // its claim tag; two clean searches apart say nothing was created, so the POST is sent once more.
    case '500':
    case '502':
    case '503':
    case '504':
    case 'reset':
    case 'hang':
      return { outcome: 'ok', posts: 2 };
    case '401 once':
    case '429 Retry-After':
    case '429 no Retry-After':
    case '413 overLimit retryAfter':
      return { outcome: 'ok', posts: 2 };
    case '401 twice':
      return { outcome: 'AuthError', posts: 2 };
    case 'proxy 404':
      return { outcome: 'NotFoundError', posts: 1 };
    default:
      if (GARBLED.includes(fault)) return { outcome: 'ok', posts: 2 };
      throw new Error(`no expectation for ${fault}`);
  }
}

/** No server left behind: none after a failure, exactly the returned one after a success. */
function checkNoLeak(nova: FakeNova, returnedId: string | undefined): void {
  const left = nova.listServerStates().map((x) => x.id);
  expect(left, 'servers left in FakeNova').toEqual(returnedId === undefined ? [] : [returnedId]);
}

describe('fault matrix: QuotaGuard.createServer, fault on the POST', () => {
  it.each(FAULT_NAMES.map((fault) => ({ fault, ...expectedCreate(fault) })))('$fault → $outcome after $posts POST(s)', async ({ fault, outcome, posts }) => {
    const nova = await startNova();
    const guard = new QuotaGuard(matrixClient(nova), GUARD_OPTIONS);
    inject(nova, fault, 'POST', '/servers');
    const s = await runCell(nova, guard.createServer(body), GUARD_DEADLINE_MS, () => guard.unsettledCreates().length === 0);
    expect(outcomeClass(s)).toBe(outcome);
    expect(nova.requestsTo('POST', '/servers'), 'never retried blindly').toHaveLength(posts);
    checkNoLeak(nova, s.ok ? s.value.id : undefined);
    if (s.ok) expect(nova.getServerState(s.value.id)?.status).toBe('ACTIVE');
  });
});

/** How the answer to a create that reached Nova (and made the server) is lost on its way back. */
type LostAnswer = 'reset' | 'request timeout' | '500' | '502 HTML' | '202 without server';

/**
 * FakeNova's adapter, except that the first `POST /servers` is passed to the fake in full (the server
 * is made) and its answer is then replaced by `lost`. FakeNova's own faults cannot express this: a
 * faulted or aborted request never reaches its handler.
 */
function losingFirstCreate(nova: FakeNova, lost: LostAnswer): AxiosAdapter {
  let done = false;
  return async (config: InternalAxiosRequestConfig): Promise<AxiosResponse> => {
    const isCreate = String(config.method).toUpperCase() === 'POST' && /\/servers$/.test(String(config.url));
    if (!isCreate || done) return nova.adapter(config);
    done = true;
    const { signal, ...rest } = config;
    await nova.adapter(rest as InternalAxiosRequestConfig);
    const reply = (status: number, data: string, type = 'application/json'): AxiosResponse => ({ status, statusText: '', headers: { 'content-type': type }, data, config, request: {} });
    switch (lost) {
      case 'reset':
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      case 'request timeout':
        return new Promise((_, reject) => {
          const s = signal as AbortSignal | undefined;
          s?.addEventListener('abort', () => reject(Object.assign(new Error('canceled'), { code: 'ERR_CANCELED', name: 'CanceledError' })), { once: true });
        });
      case '500':
        return reply(500, JSON.stringify({ computeFault: { code: 500, message: 'Unexpected API Error.' } }));
      case '502 HTML':
        return reply(502, '<html><body><h1>502 Bad Gateway</h1></body></html>', 'text/html');
      case '202 without server':
        return reply(202, '{}');
    }
  };
}

/**
 * The create reached Nova, which made the server, but its answer was lost. The guard must not leave
 * that server behind: it finds the server by its claim tag and adopts it.
 */
describe('fault matrix: QuotaGuard.createServer, the answer to a create that reached Nova is lost', () => {
  const LOST: LostAnswer[] = ['reset', 'request timeout', '500', '502 HTML', '202 without server'];
  it.each(LOST)('%s → the server is adopted, no server left behind', async (lost) => {
    const nova = await startNova();
    const guard = new QuotaGuard(matrixClient(nova, { adapter: losingFirstCreate(nova, lost) }), GUARD_OPTIONS);
    const s = await runCell(nova, guard.createServer(body), GUARD_DEADLINE_MS, () => guard.unsettledCreates().length === 0);
    expect(s.ok, 'the server Nova made is adopted').toBe(true);
    expect(nova.requestsTo('POST', '/servers'), 'adopted, not created twice').toHaveLength(1);
    checkNoLeak(nova, s.ok ? s.value.id : undefined);
  });
});
