/**
 * A scripted Nova behind an axios adapter, for the delete engine's tests on fake timers: each server
 * follows a timeline (DELETE accepted, `task_state` deleting, status `DELETED`, 404), every request
 * can be given a fault (5xx, reset, hang, delay, a proxy's 404, another server's body, status in
 * lower case), and Nova's clock can be skewed from the client's. The client above it is the real
 * `NovaClient` (transport, error mapping, retries, time limits); only the socket is left out.
 */
import { AxiosError, CanceledError, type AxiosAdapter, type AxiosResponse, type InternalAxiosRequestConfig } from 'axios';

/** How a server's deletion goes, in ms after its first accepted DELETE (true time). */
export interface Timeline {
  /** Status `DELETED` from then on (task_state null). Undefined: never (stuck in deleting). */
  deletedAfterMs?: number | undefined;
  /** 404 from then on. Undefined: never. Must be >= deletedAfterMs when both are set. */
  goneAfterMs?: number | undefined;
  /** Ends in ERROR (no task) at this time instead. */
  errorAfterMs?: number | undefined;
  /** The DELETE itself answers 404 (the server never existed). */
  unknown?: boolean;
  /** The DELETE answers 204 and nothing happens: ACTIVE with no task, for ever. */
  ignoresDelete?: boolean;
}

/** A fault for one request, or undefined for Nova's own answer. */
export type Fault =
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'reset' }
  | { kind: 'hang' }
  | { kind: 'delay'; ms: number }
  | { kind: 'proxy404' }
  | { kind: 'otherServer' }
  | { kind: 'lowercase' };

/** One request the scripted Nova received. */
export interface Seen {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Fake-clock time it arrived, ms. */
  at: number;
  serverId: string | undefined;
  /** Status answered (0 for a reset, hang or abort). */
  status: number;
  /** The microversion asked for (`X-OpenStack-Nova-API-Version`). */
  microversion: string | undefined;
}

interface ServerState {
  id: string;
  timeline: Timeline;
  deleteAcceptedAt: number | undefined;
}

const json = (v: unknown): string => JSON.stringify(v);

/** A scripted Nova. */
export class ScriptedNova {
  readonly seen: Seen[] = [];
  readonly servers = new Map<string, ServerState>();
  /** Nova's clock minus the client's, ms. */
  skewMs = 0;
  /** The highest minor microversion this Nova has (a higher one gets 406, as Nova answers). */
  maxMicroversionMinor = 93;
  /** Called for every request: return a fault, or undefined for the normal answer. */
  fault: (req: { method: string; path: string; serverId: string | undefined; listing: 'changes-since' | 'whole' | 'brief' | undefined }) => Fault | undefined = () => undefined;

  add(id: string, timeline: Timeline): void {
    this.servers.set(id, { id, timeline, deleteAcceptedAt: undefined });
  }

  /** The first time `id` answers 404 (true time), or undefined while it never will. */
  goneAt(id: string): number | undefined {
    const s = this.servers.get(id);
    if (!s) return Number.NEGATIVE_INFINITY;
    if (s.timeline.unknown) return Number.NEGATIVE_INFINITY;
    if (s.deleteAcceptedAt === undefined || s.timeline.goneAfterMs === undefined) return undefined;
    return s.deleteAcceptedAt + s.timeline.goneAfterMs;
  }

