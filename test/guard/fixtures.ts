/** Fixtures of the QuotaGuard tests: a FakeNova per test, a client with ms retries, request filters. */
import type { AxiosAdapter } from 'axios';
import { NovaClient } from '../../src/nova/client.js';
import { QuotaGuard, type QuotaGuardOptions } from '../../src/guard/quotaGuard.js';
import { FakeNova, type FakeNovaOptions, type RecordedRequest } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';

/** Start a FakeNova closed after the current test. */
export async function startNova(options: FakeNovaOptions = {}): Promise<FakeNova> {
  const nova = await FakeNova.start(options);
  afterThisTest(() => nova.close());
  return nova;
}

/** A client with millisecond retry delays, through the fake's in-process adapter (no socket). */
export function clientFor(nova: FakeNova, adapter: AxiosAdapter = nova.adapter): NovaClient {
  return new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter, retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 } });
}

/** Guard options scaled to milliseconds. */
export const FAST: QuotaGuardOptions = {
  minDelayMs: 5,
  baseDelayMs: 10,
  maxDelayMs: 80,
  maxWaitMs: 5000,
  activeIntervalMs: 5,
  activeTimeoutMs: 3000,
  deleteOptions: { intervalMs: 5, timeoutMs: 3000, redeleteAfterMs: 0 },
  // The ledger fallbacks' process warnings (NovaGuardLedgerWarning) stay out of the suite's output;
  // test/guard/ledgerOutage.test.ts asserts them with its own hook.
  onWarning: () => undefined,
};

/** A guard on a fresh client with {@link FAST} options plus `options`. */
export function guardFor(nova: FakeNova, options: QuotaGuardOptions = {}, client: NovaClient = clientFor(nova)): QuotaGuard {
  return new QuotaGuard(client, { ...FAST, ...options });
}

/** A create body. */
export function body(name: string, flavorRef = '2'): { name: string; flavorRef: string; imageRef: string; networks: 'none' } {
  return { name, flavorRef, imageRef: 'img', networks: 'none' };
}

/** `GET /limits` and `POST /servers` requests in order, as `'GET /limits'` / `'POST /servers'`. */
export function limitsAndPosts(nova: FakeNova): string[] {
  return nova.requests
    .filter((r) => (r.method === 'GET' && r.path === '/limits') || (r.method === 'POST' && r.path === '/servers'))
    .map((r) => `${r.method} ${r.path}`);
}

/** The POST /servers requests. */
export function posts(nova: FakeNova): RecordedRequest[] {
  return nova.requestsTo('POST', '/servers');
}

/** A `/limits` body with these absolute values. */
export function limitsBody(absolute: Record<string, number>): { limits: { rate: never[]; absolute: Record<string, number> } } {
  return { limits: { rate: [], absolute } };
}

/** Nova's quota 403 body. */
export function quota403(message: string): { forbidden: { code: number; message: string } } {
  return { forbidden: { code: 403, message } };
}

/** Servers of the fake that still exist (not destroyed). */
export function liveServers(nova: FakeNova): string[] {
  return nova.listServerStates().filter((s) => s.status !== 'DELETED').map((s) => s.id);
}
