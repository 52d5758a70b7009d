/**
 * Helpers for the FakeNova tests (deliberately not using nova-guard's client): plain `fetch` to the
 * socket, or plain axios with the fake's in-process adapter, giving the same {@link Exchange}.
 */
import axios from 'axios';
import { vi } from 'vitest';
import type { FakeNova } from '../../src/testing/index.js';

/** How a test reaches the fake: its socket (`fetch`) or its in-process axios adapter. */
export type Front = 'http' | 'adapter';
/** Both fronts, for `describe.each`. */
export const FRONTS: readonly Front[] = ['http', 'adapter'];

/** One exchange: status, headers, raw text and parsed JSON (undefined when not JSON). */
export interface Exchange {
  status: number;
  headers: Headers;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Options of {@link call}. */
export interface CallOptions {
  body?: unknown;
  token?: string | null;
  microversion?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Default `'http'`. */
  front?: Front;
}

/** `fetch(nova.endpoint + path)` with an admin noauth token and microversion 2.79 by default. */
export async function call(nova: FakeNova, method: string, path: string, opts: CallOptions = {}): Promise<Exchange> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const token = opts.token === undefined ? 'admin:demo' : opts.token;
  if (token !== null) headers['X-Auth-Token'] = token;
  const mv = opts.microversion ?? '2.79';
  if (mv !== '') headers['OpenStack-API-Version'] = `compute ${mv}`;
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  Object.assign(headers, opts.headers ?? {});
  const data = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  if (opts.front === 'adapter') {
    const res = await axios.request<string>({
      adapter: nova.adapter,
      method,
      url: nova.endpoint + path,
      headers,
      data,
      transformRequest: [(d: unknown) => d], // send the text as is, like fetch
      signal: opts.signal,
      responseType: 'text',
      transformResponse: [(d: string) => d],
      validateStatus: () => true,
    });
    const h = new Headers();
    for (const [name, value] of Object.entries(res.headers)) if (value !== undefined && value !== null) h.set(name, String(value));
    return exchange(res.status, h, res.data);
  }
  const res = await fetch(nova.endpoint + path, {
    method,
    headers,
    body: data,
    signal: opts.signal,
  });
  return exchange(res.status, res.headers, await res.text());
}

function exchange(status: number, headers: Headers, text: string): Exchange {
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status, headers, text, json };
}

/** {@link call} and {@link createServer} bound to one front. */
export function via(front: Front): { call: typeof call; createServer: typeof createServer } {
  return {
    call: (nova, method, path, opts = {}) => call(nova, method, path, { front, ...opts }),
    createServer: (nova, flavorRef, name = 'ci', extra = {}) =>
      call(nova, 'POST', '/servers', { front, body: { server: { name, flavorRef, networks: 'none', ...extra } } }),
  };
}

/** POST /servers with networks "none"; returns the exchange. */
export function createServer(
  nova: FakeNova,
  flavorRef: string,
  name = 'ci',
  extra: Record<string, unknown> = {},
): Promise<Exchange> {
  return call(nova, 'POST', '/servers', { body: { server: { name, flavorRef, networks: 'none', ...extra } } });
}

/**
 * Wait until `check()` is true, polling every 2 ms, at most `timeoutMs`; on fake timers each poll
 * moves the fake clock 2 ms (so a state that lasts a few ms is seen however busy the machine).
 */
export async function until(check: () => boolean, timeoutMs = 2000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    if (vi.isFakeTimers()) await vi.advanceTimersByTimeAsync(2);
    else await new Promise((r) => setTimeout(r, 2));
  }
}
