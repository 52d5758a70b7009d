/**
 * A hostile front for the scripted Nova: a test may answer any request itself (a truncated or
 * endless listing, an odd 404 body, a garbled `Date`), everything else goes to the scripted Nova.
 */
import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';
import { afterEach, beforeEach, vi } from 'vitest';
import { NovaClient, type NovaClientOptions } from '../../../src/index.js';
import { ScriptedNova } from './scriptedNova.js';

/** Answer a request (path without `/v2.1`), or undefined to let the scripted Nova answer it. */
export type Override = (req: { config: InternalAxiosRequestConfig; method: string; path: string }) => Promise<AxiosResponse> | AxiosResponse | undefined;

/** A scripted Nova, a client on it, and a slot for the test's own answers. */
export function hostileSetup(options: Partial<NovaClientOptions> = {}): { nova: ScriptedNova; client: NovaClient; front: { override: Override } } {
  const nova = new ScriptedNova();
  const front: { override: Override } = { override: () => undefined };
  const adapter: AxiosAdapter = async (config) => {
    const path = new URL(config.url ?? '', 'http://nova.test').pathname.replace(/^\/v2\.1/, '');
    const mine = front.override({ config, method: String(config.method ?? 'get').toUpperCase(), path });
    return mine ?? nova.adapter(config);
  };
  const client = new NovaClient({ endpoint: 'http://nova.test/v2.1', token: 'admin:p', microversion: '2.79', adapter, maxRequestsPerSecond: Number.POSITIVE_INFINITY, ...options });
  return { nova, client, front };
}

/** A response to `config` with a JSON (or text) body and Nova's usual headers. */
export function reply(config: InternalAxiosRequestConfig, status: number, data: unknown, headers: Record<string, string> = {}): AxiosResponse {
  return {
    status,
    statusText: String(status),
    data: typeof data === 'string' ? data : data === undefined ? '' : JSON.stringify(data),
    headers: { date: new Date().toUTCString(), 'content-type': 'application/json', ...headers },
    config,
    request: {},
  };
}

/** Settle `p` while advancing the fake clock in 10 ms steps; its outcome and the time (since `t0`) it settled. */
export async function settle<T>(p: Promise<T>, t0: number, advance: (ms: number) => Promise<unknown>, maxMs = 600_000): Promise<{ value?: T; error?: unknown; settledAt: number }> {
  let settled: { value?: T; error?: unknown; settledAt: number } | undefined;
  p.then(
    (value) => (settled = { value, settledAt: Date.now() - t0 }),
    (error: unknown) => (settled = { error, settledAt: Date.now() - t0 }),
  );
  for (let t = 0; t < maxMs && !settled; t += 10) await advance(10);
  if (!settled) throw new Error('did not settle');
  return settled;
}

/** The fake clock's start in the hostile suites (epoch ms). */
export const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

/** Fake timers from {@link T0} around each test of the calling file (real ones after). */
export function useHostileClock(): void {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

/** {@link settle} on the fake clock from {@link T0}, in 10 ms steps, for at most `maxMs`. */
export const run = <T>(p: Promise<T>, maxMs?: number): ReturnType<typeof settle<T>> => settle(p, T0, (ms) => vi.advanceTimersByTimeAsync(ms), maxMs);
