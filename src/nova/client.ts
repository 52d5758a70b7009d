/**
 * `NovaClient`: the compute API v2.1 calls nova-guard needs, over axios, with per-request time limits
 * (p-timeout), bounded retries of idempotent requests (p-retry), the microversion header, and typed
 * errors that carry the request id and never a token.
 *
 * Sources: Nova API reference sections "Servers" (list, show, create, delete), "Servers - run an
 * action" (`forceDelete`), "Flavors", "Limits", "Quota sets" (`/detail`); microversion headers per the
 * api-guide "Microversions"; pagination per the api-guide "Paginated collections".
 *
 * @module
 */
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import axios, { type AxiosAdapter, type AxiosInstance, type AxiosResponse } from 'axios';
import { systemClock, type Clock } from '../core/clock.js';
import pTimeout from 'p-timeout';
import { StaticTokenProvider, type AuthProvider } from '../auth/provider.js';
import { loadCloudConfig, resolveClientOptions, type CloudClientOptions } from '../config/load.js';
import { AbortError, AuthError, InvalidResponseError, NovaApiError, NovaNetworkError, RateLimitError, ValidationError, throwIfAborted } from '../errors/index.js';
import { withRetry } from '../transport/retry.js';
import { loadCaCert } from '../transport/tls.js';
import { errorFromResponse, isServerNotFound, isTransient, networkError, requestIdOf, serverDateOf, type RequestContext } from '../transport/http.js';
import { checkDurationMs, checkPathId, checkRetryPolicy } from '../core/validate.js';
import { redactSecrets } from '../core/redact.js';
import { idObjectListMember, idObjectMember, invalidResponse, objectMember, optionalObjectListMember, type ShapeContext } from '../transport/responseShape.js';
import { componentLogger, type Logger } from '../core/logger.js';

import type { AbsoluteLimits, CreateServerBody, Flavor, Limits, QuotaDetailItem, QuotaSetDetail, Server } from '../core/types.js';
import {
  DeleteEngine,
  deleteServer as deleteServerImpl,
  deleteServers as deleteServersImpl,
  type DeleteServerOptions,
  type DeleteServerResult,
  type DeleteServersOptions,
  type DeleteServersResult,
  type UnconfirmedDelete,
} from '../delete/index.js';

/** Retry policy of idempotent requests (GET, DELETE). */
export interface RetryOptions {
  /** Retries after the first attempt. Default 4 (5 attempts in all). 0 disables retries. */
  retries?: number;
  /** Delay before the first retry, in ms; doubles each retry, randomized by [1, 2). Default 250. */
  minDelayMs?: number;
  /** Longest delay between two attempts, in ms. Default 10000. */
  maxDelayMs?: number;
  /**
   * Longest total time spent retrying one request, in ms. Default 60000. A `Retry-After` at least as
   * long as what is left of it ends the retries at once.
   */
  maxRetryTimeMs?: number;
}

/** Options of {@link NovaClient}. */
export interface NovaClientOptions {
  /**
   * Compute endpoint, e.g. `http://127.0.0.1:8774/v2.1` (with or without the project id), without
   * user info, query or fragment. Required unless `auth` provides one through the service catalog.
   */
  endpoint?: string;
  /** A fixed token (`X-Auth-Token`). Give either `token` or `auth`. */
  token?: string;
  /** A token provider (Keystone, or your own). Give either `token` or `auth`. */
  auth?: AuthProvider;
  /** Project id, used by {@link NovaClient.getQuotaSetDetail} when none is passed. */
  projectId?: string;
  /** Compute API microversion sent with every request. Default `'2.1'`. */
  microversion?: string;
  /** Time limit of one HTTP request (one attempt), in ms. Default 30000. */
  requestTimeoutMs?: number;
  /** Retry policy of idempotent requests. See {@link RetryOptions} for the defaults. */
  retry?: RetryOptions;
  /** pino logger; default silent. The client logs method, path, status, request id and timing only. */
  logger?: Logger;
  /**
   * Extra CA certificates, added to Node's defaults (`OS_CACERT`): PEM text, a Buffer, or the path of
   * a PEM file (`~/` expanded). `insecure` beats it.
   */
  caCert?: string | Buffer;
  /** Turn TLS verification off (`OS_INSECURE`). Default false: verification is on. A warning is logged. */
  insecure?: boolean;
  /** HTTP user agent. Default `nova-guard/<version>`. */
  userAgent?: string;
  /**
   * Largest response body read, in bytes. Default 67108864 (64 MiB; a full page of 1000 servers is a
   * few MiB). A larger body is cut off as it arrives and the request fails with
   * {@link InvalidResponseError}: a runaway proxy or a wrong endpoint cannot exhaust the worker's memory.
   */
  maxResponseBytes?: number;
  /**
   * The axios adapter that sends requests. Default: axios's own (node:http). For tests: a
   * `FakeNova`'s in-process `adapter` serves the same answers without a socket, so a suite can run
   * on fake timers.
   */
  adapter?: AxiosAdapter;
  /** The clock of every timer and time reading of this client and its delete engine. Default {@link systemClock}. */
  clock?: Clock;
  /**
   * Share the delete-waits of this client (`waitForDelete`, `deleteServer(id, { wait: true })`):
   * while two or more servers are pending, one `GET /servers/detail?changes-since=...` and one brief
   * `GET /servers` per tick answer for all of them (see `src/delete/engine.ts`); a single pending
   * wait looks with its own `GET /servers/{id}`. False looks with one GET a server (osc-lib's way).
   * @default true
   */
  coalesce?: boolean;
  /**
   * Cap on the requests per second of the client's delete engine: every DELETE, force-delete,
   * listing and GET that `deleteServer`, `deleteServers` and `waitForDelete` send, under one limiter
   * (like nodepool's provider `rate`). Other requests (create, limits, ...) are not capped.
   * `Infinity` for no cap. @default 10
   */
  maxRequestsPerSecond?: number;
  /**
   * Shortest time between shared ticks while two or more servers are pending, in ms.
   * @default half the smallest pending `intervalMs` (shorter while a server shows `DELETED`: its `confirmIntervalMs`)
   */
  watchIntervalMs?: number;
}

