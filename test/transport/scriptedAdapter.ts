/**
 * An axios adapter that answers from a script, without a socket, so that retry, backoff and time
 * limit schedules run on fake timers. Records each request with the (fake) time it went out, and
 * whether its signal was aborted (a released socket).
 */
import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';

/** What the script answers to one request. */
export type ScriptedReply =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { hang: true }
  | { error: string };

/** One request as the adapter saw it. */
export interface SentRequest {
  method: string;
  /** URL without the query. */
  url: string;
  /** `performance.now()` when it was sent (fake under `vi.useFakeTimers()`). */
  atMs: number;
  headers: Record<string, unknown>;
  body: string | undefined;
  /** True once the request's signal aborted (the transport released it). */
  aborted: boolean;
}

/** An adapter answering `script(request, n)` (n: 1-based count of requests so far). */
export function scriptedAdapter(script: (req: SentRequest, n: number) => ScriptedReply): { adapter: AxiosAdapter; sent: SentRequest[] } {
  const sent: SentRequest[] = [];
  const adapter: AxiosAdapter = (config: InternalAxiosRequestConfig) => {
    const req: SentRequest = {
      method: String(config.method ?? 'get').toUpperCase(),
      url: String(config.url ?? ''),
      atMs: performance.now(),
      headers: { ...(config.headers as unknown as Record<string, unknown>) },
      body: typeof config.data === 'string' ? config.data : undefined,
      aborted: false,
    };
    sent.push(req);
    const signal = config.signal as AbortSignal | undefined;
    signal?.addEventListener('abort', () => (req.aborted = true), { once: true });
    const reply = script(req, sent.length);
    return new Promise<AxiosResponse>((resolve, reject) => {
      const onAbort = (): void => reject(Object.assign(new Error('canceled'), { code: 'ERR_CANCELED', name: 'CanceledError' }));
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      if ('hang' in reply) return;
      if ('error' in reply) {
        reject(Object.assign(new Error(`${reply.error} (scripted)`), { code: reply.error }));
        return;
      }
      const text = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
      // Header names in lower case, as node:http gives them.
      const headers = Object.fromEntries(Object.entries({ 'content-type': 'application/json', ...(reply.headers ?? {}) }).map(([k, v]) => [k.toLowerCase(), v]));
      resolve({ status: reply.status, statusText: '', headers, data: text, config, request: {} });
    });
  };
  return { adapter, sent };
}

/** A Keystone token body (`POST /v3/auth/tokens`) with a one-hour token and a compute endpoint. */
export function tokenBody(computeUrl: string, nowMs: number): unknown {
  return {
    token: {
      methods: ['password'],
      expires_at: new Date(nowMs + 3_600_000).toISOString(),
      issued_at: new Date(nowMs).toISOString(),
      project: { id: 'p1', name: 'ci' },
      user: { id: 'u1', name: 'ci-bot' },
      roles: [{ name: 'member' }],
      catalog: [{ type: 'compute', name: 'nova', endpoints: [{ interface: 'public', region: 'RegionOne', url: computeUrl }] }],
    },
  };
}