  #state(s: ServerState, now: number): { status: string; taskState: string | null; updatedAt: number; gone: boolean } {
    const t = s.timeline;
    const d = s.deleteAcceptedAt;
    if (t.unknown) return { status: 'GONE', taskState: null, updatedAt: 0, gone: true };
    if (d === undefined || t.ignoresDelete) return { status: 'ACTIVE', taskState: null, updatedAt: 0, gone: false };
    const since = now - d;
    if (t.goneAfterMs !== undefined && since >= t.goneAfterMs) return { status: 'DELETED', taskState: null, updatedAt: d + t.goneAfterMs, gone: true };
    if (t.errorAfterMs !== undefined && since >= t.errorAfterMs) return { status: 'ERROR', taskState: null, updatedAt: d + t.errorAfterMs, gone: false };
    if (t.deletedAfterMs !== undefined && since >= t.deletedAfterMs) return { status: 'DELETED', taskState: null, updatedAt: d + t.deletedAfterMs, gone: false };
    return { status: 'ACTIVE', taskState: 'deleting', updatedAt: d, gone: false };
  }

  #body(s: ServerState, st: { status: string; taskState: string | null; updatedAt: number }, lowercase: boolean): Record<string, unknown> {
    return {
      id: s.id,
      name: `srv-${s.id}`,
      status: lowercase ? st.status.toLowerCase() : st.status,
      'OS-EXT-STS:task_state': st.taskState,
      updated: new Date(st.updatedAt + this.skewMs).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    };
  }

  /** The axios adapter. */
  readonly adapter: AxiosAdapter = (config: InternalAxiosRequestConfig) => {
    const url = new URL(config.url ?? '', 'http://nova.test');
    const path = url.pathname.replace(/^\/v2\.1/, '');
    const query: Record<string, string> = {};
    for (const [k, v] of Object.entries((config.params ?? {}) as Record<string, unknown>)) if (v !== undefined) query[k] = String(v);
    const method = String(config.method ?? 'get').toUpperCase();
    const m = /^\/servers\/([^/]+)(\/action)?$/.exec(path);
    const serverId = m && m[1] !== 'detail' ? decodeURIComponent(m[1]!) : undefined;
    const listing = path === '/servers/detail' ? (query['changes-since'] === undefined ? 'whole' : 'changes-since') : path === '/servers' ? 'brief' : undefined;
    const now = Date.now();
    const headers = config.headers as { get?: (name: string) => unknown } | undefined;
    const mvHeader = headers?.get?.('X-OpenStack-Nova-API-Version');
    const microversion = mvHeader === undefined || mvHeader === null ? undefined : String(mvHeader);
    const seen: Seen = { method, path, query, at: now, serverId, status: 0, microversion };
    this.seen.push(seen);
    const fault = this.fault({ method, path, serverId, listing });
    const respond = (status: number, data: unknown, headers: Record<string, string> = {}): AxiosResponse => {
      seen.status = status;
      return {
        status,
        statusText: String(status),
        data: typeof data === 'string' ? data : data === undefined ? '' : json(data),
        headers: { date: new Date(Date.now() + this.skewMs).toUTCString(), 'x-openstack-request-id': `req-${this.seen.length}`, ...headers },
        config,
        request: {},
      };
    };
    const minor = Number(/^2\.(\d+)$/.exec(microversion ?? '')?.[1] ?? 1);
    if (minor > this.maxMicroversionMinor) {
      return Promise.resolve(respond(406, { computeFault: { code: 406, message: `Version 2.${minor} is not supported by the API. Minimum is 2.1 and maximum is 2.${this.maxMicroversionMinor}.` } }));
    }
    const answer = (): AxiosResponse => this.#answer(method, path, query, serverId, fault, respond);
    const signal = config.signal as AbortSignal | undefined;
    if (fault?.kind === 'reset') return Promise.reject(new AxiosError('socket hang up', 'ECONNRESET', config));
    if (fault?.kind === 'hang' || fault?.kind === 'delay') {
      return new Promise<AxiosResponse>((resolve, reject) => {
        const onAbort = (): void => {
          clearTimeout(timer);
          reject(new CanceledError(undefined, undefined, config));
        };
        const timer = fault.kind === 'delay' ? setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve(answer());
        }, fault.ms) : undefined;
        if (signal?.aborted) onAbort();
        else signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
    return Promise.resolve(answer());
  };

  #answer(
    method: string,
    path: string,
    query: Record<string, string>,
    serverId: string | undefined,
    fault: Fault | undefined,
    respond: (status: number, data: unknown, headers?: Record<string, string>) => AxiosResponse,
  ): AxiosResponse {
    const now = Date.now();
    if (fault?.kind === 'status') return respond(fault.status, fault.body ?? { computeFault: { code: fault.status, message: 'Injected' } }, fault.headers);
    if (fault?.kind === 'proxy404') return respond(404, '<html><body><h1>404 Not Found</h1></body></html>', { 'content-type': 'text/html' });
    const notFound = (id: string): AxiosResponse => respond(404, { itemNotFound: { code: 404, message: `Instance ${id} could not be found.` } });
    if (serverId !== undefined) {
      const s = this.servers.get(serverId);
      const st = s ? this.#state(s, now) : undefined;
      if (!s || !st || st.gone) return notFound(serverId);
      if (method === 'DELETE') {
        s.deleteAcceptedAt ??= now;
        return respond(204, undefined);
      }
      if (method === 'POST') return respond(202, undefined);
      if (fault?.kind === 'otherServer') return respond(200, { server: { ...this.#body(s, st, false), id: 'someone-else' } });
      return respond(200, { server: this.#body(s, st, fault?.kind === 'lowercase') });
    }
    if (path === '/servers/detail') {
      const since = Date.parse(query['changes-since'] ?? '');
      const servers = [];
      for (const s of this.servers.values()) {
        if (s.timeline.unknown) continue;
        const st = this.#state(s, now);
        // As Nova: a plain listing hides destroyed servers; `changes-since` shows them as DELETED.
        if (Number.isFinite(since) ? st.updatedAt + this.skewMs < since : st.gone) continue;
        servers.push(this.#body(s, st, fault?.kind === 'lowercase'));
      }
      return respond(200, { servers });
    }
    if (path === '/servers') {
      const servers = [...this.servers.values()].filter((s) => !s.timeline.unknown && !this.#state(s, now).gone).map((s) => ({ id: s.id, name: `srv-${s.id}`, links: [] }));
      return respond(200, { servers });
    }
    return respond(404, { itemNotFound: { code: 404, message: 'The resource could not be found.' } });
  }
}