/** Options every request method takes. */
export interface RequestOptions {
  /** Abort the request (and its retries). Rejects with {@link AbortError}. */
  signal?: AbortSignal | undefined;
  /** Override the client's `requestTimeoutMs` for this call. */
  requestTimeoutMs?: number | undefined;
  /** Override the retry policy for this call; `false` makes exactly one attempt. */
  retry?: RetryOptions | false | undefined;
  /** Override which errors are retried (default: see {@link NovaClient.request}). */
  retryOn?: ((error: unknown) => boolean) | undefined;
  /** Called before each attempt with its number (1-based), e.g. to count DELETE attempts. */
  onAttempt?: ((attempt: number) => void) | undefined;
}

/** Low-level request description for {@link NovaClient.request}. */
export interface RawRequest extends RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path below the endpoint, e.g. `/servers/detail`. */
  path: string;
  /** Query parameters (undefined values are dropped). */
  query?: Record<string, string | number | boolean | undefined> | undefined;
  /** JSON body. */
  body?: unknown;
  /** Statuses to resolve with instead of throwing (2xx always resolve). */
  acceptStatus?: number[] | undefined;
  /** The server the request is about, recorded in errors. */
  serverId?: string | undefined;
}

/** What {@link NovaClient.request} resolves. */
export interface RawResponse<T = unknown> {
  status: number;
  data: T;
  /** `x-openstack-request-id`. */
  requestId: string | undefined;
  /** Nova's `Date` header, epoch ms. */
  serverDateMs: number | undefined;
  /** The request URL (endpoint + path, without the query). */
  url?: string | undefined;
}

/** Query filters of `GET /servers/detail` (Nova API reference, "List Servers Detailed"). */
export interface ListServersQuery {
  /** ISO 8601 time: servers changed since then, including recently deleted ones (status DELETED). */
  'changes-since'?: string;
  name?: string;
  status?: string;
  /** Page size; the client follows `servers_links` until the last page. */
  limit?: number;
  marker?: string;
  [filter: string]: string | number | boolean | undefined;
}

/** Counters of one client, for summaries and benchmarks. */
export interface ClientStats {
  /** HTTP requests sent (every attempt counts). */
  requests: number;
  /** Requests by method. */
  byMethod: Record<string, number>;
}

const VERSION = '0.1.0';

/** Default of {@link NovaClientOptions.maxResponseBytes}: 64 MiB. */
const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

function parseLimitValue(v: unknown): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
  return v === -1 ? Number.POSITIVE_INFINITY : v;
}

/** Parse the `absolute` block of `GET /limits`: -1 → Infinity, missing or non-numeric → undefined. */
export function parseAbsoluteLimits(absolute: unknown): AbsoluteLimits {
  const out: AbsoluteLimits = {};
  if (!absolute || typeof absolute !== 'object') return out;
  for (const [k, v] of Object.entries(absolute as Record<string, unknown>)) {
    const parsed = parseLimitValue(v);
    if (parsed !== undefined) out[k] = parsed;
  }
  return out;
}

