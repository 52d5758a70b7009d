/**
 * `NovaClient`: the compute API v2.1 calls nova-guard needs (servers, flavors, limits, quota sets),
 * typed, over the one {@link Transport} (time limits, retries of idempotent requests, typed errors
 * that carry the request id and never a token).
 *
 * Sources: Nova API reference sections "Servers" (list, show, create, delete), "Servers - run an
 * action" (`forceDelete`), "Flavors", "Limits", "Quota sets" (`/detail`); microversion headers per the
 * api-guide "Microversions"; pagination per the api-guide "Paginated collections".
 *
 * @module
 */
import { VERSION } from '../core/version.js';
import { systemClock, type Clock } from '../core/clock.js';
import { StaticTokenProvider, type AuthProvider } from '../auth/provider.js';
import { checkCloudClientExtras, loadCloudConfig, resolveClientOptions } from '../config/load.js';
import { NovaApiError, ValidationError } from '../errors/index.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../transport/retry.js';
import { Transport } from '../transport/transport.js';
import { isServerNotFound } from '../transport/http.js';
import { checkPathId, is, normaliseServerId } from '../core/validate.js';
import { checkOptions } from '../core/options.js';
import { idObjectMember, objectMember, type ShapeContext } from '../transport/responseShape.js';
import { componentLogger, type Logger } from '../core/logger.js';
import type { CreateServerBody, Flavor, Limits, QuotaSetDetail, Server } from '../core/types.js';
import {
  DeleteEngine,
  confirmNotFound,
  presenceMicroversion,
  deleteServer as deleteServerImpl,
  deleteServers as deleteServersImpl,
  type DeleteServerOptions,
  type DeleteServerResult,
  type DeleteServersOptions,
  type DeleteServersResult,
  type UnconfirmedDelete,
} from '../delete/index.js';
import { LIST_SERVERS_DEFAULTS, NOVA_CLIENT_DEFAULTS, RAW_REQUEST_SPEC, checkCreateServerBody, checkListServersOptions, checkNovaClientOptions, checkRequestOptions, projectFromNoauthToken } from './options.js';
import type { ClientStats, CloudClientOptions, ListServersOptions, ListServersQuery, NovaClientOptions, RawRequest, RawResponse, RequestOptions } from './options.js';
import { NovaRequester, type ChosenMicroversion } from './request.js';
import { versionWaitMs } from './versionDiscovery.js';
import { BASE_MICROVERSION, atLeastMicroversion, checkNeeds, createServerNeeds, highestNeed, listQueryNeeds, type MicroversionNeed } from './microversion.js';
import { parseAbsoluteLimits, parseQuotaSetDetail } from './parse.js';
import { listFlavorPages, trustedFlavors } from './flavorList.js';
import { SignalFanOut } from '../core/signalFanOut.js';
import { listServerPages } from './list.js';
import { ProjectListing } from './projectListing.js';

