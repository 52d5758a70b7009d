/**
 * A scripted Nova behind an axios adapter (the `adapter` option of NovaClient): no socket, no timer,
 * so a test on fake timers (`vi.useFakeTimers()`) sees exactly when each request goes out. Answers
 * are queued per `METHOD /path` (used once each, in order); without one, a small default Nova
 * answers: flavors 1, 2, 3 (as FakeNova's), `/limits` from {@link ScriptedNova.absolute}, `POST
 * /servers` → 202, `GET /servers/{id}` → ACTIVE (404 after its DELETE), `DELETE` → 204,
 * `GET /servers/detail?name=<regex>` → the created servers (name and metadata as POSTed) not deleted.
 * A queued reply with `created: true` to `POST /servers` creates the server first (a create whose
 * answer is lost or garbled); `reset: true` answers no response (ECONNRESET).
 */
import { vi } from 'vitest';
import { AxiosError, type AxiosAdapter, type AxiosResponse, type InternalAxiosRequestConfig } from 'axios';
import { NovaClient } from '../../src/nova/client.js';

/** One answer. */
export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** `POST /servers` only: Nova creates the server, then this reply (or the reset) is what the client gets. */
  created?: boolean;
  /** No response: the connection is reset (`ECONNRESET`). `status` is then ignored. */
  reset?: boolean;
}

/** A server the scripted Nova created. */
export interface ScriptedServer {
  id: string;
  name: string;
  metadata: Record<string, string>;
}

/** One request as the scripted Nova saw it. */
export interface Sent {
  method: string;
  /** Path after the endpoint, e.g. `/limits`, `/servers/00000001-0000-4000-8000-000000000000`. */
  path: string;
  /** `performance.now()` when it was sent, ms since the ScriptedNova was made (fake timers: exact). */
  atMs: number;
  /** `Date.now()` when it was sent (faked too under fake timers). */
  wallMs: number;
  /** Status answered. */
  status: number;
  /** The created server's id, for a `POST /servers` answered 202. */
  serverId?: string | undefined;
}

const FLAVORS: Record<string, { vcpus: number; ram: number }> = { '1': { vcpus: 1, ram: 512 }, '2': { vcpus: 2, ram: 2048 }, '3': { vcpus: 4, ram: 4096 } };

/** A scripted Nova; see the module description. */
export class ScriptedNova {
  readonly endpoint = 'http://nova.test/v2.1';
  readonly sent: Sent[] = [];
  /** The `absolute` block the default `GET /limits` answers. */
  absolute: Record<string, number> = { maxTotalCores: 20, totalCoresUsed: 0, maxTotalInstances: 10, totalInstancesUsed: 0, maxTotalRAMSize: 51200, totalRAMUsed: 0 };
  readonly #queued = new Map<string, Reply[]>();
  readonly #deleted = new Set<string>();
  /** Servers created by `POST /servers` (default 202, or a reply with `created: true`), in order. */
  readonly servers: ScriptedServer[] = [];
  readonly #t0 = performance.now();
  #created = 0;

  /** Queue answers for `key` (`'GET /limits'`, `'POST /servers'`), each used once. */
  reply(key: string, ...replies: Reply[]): this {
    this.#queued.set(key, [...(this.#queued.get(key) ?? []), ...replies]);
    return this;
  }

  /** A client on this scripted Nova (no client retries: the guard's own policy is under test). */
  client(): NovaClient {
    return new NovaClient({ endpoint: this.endpoint, token: 'admin:p1', microversion: '2.79', adapter: this.adapter, retry: { retries: 0 } });
  }

  /** Requests as `'GET /limits'` / `'POST /servers'`, in order. */
  limitsAndPosts(): string[] {
    return this.sent.filter((r) => (r.method === 'GET' && r.path === '/limits') || (r.method === 'POST' && r.path === '/servers')).map((r) => `${r.method} ${r.path}`);
  }

  /** `[request, atMs]` of `GET /limits` and `POST /servers`, in order. */
  schedule(): Array<[string, number]> {
    return this.sent
      .filter((r) => (r.method === 'GET' && r.path === '/limits') || (r.method === 'POST' && r.path === '/servers'))
      .map((r) => [`${r.method} ${r.path}`, r.atMs]);
  }

  /** The `POST /servers` requests. */
  posts(): Sent[] {
    return this.sent.filter((r) => r.method === 'POST' && r.path === '/servers');
  }