/**
 * A client for the Nova compute API v2.1.
 *
 * @example
 * ```ts
 * const nova = new NovaClient({ endpoint: 'http://127.0.0.1:8774/v2.1', token });
 * await nova.deleteServer(id, { wait: true });
 * ```
 */
export class NovaClient {
  /** The token provider. */
  readonly auth: AuthProvider;
  /** Microversion sent with every request. */
  readonly microversion: string;
  /** Default per-request time limit, ms. */
  readonly requestTimeoutMs: number;
  /** Project id, if known. */
  readonly projectId: string | undefined;
  /** The client's logger. */
  readonly logger: Logger;
  /** The clock of the client's timers (option `clock`). */
  readonly clock: Clock;
  /** Request counters. */
  readonly stats: ClientStats = { requests: 0, byMethod: {} };
  /** `x-openstack-request-id` of the last response. */
  lastRequestId: string | undefined;
  /** Whether delete-waits are coalesced (option `coalesce`). */
  readonly coalesce: boolean;
  /** Requests-per-second cap of coalesced delete-waiting (option `maxRequestsPerSecond`). */
  readonly maxRequestsPerSecond: number;
  /** Tick interval of coalesced delete-waiting, ms (option `watchIntervalMs`), or undefined for the default. */
  readonly watchIntervalMs: number | undefined;
  /** The client's delete engine: its pending delete-waits, rate limit and unconfirmed deletions. */
  readonly deleteEngine: DeleteEngine;

  readonly #endpoint: string | undefined;
  readonly #retry: Required<RetryOptions>;
  readonly #http: AxiosInstance;
  readonly #flavors = new Map<string, Promise<Flavor>>();
  #resolvedEndpoint: Promise<string> | undefined;

