/**
 * The fault matrix's faults and harness: each fault is a {@link FaultSpec} for FakeNova's
 * `inject`, and {@link runCell} runs one operation on fake timers until it settles, then checks that
 * it settled by its deadline and that nothing (no timer, no request) is left afterwards. The slow
 * drip needs a real socket: its cells are in `slowDrip.test.ts` (real clock, `dripFront.ts`).
 */
import { expect, vi } from 'vitest';
import { NovaClient, type AuthProvider, type NovaClientOptions } from '../../src/index.js';
import type { FakeNova, FaultSpec } from '../../src/testing/index.js';
import { settle } from '../helpers.js';

/** Time limit of one request in the matrix (ms): a hang ends here. */
export const REQUEST_TIMEOUT_MS = 200;
/** The client's `maxResponseBytes` in the matrix: above any normal answer of the fake, below {@link LARGE_BODY}. */
export const MAX_RESPONSE_BYTES = 16_000;
/** A JSON body larger than {@link MAX_RESPONSE_BYTES}. */
export const LARGE_BODY = JSON.stringify({ padding: 'x'.repeat(64_000) });

const HTML = '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>';
const HTML_404 = '<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1></center><hr><center>nginx</center></body></html>';

/** A fault of the matrix, before it is aimed at a method and path. */
export type FaultName =
  | '500'
  | '502'
  | '503'
  | '504'
  | 'reset'
  | 'hang'
  | '401 once'
  | '401 twice'
  | '429 Retry-After'
  | '429 no Retry-After'
  | '413 overLimit retryAfter'
  | 'malformed JSON'
  | 'HTML 200'
  | 'empty 200'
  | 'wrong content type'
  | 'other shape'
  | 'large body'
  | 'proxy 404';

/** How many requests a fault applies to, and what it answers. */
const FAULTS: Record<FaultName, Omit<FaultSpec, 'path' | 'method'>> = {
  '500': { status: 500 },
  '502': { status: 502, body: HTML, headers: { 'Content-Type': 'text/html' } },
  '503': { status: 503 },
  '504': { status: 504, body: HTML.replaceAll('502 Bad Gateway', '504 Gateway Time-out'), headers: { 'Content-Type': 'text/html' } },
  reset: { reset: true },
  hang: { hang: true },
  '401 once': { status: 401, times: 1 },
  '401 twice': { status: 401, times: 2 },
  '429 Retry-After': { status: 429, headers: { 'Retry-After': '1' } },
  '429 no Retry-After': { status: 429 },
  '413 overLimit retryAfter': {
    status: 413,
    body: { overLimit: { code: 413, message: 'This request was rate-limited.', retryAfter: '1' } },
    headers: { 'Retry-After': '1' },
  },
  'malformed JSON': { status: 200, body: '{"server": {"id": ', headers: { 'Content-Type': 'application/json' } },
  'HTML 200': { status: 200, body: HTML.replaceAll('502 Bad Gateway', 'Welcome'), headers: { 'Content-Type': 'text/html' } },
  'empty 200': { status: 200, body: '', headers: { 'Content-Type': 'application/json' } },
  'wrong content type': { status: 200, body: 'OK', headers: { 'Content-Type': 'text/plain' } },
  'other shape': { status: 200, body: { hello: 'world' } },
  'large body': { status: 200, body: LARGE_BODY, headers: { 'Content-Type': 'application/json' } },
  'proxy 404': { status: 404, body: HTML_404, headers: { 'Content-Type': 'text/html' } },
};

/** Every fault of the matrix. */
export const FAULT_NAMES = Object.keys(FAULTS) as FaultName[];

/** Faults that are transient for an idempotent request: retried (or re-authenticated) and then succeed. */
export const TRANSIENT: readonly FaultName[] = ['500', '502', '503', '504', 'reset', 'hang', '401 once', '429 Retry-After', '429 no Retry-After', '413 overLimit retryAfter'];
/** 2xx bodies Nova never sends: never retried, never taken as success. */
export const GARBLED: readonly FaultName[] = ['malformed JSON', 'HTML 200', 'empty 200', 'wrong content type', 'other shape', 'large body'];

