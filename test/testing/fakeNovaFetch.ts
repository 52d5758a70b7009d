/**
 * Plain-`fetch` helpers for the FakeNova tests (deliberately not using nova-guard's client).
 */
import type { FakeNova } from '../../src/testing/index.js';

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
  const res = await fetch(nova.endpoint + path, {
    method,
    headers,
    body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
    signal: opts.signal,
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
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

/** Wait until `check()` is true, polling every 2 ms, at most `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs = 2000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}