  /**
   * @throws {@link ValidationError} when neither `token` nor `auth` is given, when neither `endpoint`
   * nor an `auth` with `getEndpoint` is given, when `endpoint` is not an http(s) URL or has user
   * info, a query or a fragment, or when a duration is not a positive number; {@link ConfigError}
   * when `caCert` names a file that cannot be read.
   */
  constructor(options: NovaClientOptions) {
    if (!options || typeof options !== 'object') throw new ValidationError('NovaClient needs an options object');
    const { endpoint, token, auth } = options;
    if (auth && token !== undefined) throw new ValidationError('give either token or auth, not both');
    if (!auth && (typeof token !== 'string' || token.length === 0)) {
      throw new ValidationError('NovaClient needs a token (non-empty string) or an auth provider');
    }
    if (endpoint !== undefined) {
      checkEndpoint(endpoint);
    } else if (!auth?.getEndpoint) {
      throw new ValidationError('NovaClient needs an endpoint (or an auth provider with a service catalog)');
    }
    checkDurationMs('requestTimeoutMs', options.requestTimeoutMs, { timer: true });
    checkDurationMs('watchIntervalMs', options.watchIntervalMs, { timer: true });
    const rps = options.maxRequestsPerSecond;
    if (rps !== undefined && (typeof rps !== 'number' || Number.isNaN(rps) || rps <= 0)) {
      throw new ValidationError(`maxRequestsPerSecond must be a positive number (or Infinity), got ${String(rps)}`);
    }
    if (options.coalesce !== undefined && typeof options.coalesce !== 'boolean') {
      throw new ValidationError(`coalesce must be a boolean, got ${String(options.coalesce)}`);
    }
    const r = options.retry ?? {};
    checkRetryPolicy('retry', r);
    const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    if (!Number.isInteger(maxResponseBytes) || maxResponseBytes < 1) {
      throw new ValidationError(`maxResponseBytes must be a positive integer, got ${String(options.maxResponseBytes)}`);
    }
    const mv = options.microversion ?? '2.1';
    if (!/^(2\.\d+|latest)$/.test(mv)) throw new ValidationError(`microversion must be "2.<minor>" (e.g. "2.79") or "latest", got ${JSON.stringify(mv)}`);

    this.auth = auth ?? new StaticTokenProvider(token!);
    this.#endpoint = endpoint?.replace(/\/+$/, '');
    this.microversion = mv;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30000;
    this.coalesce = options.coalesce ?? true;
    this.maxRequestsPerSecond = rps ?? 10;
    this.watchIntervalMs = options.watchIntervalMs;
    this.projectId = options.projectId ?? projectFromNoauthToken(token);
    this.logger = componentLogger(options.logger, 'nova');
    this.clock = options.clock ?? systemClock;
    this.deleteEngine = new DeleteEngine(this, { coalesce: this.coalesce, maxRequestsPerSecond: this.maxRequestsPerSecond, watchIntervalMs: this.watchIntervalMs });
    this.#retry = {
      retries: r.retries ?? 4,
      minDelayMs: r.minDelayMs ?? 250,
      maxDelayMs: r.maxDelayMs ?? 10000,
      maxRetryTimeMs: r.maxRetryTimeMs ?? 60000,
    };
    let httpsAgent: https.Agent | undefined;
    if (options.insecure) {
      httpsAgent = new https.Agent({ rejectUnauthorized: false });
      this.logger.warn('TLS verification is turned off (insecure): the server certificate is not checked');
    } else if (options.caCert) {
      // Added to Node's CAs, not instead of them (an https.Agent's `ca` replaces the defaults).
      const pem = loadCaCert(options.caCert);
      httpsAgent = new https.Agent({ ca: [...rootCertificates, typeof pem === 'string' ? pem : pem.toString('utf8')] });
    }
    this.#http = axios.create({
      validateStatus: () => true,
      // Secrets must never ride on a redirect to another host.
      maxRedirects: 0,
      maxContentLength: maxResponseBytes,
      ...(options.adapter ? { adapter: options.adapter } : {}),
      ...(httpsAgent ? { httpsAgent } : {}),
      headers: {
        Accept: 'application/json',
        'User-Agent': options.userAgent ?? `nova-guard/${VERSION}`,
      },
    });
  }

  /**
   * The compute endpoint, from the options or the provider's catalog (or `compute_endpoint_override`).
   * @throws {@link ValidationError} when the provider's endpoint is not an http(s) URL or has user
   * info, a query or a fragment (checked like the `endpoint` option).
   */
  async endpoint(signal?: AbortSignal): Promise<string> {
    if (this.#endpoint) return this.#endpoint;
    this.#resolvedEndpoint ??= this.auth.getEndpoint!({ signal }).then((e) => {
      checkEndpoint(e);
      return e.replace(/\/+$/, '');
    });
    try {
      return await this.#resolvedEndpoint;
    } catch (e) {
      this.#resolvedEndpoint = undefined;
      throw e;
    }
  }

  /**
   * Send one request with the client's headers, time limit, retries (idempotent methods and rate
   * limits only) and 401 handling, and turn failures into typed errors.
   *
   * Retries: GET and DELETE are retried on no response, request timeout, 502/503/504, 429 and 413
   * rate limits; POST and PUT only on rate limits and refused connections (nothing reached Nova).
   * A `Retry-After` header or Nova's `retryAfter` is waited out before the retry's own backoff; one
   * that is not shorter than what is left of `retry.maxRetryTimeMs` ends the retries at once (the
   * error carries `retryAfterMs`).
   *
   * @throws {@link NovaApiError} subclasses for HTTP errors, {@link NovaNetworkError} without a response,
   * {@link AbortError} when `signal` aborts, {@link ValidationError} (before any request) for a bad
   * `requestTimeoutMs` or `retry`.
   */
  async request<T = unknown>(req: RawRequest): Promise<RawResponse<T>> {
    checkDurationMs('requestTimeoutMs', req.requestTimeoutMs, { timer: true });
    if (req.retry !== false) checkRetryPolicy('retry', req.retry);
    throwIfAborted(req.signal);
    const idempotent = req.method === 'GET' || req.method === 'DELETE';
    const policy = req.retry === false ? { ...this.#retry, retries: 0 } : { ...this.#retry, ...(req.retry ?? {}) };
    const shouldRetry =
      req.retryOn ??
      ((error: unknown): boolean => {
        if (!(error instanceof NovaApiError)) return false;
        if (idempotent) return isTransient(error);
        return error instanceof RateLimitError || (error instanceof NovaNetworkError && error.code === 'ECONNREFUSED');
      });
    const startedAt = performance.now();
    return withRetry(
      (attempt) => {
        req.onAttempt?.(attempt);
        return this.#attempt<T>(req);
      },
      {
        ...policy,
        shouldRetry,
        signal: req.signal,
        onRetry: (error, attempt, retryAfterMs) => {
          // Nova asks for a pause longer than the retry budget has left: waiting it out would spend the
          // whole budget and then fail without another attempt. Fail now, with Nova's retryAfterMs.
          const askedMs = error instanceof NovaApiError ? (error.retryAfterMs ?? 0) : 0;
          const leftMs = policy.maxRetryTimeMs - (performance.now() - startedAt);
          if (askedMs > 0 && askedMs >= leftMs) {
            this.logger.debug({ method: req.method, path: req.path, attempt, retryAfterMs: askedMs, leftMs: Math.round(leftMs) }, 'Retry-After beyond the retry budget: not retrying');
            throw error;
          }
          this.logger.debug(
            { method: req.method, path: req.path, attempt, retryAfterMs, err: (error as Error).message },
            'retrying request',
          );
        },
      },
    );
  }

  async #attempt<T>(req: RawRequest, reauthenticated = false): Promise<RawResponse<T>> {
    throwIfAborted(req.signal);
    const base = await this.endpoint(req.signal);
    const token = await this.auth.getToken({ signal: req.signal });
    const url = base + req.path;
    const ctx: RequestContext = { method: req.method, url, serverId: req.serverId };
    const timeoutMs = req.requestTimeoutMs ?? this.requestTimeoutMs;
    const controller = new AbortController();
    const signal = req.signal ? AbortSignal.any([req.signal, controller.signal]) : controller.signal;
    const headers: Record<string, string> = {
      'X-Auth-Token': token,
      'X-OpenStack-Nova-API-Version': this.microversion,
      'OpenStack-API-Version': `compute ${this.microversion}`,
    };
    if (req.body !== undefined) headers['Content-Type'] = 'application/json';
    const started = performance.now();
    this.stats.requests++;
    this.stats.byMethod[req.method] = (this.stats.byMethod[req.method] ?? 0) + 1;
    let timedOut = false;
    let res: AxiosResponse;
    try {
      res = await pTimeout(
        this.#http.request({
          method: req.method,
          url,
          params: req.query ? Object.fromEntries(Object.entries(req.query).filter(([, v]) => v !== undefined)) : undefined,
          data: req.body === undefined ? undefined : JSON.stringify(req.body),
          headers,
          signal,
          responseType: 'text',
          transformResponse: [(d: unknown) => d],
        }),
        {
          milliseconds: timeoutMs,
          fallback: () => {
            timedOut = true;
            controller.abort();
            throw networkError('ETIMEDOUT', `no response within ${timeoutMs} ms`, ctx, true);
          },
        },
      );
    } catch (error) {
      if (timedOut && error instanceof NovaApiError) throw error;
      if (req.signal?.aborted) throw new AbortError(undefined, { cause: req.signal.reason });
      const e = error as { code?: string; message?: string };
      if (e.code === 'ERR_BAD_RESPONSE' && /^maxContentLength size of \d+ exceeded/.test(String(e.message))) {
        throw new InvalidResponseError({
          status: 0,
          message: `${req.method} ${url}: the response body is larger than maxResponseBytes (${String(e.message).replace(/\D+/g, ' ').trim()} bytes); it was not read`,
          method: req.method,
          url,
          serverId: req.serverId,
        });
      }
      this.logger.debug({ method: req.method, path: req.path, code: e.code }, 'request failed without a response');
      // Never rethrow the raw axios error: its config holds the token.
      throw this.#redacted(networkError(e.code, String(e.message ?? 'unknown error'), ctx, false));
    }
    const requestId = requestIdOf(res.headers as Record<string, unknown>);
    this.lastRequestId = requestId ?? this.lastRequestId;
    const elapsedMs = Math.round(performance.now() - started);
    this.logger.debug({ method: req.method, path: req.path, status: res.status, requestId, elapsedMs }, 'nova request');
    let data: unknown = res.data;
    if (typeof data === 'string' && data.length > 0) {
      try {
        data = JSON.parse(data);
      } catch {
        // keep text (HTML from a proxy, plain text)
      }
    } else if (data === '') {
      data = undefined;
    }
    if ((res.status >= 200 && res.status < 300) || req.acceptStatus?.includes(res.status)) {
      return { status: res.status, data: data as T, requestId, serverDateMs: serverDateOf(res.headers as Record<string, unknown>), url };
    }
    // A body may echo the request (a debugging proxy, an echo service at the wrong URL): no secret in the message.
    const error = this.#redacted(errorFromResponse(res.status, res.headers as Record<string, unknown>, data, ctx));
    if (error instanceof AuthError && !reauthenticated && this.auth.invalidate?.(token)) {
      this.logger.info({ method: req.method, path: req.path, requestId }, 'token rejected (401): re-authenticating once');
      return this.#attempt<T>(req, true);
    }
    throw error;
  }

  /** `error` with every secret of the auth provider (token, password, ...) removed from its message. */
  #redacted<E extends Error>(error: E): E {
    const secrets = this.auth.secrets?.() ?? [];
    if (secrets.length > 0) error.message = redactSecrets(error.message, secrets);
    return error;
  }

  /**
   * `GET /servers/{id}` (Nova API reference, "Show Server Details").
   * @throws {@link NotFoundError} when the server does not exist; {@link InvalidResponseError} when a
   * 2xx body has no `server` object with an `id`.
   */
  async getServer(id: string, options: RequestOptions = {}): Promise<Server> {
    checkPathId('server id', id);
    const res = await this.request({ method: 'GET', path: `/servers/${encodeURIComponent(id)}`, serverId: id, ...options });
    return idObjectMember<Server>(res.data, 'server', shapeContext('GET', res, id));
  }

  /**
   * `GET /servers/detail` with query filters (including `changes-since`), following `servers_links`
   * "next" links until the last page (Nova API reference, "List Servers Detailed").
   * A server listed on two pages is returned once.
   * @throws {@link InvalidResponseError} when a page has no `servers` list of objects with ids (a proxy page is
   * never taken as an empty listing), or when the next link is not a URL or asks for a marker already
   * followed (a loop: the listing would be truncated).
   */
  async listServers(query: ListServersQuery = {}, options: RequestOptions = {}): Promise<Server[]> {
    return (await this.listServersWithMeta(query, options)).servers;
  }

  /**
   * Like {@link listServers}, also returning Nova's `Date` header of the first page (for
   * `changes-since` polling on Nova's clock) and the number of pages read. With `brief: true` it
   * reads `GET /servers` (id, name and links only: Nova API reference, "List Servers") instead.
   */
  async listServersWithMeta(
    query: ListServersQuery = {},
    options: RequestOptions & { brief?: boolean } = {},
  ): Promise<{ servers: Server[]; serverDateMs: number | undefined; pages: number }> {
    const servers: Server[] = [];
    let q: Record<string, string | number | boolean | undefined> = { ...query };
    let serverDateMs: number | undefined;
    let pages = 0;
    const seenMarkers = new Set<string>();
    const seenIds = new Set<unknown>();
    for (;;) {
      const res = await this.request({
        method: 'GET',
        path: options.brief ? '/servers' : '/servers/detail',
        query: q,
        ...options,
      });
      pages++;
      serverDateMs ??= res.serverDateMs;
      const page = idObjectListMember<Server>(res.data, 'servers', shapeContext('GET', res));
      for (const server of page) {
        if (server.id !== undefined && seenIds.has(server.id)) continue; // never the same server twice
        seenIds.add(server.id);
        servers.push(server);
      }
      const links = optionalObjectListMember<{ rel?: unknown; href?: unknown }>(res.data, 'servers_links', shapeContext('GET', res));
      const href = links.find((l) => l.rel === 'next')?.href;
      const next = typeof href === 'string' ? href : undefined;
      if (!next || page.length === 0) break;
      let nextQuery: Record<string, string>;
      try {
        // Only the query of the link is used: the next page is read from this client's endpoint, never another host.
        nextQuery = Object.fromEntries(new URL(next, 'http://x').searchParams.entries());
      } catch {
        throw invalidResponse(shapeContext('GET', res), `the servers_links next link ${JSON.stringify(next.slice(0, 200))} is not a URL`);
      }
      const marker = nextQuery['marker'];
      if (!marker) break;
      if (seenMarkers.has(marker)) {
        // A next link that points back (a proxy that drops the query, a pagination bug): a silently
        // truncated listing would make an audit report drift and a reaper miss servers.
        throw invalidResponse(shapeContext('GET', res), `the servers_links next link asks again for marker ${JSON.stringify(marker)}: the pagination loops`);
      }
      seenMarkers.add(marker);
      q = { ...q, ...nextQuery };
    }
    return { servers, serverDateMs, pages };
  }

  /**
   * `POST /servers` with `{ server: body }` (Nova API reference, "Create Server"). Resolves the created
   * server as Nova returns it (`id`, `links`, `adminPass`, ...). Never retried except on a rate limit
   * or a refused connection, when the request provably did not reach Nova.
   * @throws {@link QuotaExceededError} on a quota 403, {@link ForbiddenError} on any other 403,
   * {@link BadRequestError} on 400; {@link InvalidResponseError} when the 2xx body has no `server`
   * object with an `id` (e.g. `{"reservation_id": ...}`; a server may have been created all the same).
   */
  async createServer(body: CreateServerBody, options: RequestOptions = {}): Promise<Server> {
    if (!body || typeof body !== 'object') throw new ValidationError('createServer needs the server body');
    if (typeof body.name !== 'string' || body.name.length === 0) throw new ValidationError('createServer: body.name must be a non-empty string');
    if (body.flavorRef === undefined || String(body.flavorRef).length === 0) throw new ValidationError('createServer: body.flavorRef is required');
    const res = await this.request({ method: 'POST', path: '/servers', body: { server: body }, ...options });
    return idObjectMember<Server>(res.data, 'server', {
      ...shapeContext('POST', res),
      note: 'Nova accepted the request, so a server may have been created: look for it by name',
    });
  }

  /**
   * One `DELETE /servers/{id}` (Nova API reference, "Delete Server"), retried on transient failures.
   * Resolves `'delete-requested'` on 204, `'already-gone'` on Nova's 404 for this server
   * (`Instance <id> could not be found.`).
   * @throws {@link ConflictError} on 409 (locked); {@link NotFoundError} on a 404 that does not name
   * the server (a wrong endpoint: never taken as "already gone"); other {@link NovaApiError}s after
   * the retries.
   */
  async requestDelete(id: string, options: RequestOptions = {}): Promise<'delete-requested' | 'already-gone'> {
    checkPathId('server id', id);
    try {
      await this.request({ method: 'DELETE', path: `/servers/${encodeURIComponent(id)}`, serverId: id, ...options });
      return 'delete-requested';
    } catch (e) {
      if (isServerNotFound(e, id)) return 'already-gone';
      throw e;
    }
  }

  /**
   * Delete a server, optionally waiting until Nova has really deleted it. See
   * {@link DeleteServerOptions} for the options and `src/deleteServer.ts` for the behaviour.
   */
  deleteServer(id: string, options: DeleteServerOptions = {}): Promise<DeleteServerResult> {
    return deleteServerImpl(this, id, options);
  }

  /** Delete many servers at bounded concurrency; each settles on its own. See {@link deleteServers}. */
  deleteServers(ids: readonly string[], options: DeleteServersOptions = {}): Promise<DeleteServersResult> {
    return deleteServersImpl(this, ids, options);
  }

  /**
   * Servers this client was asked to delete whose deletion is not confirmed yet (no 404, DELETED or
   * SOFT_DELETED seen): deletes requested without `wait`, and waits that timed out, failed or were
   * aborted, with the last error. A confirmed deletion leaves the list. Oldest first.
   */
  unconfirmedDeletes(): UnconfirmedDelete[] {
    return this.deleteEngine.ledger.list();
  }

  /**
   * `POST /servers/{id}/action` with `{"forceDelete": null}` (Nova API reference, "Force-Delete Server
   * (forceDelete Action)"): hard-deletes a SOFT_DELETED server. Not retried (a POST).
   * @throws {@link ForbiddenError} when policy forbids it, {@link NotFoundError}, {@link ConflictError}.
   */
  async forceDeleteServer(id: string, options: RequestOptions = {}): Promise<void> {
    checkPathId('server id', id);
    await this.request({ method: 'POST', path: `/servers/${encodeURIComponent(id)}/action`, body: { forceDelete: null }, serverId: id, ...options });
  }

  /**
   * `GET /flavors/{id}` (Nova API reference, "Show Flavor Details"). Cached per client by id, since a
   * flavor's vcpus and RAM never change; a failed read is not cached.
   * @throws {@link InvalidResponseError} when a 2xx body has no `flavor` object; {@link ValidationError}
   * (as a rejection) for a bad id.
   */
  getFlavor(id: string, options: RequestOptions = {}): Promise<Flavor> {
    try {
      checkPathId('flavor id', String(id));
    } catch (e) {
      return Promise.reject(e as Error); // a Promise-returning method never throws synchronously
    }
    const key = String(id);
    let p = this.#flavors.get(key);
    if (!p) {
      p = this.request({ method: 'GET', path: `/flavors/${encodeURIComponent(key)}`, ...options }).then((r) =>
        objectMember<Flavor>(r.data, 'flavor', shapeContext('GET', r)),
      );
      this.#flavors.set(key, p);
      p.catch(() => this.#flavors.delete(key));
    }
    return p;
  }

  /**
   * `GET /limits` (Nova API reference, "Limits"), the `absolute` block parsed: -1 → `Infinity`,
   * missing or non-numeric → `undefined`, never `NaN`. Never cached.
   * @throws {@link InvalidResponseError} when a 2xx body has no `limits.absolute` object.
   */
  async getLimits(options: RequestOptions = {}): Promise<Limits> {
    const res = await this.request({ method: 'GET', path: '/limits', ...options });
    const limits = objectMember<Record<string, unknown>>(res.data, 'limits', shapeContext('GET', res));
    const absolute = objectMember<Record<string, unknown>>(limits, 'absolute', shapeContext('GET', res));
    return { absolute: parseAbsoluteLimits(absolute), requestId: res.requestId, serverDateMs: res.serverDateMs };
  }

  /**
   * `GET /os-quota-sets/{project_id}/detail` (Nova API reference, "Quota Sets", "Show The Detail of
   * Quota"). Each resource's `limit` -1 becomes `Infinity`.
   * @param projectId - Defaults to the client's project id.
   * @throws {@link ValidationError} when no project id is known; {@link ForbiddenError} when policy
   * forbids; {@link InvalidResponseError} when a 2xx body has no `quota_set` object.
   */
  async getQuotaSetDetail(projectId: string | undefined = this.projectId, options: RequestOptions = {}): Promise<QuotaSetDetail> {
    if (!projectId) throw new ValidationError('getQuotaSetDetail needs a project id (pass one, or set projectId on the client)');
    const res = await this.request({
      method: 'GET',
      path: `/os-quota-sets/${encodeURIComponent(projectId)}/detail`,
      ...options,
    });
    const out: QuotaSetDetail = {};
    for (const [k, v] of Object.entries(objectMember<Record<string, unknown>>(res.data, 'quota_set', shapeContext('GET', res)))) {
      if (v && typeof v === 'object') {
        const item = v as Record<string, unknown>;
        const d: QuotaDetailItem = {};
        const inUse = parseLimitValue(item['in_use']);
        const limit = parseLimitValue(item['limit']);
        const reserved = typeof item['reserved'] === 'number' ? item['reserved'] : undefined;
        if (inUse !== undefined) d.in_use = inUse;
        if (limit !== undefined) d.limit = limit;
        if (reserved !== undefined) d.reserved = reserved;
        out[k] = d;
      } else if (typeof v === 'string') {
        out[k] = v;
      }
    }
    return out;
  }

  /** Never shows the token. */
  toJSON(): Record<string, unknown> {
    return { endpoint: this.#endpoint, microversion: this.microversion, projectId: this.projectId };
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `NovaClient { endpoint: ${JSON.stringify(this.#endpoint ?? '(from catalog)')}, microversion: '${this.microversion}' }`;
  }

  /**
   * A client for a cloud of `clouds.yaml` (merged with `secure.yaml`), found like the `openstack`
   * command does: `name`, else `OS_CLOUD`, else the `OS_*` variables, else the file's only cloud.
   * Authenticates once (Keystone v3), so bad credentials fail here and `projectId` is the token's.
   * See `src/config.ts` (`loadCloudConfig`, `resolveClientOptions`); `options` win over the cloud's.
   * @throws {@link ConfigError} naming the file and key; {@link AuthError} when Keystone rejects the credentials.
   */
  static async fromCloud(name?: string, options?: CloudClientOptions): Promise<NovaClient> {
    return new NovaClient(await resolveClientOptions(loadCloudConfig({ cloud: name }), options));
  }

  /**
   * A client from the environment `env` (default `process.env`): `OS_CLOUD` and clouds.yaml, or the
   * `OS_*` variables alone. Same behaviour and errors as {@link NovaClient.fromCloud}.
   */
  static async fromEnv(env: Record<string, string | undefined> = process.env, options?: CloudClientOptions): Promise<NovaClient> {
    return new NovaClient(await resolveClientOptions(loadCloudConfig({ env }), options));
  }
}

/** The context of a shape error for `res` (see `src/responseShape.ts`). */
function shapeContext(method: string, res: RawResponse, serverId?: string): ShapeContext {
  return { method, url: res.url ?? '', status: res.status, requestId: res.requestId, serverId };
}

/**
 * An http(s) URL without user info (it would reach error messages and logs), query or fragment (the
 * client appends paths to it). The message never repeats a password.
 */
function checkEndpoint(endpoint: unknown): void {
  let url: URL | undefined;
  try {
    url = typeof endpoint === 'string' && /^https?:\/\/[^/]+/i.test(endpoint) ? new URL(endpoint) : undefined;
  } catch {
    url = undefined;
  }
  const shown = typeof endpoint === 'string' ? JSON.stringify(endpoint.replace(/\/\/[^@/]*@/, '//')) : String(endpoint);
  if (!url) throw new ValidationError(`endpoint must be an http(s) URL, got ${shown}`);
  if (url.username !== '' || url.password !== '') throw new ValidationError('endpoint must not contain user info (user:password@): give the token as token or auth');
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(endpoint as string)) {
    throw new ValidationError(`endpoint must not have a query or fragment, got ${shown}`);
  }
}

/** noauth2 tokens look like `user:project`; their project is the client's default project. */
function projectFromNoauthToken(token: string | undefined): string | undefined {
  if (!token) return undefined;
  const m = /^[^:\s]+:([^:\s]+)$/.exec(token);
  return m ? m[1] : undefined;
}