export type { ClientStats, CloudClientOptions, ListServersOptions, ListServersQuery, NovaClientOptions, RawRequest, RawResponse, RequestOptions, RetryOptions } from './options.js';
export { parseAbsoluteLimits } from './parse.js';


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
  /**
   * The microversion the user pinned (option `microversion`, or a cloud's `compute_api_version`), or
   * undefined when the client negotiates one with Nova.
   */
  readonly pinnedMicroversion: string | undefined;
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
  /**
   * The newest listing of the project (`GET /servers/detail`, at most 100 pages, bounded by
   * `requestTimeoutMs`) that callers of this client share: the quota guard's shortfall checks take
   * it instead of each sending its own (`src/nova/projectListing.ts`).
   */
  readonly projectListing: ProjectListing;

  readonly #endpoint: string | undefined;
  readonly #requester: NovaRequester;
  /**
   * One abort listener per caller's signal for all this client's calls: each request and listing
   * follows the caller's signal through its own (`core/signalFanOut.ts`), so many calls sharing one
   * signal print no `MaxListenersExceededWarning` and leave nothing on it once settled.
   */
  readonly #signals = new SignalFanOut();
  readonly #redactText: (text: string) => string;
  readonly #flavors = new Map<string, Promise<Flavor>>();

  /**
   * @throws {@link ValidationError} when neither `token` nor `auth` is given, when neither `endpoint`
   * nor an `auth` with `getEndpoint` is given, when `endpoint` is not an http(s) URL or has user
   * info, a query or a fragment, or when a duration is not a positive number; {@link ConfigError}
   * when `caCert` names a file that cannot be read.
   */
  constructor(options: NovaClientOptions) {
    checkNovaClientOptions(options);
    const { endpoint, token, auth } = options;
    const d = NOVA_CLIENT_DEFAULTS;
    this.auth = auth ?? new StaticTokenProvider(token!);
    this.#endpoint = endpoint?.replace(/\/+$/, '');
    this.pinnedMicroversion = options.microversion;
    this.requestTimeoutMs = options.requestTimeoutMs ?? d.requestTimeoutMs;
    this.coalesce = options.coalesce ?? d.coalesce;
    this.maxRequestsPerSecond = options.maxRequestsPerSecond ?? d.maxRequestsPerSecond;
    this.watchIntervalMs = options.watchIntervalMs;
    this.projectId = options.projectId ?? projectFromNoauthToken(token);
    this.logger = componentLogger(options.logger, 'nova');
    this.clock = options.clock ?? systemClock;
    this.projectListing = new ProjectListing(() => this.listServers({}, { microversion: presenceMicroversion(this.microversion), timeoutMs: this.requestTimeoutMs, maxPages: 100 }), this.clock);
    this.deleteEngine = new DeleteEngine(this, { coalesce: this.coalesce, maxRequestsPerSecond: this.maxRequestsPerSecond, watchIntervalMs: this.watchIntervalMs });
    const retry = options.retry === false ? { retries: 0 } : Object.fromEntries(Object.entries(options.retry ?? {}).filter(([, v]) => v !== undefined));
    const transport = new Transport({
      headers: { Accept: 'application/json', 'User-Agent': options.userAgent ?? `nova-guard/${VERSION}` },
      maxResponseBytes: options.maxResponseBytes ?? d.maxResponseBytes,
      adapter: options.adapter,
      caCert: options.caCert,
      clientCert: options.clientCert,
      clientKey: options.clientKey,
      insecure: options.insecure,
      clock: this.clock,
      logger: this.logger,
      secrets: () => this.auth.secrets?.() ?? [],
    });
    this.#redactText = transport.redactText;
    this.#requester = new NovaRequester({
      signals: this.#signals,
      transport,
      auth: this.auth,
      endpoint: this.#endpoint,
      microversion: this.pinnedMicroversion,
      requestTimeoutMs: this.requestTimeoutMs,
      retry: { ...DEFAULT_RETRY_POLICY, ...retry } as RetryPolicy,
      refusedFirstContactMs: options.refusedFirstContactMs ?? d.refusedFirstContactMs,
      logger: this.logger,
      stats: this.stats,
      onRequestId: (id) => {
        this.lastRequestId = id;
      },
    });
  }

  /**
   * The microversion of this client's requests as far as it is known now: the pinned one; else the
   * one negotiated with Nova once its version document was read; else `'2.1'` (before the first
   * request, or when the document could not be read). {@link resolveMicroversion} reads the document.
   */
  get microversion(): string {
    // The delete engine reads it while the client is built, before the requester exists.
    return this.pinnedMicroversion ?? (this.#requester as NovaRequester | undefined)?.negotiated ?? BASE_MICROVERSION;
  }

  /**
   * The microversion of a request that names none: the pinned one (no request is sent), else the
   * highest that this client (`CLIENT_MAX_MICROVERSION`, 2.93) and Nova (its version document,
   * `GET /v2.1/`, read once per client and shared by concurrent callers) both know, else `'2.1'`
   * (Nova names none this client knows, or the document could not be read: it is read again after
   * a minute). Waits for the document at most 5000 ms (half of `requestTimeoutMs` if less). Never
   * rejects for a failed read.
   * @throws {@link AbortError} when `signal` aborts while the document is read; {@link ValidationError} for an unknown option.
   */
  async resolveMicroversion(options: { signal?: AbortSignal | undefined } = {}): Promise<string> {
    checkOptions('resolveMicroversion options', options, { signal: is.signal });
    return (await this.#signals.run([options.signal], (signal) => this.#requester.microversion(signal))).version;
  }

  /**
   * The microversion a call with features `needs` goes at when it names none and the client is not
   * pinned, from what Nova's version document said (`chosen`): the negotiated one; when the document
   * could not be read (in time), the lowest microversion the call's features need (Nova answers 406
   * if it has not got it). `negotiated`: the call goes at the negotiated microversion.
   * @throws {@link ValidationError} when a feature needs more than the microversion the call must go at.
   */
  #choose(needs: readonly MicroversionNeed[], c: ChosenMicroversion): { version: string; negotiated: boolean } {
    if (c.source === 'unread') return { version: highestNeed(needs) ?? c.version, negotiated: false };
    if (c.source === 'pinned') {
      checkNeeds(needs, c.version, `this client is pinned to ${c.version}`);
      return { version: c.version, negotiated: false };
    }
    checkNeeds(needs, c.version, c.range ? `Nova at ${this.#endpoint ?? 'the catalog endpoint'} supports ${c.range.min} to ${c.range.max}` : `Nova at ${this.#endpoint ?? 'the catalog endpoint'} names no microversion this client knows`);
    return { version: c.version, negotiated: c.source === 'negotiated' };
  }

  /**
   * The microversion a call with features `needs` goes at, checked before its request: the call's
   * own (`microversion` option), the pinned one, else the negotiated one ({@link #choose}), waited
   * for at most `waitMs` (the call's share of its time: `versionWaitMs`).
   * @throws {@link ValidationError} when a feature needs more than the microversion the call must go at.
   */
  async #callMicroversion(needs: readonly MicroversionNeed[], own: string | undefined, signal: AbortSignal | undefined, waitMs: number): Promise<{ version: string; negotiated: boolean }> {
    if (own !== undefined) {
      checkNeeds(needs, own, `this call is pinned to ${own}`);
      return { version: own, negotiated: false };
    }
    if (this.pinnedMicroversion !== undefined) return this.#choose(needs, { version: this.pinnedMicroversion, source: 'pinned' });
    // Through the client's fan-out: many calls sharing one signal add one listener to it.
    return this.#choose(needs, await this.#signals.run([signal], (s) => this.#requester.microversion(s, waitMs)));
  }

  /**
   * The compute endpoint, from the options or the provider's catalog (or `compute_endpoint_override`).
   * @throws {@link ValidationError} when the provider's endpoint is not an http(s) URL or has user
   * info, a query or a fragment (checked like the `endpoint` option).
   */
  endpoint(signal?: AbortSignal): Promise<string> {
    return this.#requester.endpoint(signal);
  }

  /**
   * Send one request with the client's headers, time limit, retries (idempotent methods and rate
   * limits only) and 401 handling, and turn failures into typed errors.
   *
   * Time limit: `requestTimeoutMs` bounds each attempt, the token included (a Keystone renewal that
   * hangs ends the attempt at its limit, and the attempt's abort releases the renewal).
   *
   * Retries (`isRetryable`, the one policy of `src/transport/retry.ts`): GET and DELETE are retried
   * on no response, request timeout, 500/502/503/504, 429 and 413 rate limits; POST and PUT only on
   * rate limits and refused connections (nothing reached Nova). A `Retry-After` header or Nova's
   * `retryAfter` is waited out (at least `retry.minDelayMs`); a rate limit that names one does not
   * use a retry. One that is not shorter than what is left of `retry.maxRetryTimeMs` ends the
   * retries at once (the error carries `retryAfterMs`).
   *
   * @throws {@link NovaApiError} subclasses for HTTP errors, {@link NovaNetworkError} without a response,
   * {@link AbortError} when `signal` aborts, {@link ValidationError} (before any request) for a bad
   * `requestTimeoutMs` or `retry`.
   */
  request<T = unknown>(req: RawRequest): Promise<RawResponse<T>> {
    try {
      // A misspelt option (`{ requestTimout: 5 }`) must fail, not be ignored.
      checkOptions('request options', req, RAW_REQUEST_SPEC);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    return this.#requester.request<T>(req);
  }

  /**
   * `GET /servers/{id}` (Nova API reference, "Show Server Details"). The id is taken in any case, with or
   * without dashes, and sent in Nova's canonical form (lower case, 8-4-4-4-12 dashes: `canonicalServerId`).
   * @throws {@link ValidationError} (before any request) when `id` is not a UUID (a server's name:
   * look it up with `listServers({ name: '^<name>$' })`); {@link NotFoundError} when the server does
   * not exist; {@link InvalidResponseError} when a 2xx body has no `server` object with an `id`.
   */
  async getServer(serverId: string, options: RequestOptions = {}): Promise<Server> {
    checkRequestOptions('getServer', options);
    const id = normaliseServerId('server id', serverId);
    const res = await this.request({ method: 'GET', path: `/servers/${encodeURIComponent(id)}`, serverId: id, ...options });
    return idObjectMember<Server>(res.data, 'server', this.#shape('GET', res, id));
  }

  /**
   * `GET /servers/detail` with query filters (including `changes-since`), following `servers_links`
   * "next" links until the last page (Nova API reference, "List Servers Detailed").
   * A server listed on two pages is returned once. Bounded: at most `maxPages` pages (default 1000)
   * within `timeoutMs` (default 600000 ms) in all; see `ListServersOptions`.
   * @throws {@link InvalidResponseError} when a page has no `servers` list of objects with ids (a proxy page is
   * never taken as an empty listing), when the next link is not a URL or asks for a marker already
   * followed (a loop: the listing would be truncated), or when page `maxPages` still has a next
   * link; {@link NovaNetworkError} (`timedOut`) at `timeoutMs`; {@link AbortError} when `signal`
   * aborts; {@link ValidationError} (before any request) for a bad `maxPages` or `timeoutMs`, or a
   * filter that needs a later microversion than the listing goes at (`tags` 2.26, `changes-before`
   * 2.66, `locked` 2.73: `listQueryNeeds`).
   */
  async listServers(query: ListServersQuery = {}, options: ListServersOptions = {}): Promise<Server[]> {
    return (await this.listServersWithMeta(query, options)).servers;
  }

  /**
   * Like {@link listServers}, also returning Nova's `Date` header of the first page (for
   * `changes-since` polling on Nova's clock) and the number of pages read. With `brief: true` it
   * reads `GET /servers` (id, name and links only: Nova API reference, "List Servers") instead.
   */
  async listServersWithMeta(
    query: ListServersQuery = {},
    options: ListServersOptions = {},
  ): Promise<{ servers: Server[]; serverDateMs: number | undefined; pages: number }> {
    const needs = listQueryNeeds(query ?? {});
    if (needs.length > 0 && options?.microversion === undefined) {
      try {
        checkListServersOptions(options ?? {});
      } catch (e) {
        return Promise.reject(e as Error);
      }
      return this.#listChosen(query, options ?? {}, needs);
    }
    if (options?.microversion !== undefined) {
      try {
        checkNeeds(needs, options.microversion, `this call is pinned to ${options.microversion}`);
      } catch (e) {
        return Promise.reject(e as Error);
      }
    }
    return this.#signals.run([options?.signal], (signal) => listServerPages(
      { request: (req) => this.request(req), clock: this.clock, shape: (res) => this.#shape('GET', res) },
      query,
      signal === undefined ? options : { ...options, signal },
    ));
  }

  /**
   * A listing whose filters need a microversion (`needs`), at the one chosen for it: the document is
   * waited for within the listing's own time (at most half of `timeoutMs` and of the per-request
   * limit, at most 5 s), and the listing gets the rest of `timeoutMs`. A 406 to the negotiated
   * microversion is answered by listing once more at the one Nova takes (see `NovaRequester.notAccepted`).
   */
  async #listChosen(query: ListServersQuery, options: ListServersOptions, needs: readonly MicroversionNeed[]): Promise<{ servers: Server[]; serverDateMs: number | undefined; pages: number }> {
    const timeoutMs = options.timeoutMs ?? LIST_SERVERS_DEFAULTS.timeoutMs;
    const perRequestMs = options.requestTimeoutMs ?? this.requestTimeoutMs;
    const startedAt = this.clock.now();
    const leftMs = (): number => Math.max(1, Math.floor(timeoutMs - (this.clock.now() - startedAt)));
    for (let renegotiated = false; ; renegotiated = true) {
      const { version, negotiated } = await this.#callMicroversion(needs, undefined, options.signal, versionWaitMs(Math.min(leftMs(), perRequestMs)));
      try {
        return await this.listServersWithMeta(query, { ...options, microversion: version, timeoutMs: Number.isFinite(timeoutMs) ? leftMs() : timeoutMs });
      } catch (e) {
        if (renegotiated || !negotiated || !(e instanceof NovaApiError) || !this.#requester.notAccepted(version, e)) throw e;
      }
    }
  }

  /**
   * `POST /servers` with `{ server: body }` (Nova API reference, "Create Server"). Resolves the created
   * server as Nova returns it (`id`, `links`, `adminPass`, ...). Never retried except on a rate limit
   * or a refused connection, when the request provably did not reach Nova.
   *
   * Microversion: the call's own, the client's pinned one, else the negotiated one (see
   * {@link resolveMicroversion}). When the client chose it and it is 2.37 or later, a body without
   * `networks` is sent with `networks: 'auto'` (Nova requires the field from 2.37; openstacksdk does the same).
   * @throws {@link ValidationError} (before the POST) when a field needs a later microversion than the
   * call goes at (`networks: 'none'`/`'auto'` 2.37, `description` 2.19, `tags` 2.52, `host` 2.74, ...:
   * `createServerNeeds`), naming it; {@link QuotaExceededError} on a quota 403, {@link ForbiddenError} on any other 403,
   * {@link BadRequestError} on 400; {@link InvalidResponseError} when the 2xx body has no `server`
   * object with an `id` (e.g. `{"reservation_id": ...}`; a server may have been created all the same).
   */
  async createServer(body: CreateServerBody, options: RequestOptions = {}): Promise<Server> {
    checkRequestOptions('createServer', options);
    checkCreateServerBody(body);
    const fields = body as unknown as Record<string, unknown>;
    const needs = createServerNeeds(fields);
    const req = { method: 'POST' as const, path: '/servers', body: { server: body }, ...options };
    // From 2.37 Nova requires `networks`; a body written for 2.1 that names none gets 'auto' when the
    // client chose the microversion (openstacksdk's create_server does the same): Nova's own choice.
    const at = (version: string): RawRequest => ({
      ...req,
      microversion: version,
      body: { server: fields['networks'] === undefined && atLeastMicroversion(version, '2.37') ? { ...body, networks: 'auto' as const } : body },
    });
    let res: RawResponse;
    if (options.microversion !== undefined || this.pinnedMicroversion !== undefined) {
      // Checked before any request.
      const { version } = await this.#callMicroversion(needs, options.microversion, options.signal, 0);
      res = await this.request({ ...req, microversion: version });
    } else {
      try {
        checkOptions('request options', req, RAW_REQUEST_SPEC);
      } catch (e) {
        return Promise.reject(e as Error);
      }
      // Chosen inside the attempt: the version document is waited for within the POST's own time limit.
      res = await this.#requester.request({ ...req, microversion: undefined }, (c) => at(this.#choose(needs, c).version));
    }
    return idObjectMember<Server>(res.data, 'server', {
      ...this.#shape('POST', res),
      note: 'Nova accepted the request, so a server may have been created: look for it by name',
    });
  }

  /**
   * One `DELETE /servers/{id}` (Nova API reference, "Delete Server"), retried on transient failures.
   * Resolves `'delete-requested'` on 204 (nothing more is sent), `'already-gone'` on Nova's 404 for this
   * server (`Instance <id> could not be found.`) once a listing (`GET /servers`) confirms Nova no longer
   * lists it, as every delete function does; a failed listing is sent again within `requestTimeoutMs`.
   * The id is sent and compared in Nova's canonical form (lower case, dashed: `canonicalServerId`).
   * @throws {@link ValidationError} (before any request) when `id` is not a UUID (a name is never
   * taken for an id: look it up with `listServers({ name })`); {@link ConflictError} on 409 (locked);
   * {@link NotFoundError} on a 404 that does not name the server (a wrong endpoint: never taken as "already gone"); {@link OrphanedServerError} when Nova
   * answers 404 yet still lists it; {@link DeleteTimeoutError} when no listing could confirm the 404
   * within `requestTimeoutMs`; other {@link NovaApiError}s after the retries.
   */
  async requestDelete(serverId: string, options: RequestOptions = {}): Promise<'delete-requested' | 'already-gone'> {
    checkRequestOptions('requestDelete', options);
    const id = normaliseServerId('server id', serverId);
    try {
      await this.request({ method: 'DELETE', path: `/servers/${encodeURIComponent(id)}`, serverId: id, ...options });
      return 'delete-requested';
    } catch (e) {
      if (!isServerNotFound(e, id)) throw e;
    }
    await confirmNotFound(this.deleteEngine, id, { timeoutMs: options.requestTimeoutMs ?? this.requestTimeoutMs, signal: options.signal });
    return 'already-gone';
  }

  /**
   * `DELETE /servers/{id}` (Nova API reference, "Delete Server") and, with `wait: true`, wait until
   * Nova answers 404 for the server (osc-lib `wait_for_delete`). See {@link DeleteServerOptions}. The id is
   * sent, compared and reported in Nova's canonical form (lower case, dashed: `canonicalServerId`).
   * @returns outcome `'deleted'`, `'already-gone'`, `'soft-deleted'` or (without `wait`) `'delete-requested'`.
   * @throws {@link ValidationError} for a bad id (not a UUID: a server's name is looked up with
   * `listServers({ name: '^<name>$' })`) or option (before any request); {@link ConflictError}
   * on 409 (locked); {@link DeleteFailedError} when the DELETE keeps failing or the server ends in
   * ERROR; {@link DeleteTimeoutError} at `timeoutMs`; {@link AbortError} when `signal` aborts;
   * {@link AuthError}, {@link ForbiddenError} as they come.
   */
  deleteServer(id: string, options: DeleteServerOptions = {}): Promise<DeleteServerResult> {
    return deleteServerImpl(this, id, options);
  }

  /** Delete many servers at bounded concurrency; each settles on its own (ids in Nova's canonical form). See {@link deleteServers}. */
  deleteServers(ids: readonly string[], options: DeleteServersOptions = {}): Promise<DeleteServersResult> {
    return deleteServersImpl(this, ids, options);
  }

  /**
   * Servers this client was asked to delete whose deletion is not confirmed yet (no 404 for them,
   * nor `SOFT_DELETED`, seen by any of this client's waits): deletes requested without `wait`, and
   * waits that timed out, failed or were aborted, with the last error. A confirmed deletion leaves
   * the list. Oldest first.
   */
  unconfirmedDeletes(): UnconfirmedDelete[] {
    return this.deleteEngine.ledger.list();
  }

  /**
   * `POST /servers/{id}/action` with `{"forceDelete": null}` (Nova API reference, "Force-Delete Server
   * (forceDelete Action)"): hard-deletes a SOFT_DELETED server. Not retried (a POST). The id is sent in
   * Nova's canonical form (lower case, 8-4-4-4-12 dashes: `canonicalServerId`).
   * @throws {@link ValidationError} (before any request) when `id` is not a UUID; {@link ForbiddenError}
   * when policy forbids it, {@link NotFoundError}, {@link ConflictError}.
   */
  async forceDeleteServer(serverId: string, options: RequestOptions = {}): Promise<void> {
    checkRequestOptions('forceDeleteServer', options);
    const id = normaliseServerId('server id', serverId);
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
      checkRequestOptions('getFlavor', options);
    } catch (e) {
      return Promise.reject(e as Error); // a Promise-returning method never throws synchronously
    }
    const key = String(id);
    let p = this.#flavors.get(key);
    if (!p) {
      p = this.request({ method: 'GET', path: `/flavors/${encodeURIComponent(key)}`, ...options }).then((r) =>
        objectMember<Flavor>(r.data, 'flavor', this.#shape('GET', r)),
      );
      this.#flavors.set(key, p);
      p.catch(() => this.#flavors.delete(key));
    }
    return p;
  }

  /**
   * `GET /flavors/detail?is_public=None` (Nova API reference, "List Flavors With Details"): every
   * flavor the caller may use, with its vcpus and RAM (for an admin every flavor, private ones too,
   * as openstacksdk lists them; for a member the public ones and those shared with its project). Nova lists up to its `max_limit` (1,000 by default) a page, with
   * a `flavors_links` "next" link when more follow: the pages are followed (at most 100: see
   * `flavorList.ts`), so a flavor of a later page is found too.
   *
   * A flavor listed with a usable `vcpus` and `ram` (non-negative numbers), once in the listing, is kept
   * in the cache of {@link getFlavor} (a flavor's vcpus and RAM never change), so a create of a flavor
   * found here needs no `GET /flavors/{id}`. One listed without them (a proxy's or hand-made answer),
   * or twice with two sizes, is not kept: `getFlavor` reads it, and the guard never takes its needs
   * from a listing it cannot trust (a missing `vcpus` would count as 0 cores).
   * @throws {@link InvalidResponseError} when a 2xx body has no `flavors` list of objects with ids, or
   * its `flavors_links` next link cannot be followed (no marker, a marker already followed, more than
   * 100 pages).
   */
  async listFlavors(options: RequestOptions = {}): Promise<Flavor[]> {
    checkRequestOptions('listFlavors', options);
    const flavors = await listFlavorPages({ request: (req) => this.request(req), shape: (res) => this.#shape('GET', res) }, options);
    for (const f of trustedFlavors(flavors)) if (!this.#flavors.has(f.id)) this.#flavors.set(f.id, Promise.resolve(f));
    return flavors;
  }

  /**
   * `GET /limits` (Nova API reference, "Limits"), the `absolute` block parsed: -1 → `Infinity`,
   * missing or non-numeric → `undefined`, never `NaN`. Never cached.
   * @throws {@link InvalidResponseError} when a 2xx body has no `limits.absolute` object.
   */
  async getLimits(options: RequestOptions = {}): Promise<Limits> {
    checkRequestOptions('getLimits', options);
    const res = await this.request({ method: 'GET', path: '/limits', ...options });
    const limits = objectMember<Record<string, unknown>>(res.data, 'limits', this.#shape('GET', res));
    const absolute = objectMember<Record<string, unknown>>(limits, 'absolute', this.#shape('GET', res));
    return { absolute: parseAbsoluteLimits(absolute), requestId: res.requestId, serverDateMs: res.serverDateMs };
  }

  /**
   * `GET /os-quota-sets/{project_id}/detail` (Nova API reference, "Quota Sets", "Show The Detail of
   * Quota"). Each resource's `limit` -1 becomes `Infinity`.
   * @param projectId - Defaults to the client's project id.
   * @throws {@link ValidationError} (before any request) when no project id is known, or when it
   * cannot be a path segment (`/`, `?`, `#`, `.` or `..`: `'..'` would read `GET /v2.1/detail`);
   * {@link ForbiddenError} when policy forbids; {@link InvalidResponseError} when a 2xx body has no
   * `quota_set` object.
   */
  async getQuotaSetDetail(projectId: string | undefined = this.projectId, options: RequestOptions = {}): Promise<QuotaSetDetail> {
    checkRequestOptions('getQuotaSetDetail', options);
    if (!projectId) throw new ValidationError('getQuotaSetDetail needs a project id (pass one, or set projectId on the client)');
    checkPathId('project id', projectId);
    const res = await this.request({
      method: 'GET',
      path: `/os-quota-sets/${encodeURIComponent(projectId)}/detail`,
      ...options,
    });
    return parseQuotaSetDetail(objectMember<Record<string, unknown>>(res.data, 'quota_set', this.#shape('GET', res)));
  }

  /** The context of a shape error for `res` (see `src/transport/responseShape.ts`): secrets are redacted from it. */
  #shape(method: string, res: RawResponse, serverId?: string): ShapeContext {
    return { method, url: res.url ?? '', status: res.status, requestId: res.requestId, serverId, redact: this.#redactText };
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
   * See `src/config/` (`loadCloudConfig`, `resolveClientOptions`); `options` win over the cloud's.
   * @throws {@link ConfigError} naming the file and key; {@link AuthError} when Keystone rejects the credentials.
   */
  static async fromCloud(name?: string, options?: CloudClientOptions): Promise<NovaClient> {
    checkCloudClientExtras('NovaClient.fromCloud', options);
    return new NovaClient(await resolveClientOptions(loadCloudConfig({ cloud: name }), options));
  }

  /**
   * A client from the environment `env` (default `process.env`): `OS_CLOUD` and clouds.yaml, or the
   * `OS_*` variables alone. Same behaviour and errors as {@link NovaClient.fromCloud}. With
   * `OS_ENDPOINT` and `OS_TOKEN` (no `OS_AUTH_URL`: the token used as it is), `projectId` is
   * `OS_PROJECT_ID`, else the project of a noauth token `user:project` (as the constructor's), else
   * undefined (a SQLite or Redis ledger then refuses to open: `LedgerConfigError` `'missing-project'`).
   */
  static async fromEnv(env: Record<string, string | undefined> = process.env, options?: CloudClientOptions): Promise<NovaClient> {
    checkCloudClientExtras('NovaClient.fromEnv', options);
    return new NovaClient(await resolveClientOptions(loadCloudConfig({ env }), options));
  }
}