/** Inject `fault` into `nova` for requests matching `method` and `path`. */
export function inject(nova: FakeNova, fault: FaultName, method: string, path: string | RegExp): void {
  const spec = FAULTS[fault];
  nova.inject({ times: 1, ...spec, method, path });
}

/** A token provider that can always renew: a 401 is retried once with a fresh token. */
export class RenewingTokens implements AuthProvider {
  renewals = 0;
  constructor(private readonly projectId: string) {}
  getToken(): Promise<string> {
    return Promise.resolve(`admin:${this.projectId}`);
  }
  invalidate(): boolean {
    this.renewals++;
    return true;
  }
}

/** A client for the matrix: short request time limit, small body limit, a renewing token provider, ms retries. */
export function matrixClient(nova: FakeNova, options: Partial<NovaClientOptions> = {}): NovaClient {
  return new NovaClient({
    endpoint: nova.endpoint,
    auth: new RenewingTokens(nova.projectId),
    microversion: '2.79',
    adapter: nova.adapter,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    maxResponseBytes: MAX_RESPONSE_BYTES,
    retry: { retries: 4, minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 5000 },
    maxRequestsPerSecond: Number.POSITIVE_INFINITY,
    ...options,
  });
}

/** How a cell settled. */
export type Settled<T> = { ok: true; value: T; atMs: number } | { ok: false; error: Error; atMs: number };

/**
 * Run `p` on the fake clock until it settles, by `deadlineMs` of fake time; then run the clock on
 * (2 s) and check that no timer is left and that no request arrived after the call settled. With
 * `background` (the documented work that goes on after a call, e.g. a guard's late-create watch:
 * `() => guard.unsettledCreates().length === 0`), the clock first runs until it has ended, within
 * `deadlineMs` more.
 */
export async function runCell<T>(nova: FakeNova, p: Promise<T>, deadlineMs: number, background?: () => boolean): Promise<Settled<T>> {
  const start = Date.now();
  let out: Settled<T>;
  try {
    const value = await settle(p, deadlineMs + 1);
    out = { ok: true, value, atMs: Date.now() - start };
  } catch (error) {
    out = { ok: false, error: error as Error, atMs: Date.now() - start };
  }
  expect(out.atMs, 'settled by its deadline').toBeLessThanOrEqual(deadlineMs);
  if (background) {
    const until = Date.now() + deadlineMs;
    while (!background() && Date.now() < until) await vi.advanceTimersToNextTimerAsync();
    expect(background(), 'background work ended').toBe(true);
  }
  const seen = nova.requests.length;
  await vi.advanceTimersByTimeAsync(2000);
  expect(nova.requests.length, 'no request after the call settled').toBe(seen);
  // A hung request of the fake is not a timer of the client: the fake keeps the socket, the client gave up.
  await vi.runOnlyPendingTimersAsync();
  expect(vi.getTimerCount(), 'no timer left').toBe(0);
  return out;
}

/** The error class name of a settled cell, or `'ok'`. */
export function outcomeClass(s: Settled<unknown>): string {
  return s.ok ? 'ok' : s.error.constructor.name;
}

/** QuotaGuard options of the matrix, scaled to ms; every guard cell settles by {@link GUARD_DEADLINE_MS}. */
export const GUARD_OPTIONS = {
  minDelayMs: 5,
  baseDelayMs: 10,
  maxDelayMs: 2000,
  maxWaitMs: 4000,
  activeIntervalMs: 5,
  activeTimeoutMs: 1000,
  deleteOptions: { intervalMs: 5, timeoutMs: 1000, redeleteAfterMs: 0 },
  lostCreateIntervalMs: 100,
  // A lost POST's time surely passes 200 + 500 ms after it was sent (scaled like the rest).
  novaApiTimeoutMs: 500,
};
export const GUARD_DEADLINE_MS = 6000;