  readonly adapter: AxiosAdapter = async (config: InternalAxiosRequestConfig): Promise<AxiosResponse> => {
    const method = String(config.method ?? 'get').toUpperCase();
    const path = String(config.url ?? '').slice(this.endpoint.length).split('?')[0]!;
    const record: Sent = { method, path, atMs: Math.round(performance.now() - this.#t0), wallMs: Date.now(), status: 0 };
    this.sent.push(record);
    const queue = this.#queued.get(`${method} ${path}`);
    const reply = queue && queue.length > 0 ? queue.shift()! : this.#default(method, path, record, config);
    if (reply.created) this.#create(record, config);
    if (reply.reset) {
      record.status = 0;
      throw AxiosError.from(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), undefined, config, {});
    }
    record.status = reply.status;
    const data = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    return {
      data,
      status: reply.status,
      statusText: String(reply.status),
      // Lower-case names, as Node's HTTP parser gives them to axios.
      headers: Object.fromEntries(
        Object.entries({ 'content-type': 'application/json', 'x-openstack-request-id': `req-00000000-0000-4000-8000-${String(this.sent.length).padStart(12, '0')}`, ...(reply.headers ?? {}) }).map(([k, v]) => [k.toLowerCase(), v]),
      ),
      config,
      request: {},
    };
  };

  /** Servers created and not deleted. */
  liveServers(): ScriptedServer[] {
    return this.servers.filter((srv) => !this.#deleted.has(srv.id));
  }

  #create(record: Sent, config: InternalAxiosRequestConfig): ScriptedServer {
    const posted = (typeof config.data === 'string' ? JSON.parse(config.data) : config.data) as { server: { name: string; metadata?: Record<string, string> } };
    record.serverId = `${String(++this.#created).padStart(8, '0')}-0000-4000-8000-000000000000`;
    const created = { id: record.serverId, name: posted.server.name, metadata: { ...(posted.server.metadata ?? {}) } };
    this.servers.push(created);
    return created;
  }

  #default(method: string, path: string, record: Sent, config: InternalAxiosRequestConfig): Reply {
    const flavor = /^\/flavors\/([^/]+)$/.exec(path);
    if (method === 'GET' && flavor && FLAVORS[flavor[1]!]) return { status: 200, body: { flavor: { id: flavor[1], ...FLAVORS[flavor[1]!] } } };
    if (method === 'GET' && path === '/limits') return { status: 200, body: { limits: { rate: [], absolute: this.absolute } } };
    if (method === 'POST' && path === '/servers') {
      const created = this.#create(record, config);
      return { status: 202, body: { server: { id: created.id, adminPass: 'x' } } };
    }
    if (method === 'GET' && path === '/servers/detail') {
      const query = new URL(String(config.url), 'http://x').searchParams;
      const name = (config.params as Record<string, string> | undefined)?.['name'] ?? query.get('name') ?? undefined;
      const re = name === undefined ? undefined : new RegExp(name);
      const servers = this.liveServers()
        .filter((srv) => !re || re.test(srv.name))
        .map((srv) => ({ id: srv.id, name: srv.name, metadata: srv.metadata, status: 'ACTIVE', 'OS-EXT-STS:task_state': null }));
      return { status: 200, body: { servers } };
    }
    const server = /^\/servers\/([^/]+)$/.exec(path);
    if (server) {
      const id = server[1]!;
      if (method === 'DELETE') {
        this.#deleted.add(id);
        return { status: 204 };
      }
      if (this.#deleted.has(id)) return { status: 404, body: { itemNotFound: { code: 404, message: `Instance ${id} could not be found.` } } };
      return { status: 200, body: { server: { id, status: 'ACTIVE', 'OS-EXT-STS:task_state': null } } };
    }
    return { status: 404, body: { itemNotFound: { code: 404, message: 'The resource could not be found.' } } };
  }
}

/** A `/limits` answer with these absolute values. */
export function limitsReply(absolute: Record<string, number>): Reply {
  return { status: 200, body: { limits: { rate: [], absolute } } };
}

/** Nova's quota 403. */
export function quota403Reply(message: string, headers?: Record<string, string>): Reply {
  return { status: 403, body: { forbidden: { code: 403, message } }, ...(headers ? { headers } : {}) };
}

/** The real `setImmediate`, taken before any test fakes the timers. */
const realSetImmediate = globalThis.setImmediate;

/**
 * Drive fake timers until `promise` settles (each step runs the next timer and the microtasks after
 * it); resolves its value or rejects with its error.
 */
export async function onFakeTimers<T>(promise: Promise<T>): Promise<T> {
  let done = false;
  const settled = promise.finally(() => {
    done = true;
  });
  settled.catch(() => undefined);
  for (let i = 0; i < 100000 && !done; i++) {
    await vi.advanceTimersToNextTimerAsync();
    // A few real turns of the event loop (no fake time passes): what the step's timer started
    // settles before the next timer runs.
    for (let j = 0; j < 3 && !done; j++) await new Promise<void>((resolve) => realSetImmediate(() => resolve()));
  }
  return settled;
}
