/**
 * How `NovaClient` sends one request over the {@link Transport}: the compute endpoint (given, or
 * from the provider's catalog), the token, the microversion headers, the time limit of an attempt
 * (token and exchange together), the 401 handling (invalidate the token, repeat once), and the
 * retries of the one retry policy (`withRetry`, `isRetryable`).
 *
 * One authentication per token generation: the token a repeat after a 401 is sent with is on trial
 * until Nova accepts it. A 401 on it is a verdict (the credentials lack the role: a new token will
 * not help): every request that gets a 401 on that token from then on fails with {@link AuthError}
 * at once, without another authentication, for {@link REFUSED_TOKEN_HOLD_MS} (then a 401 may start
 * one new generation). However many requests see a 401 at once, the provider renews once (its
 * single flight), and they all repeat with that one token.
 *
 * Sources: keystoneauth1 `Session.request` (a 401 invalidates the plugin and the request is
 * repeated once); microversion headers per the Nova api-guide "Microversions".
 *
 * @module
 */
import { currentOperation } from '../core/telemetry.js';
import type { AuthProvider } from '../auth/provider.js';
import type { Logger } from '../core/logger.js';
import { checkDurationMs, checkHeaderToken, checkRetryPolicy } from '../core/validate.js';
import { SignalFanOut } from '../core/signalFanOut.js';
import { AuthError, NovaApiError, NovaNetworkError, isAbortError, throwIfAborted } from '../errors/index.js';
import { isRetryable, networkError, type RequestContext } from '../transport/http.js';
import { withRetry, type RetryPolicy } from '../transport/retry.js';
import type { Transport } from '../transport/transport.js';
import { checkEndpoint, type ClientStats, type RawRequest, type RawResponse } from './options.js';
import { BASE_MICROVERSION, CLIENT_MAX_MICROVERSION, rangeOf406, versionDocumentUrl, type MicroversionRange } from './microversion.js';
import { VERSION_READ_MAX_MS, VersionDiscovery, versionWaitMs } from './versionDiscovery.js';

/** What a {@link NovaRequester} works with. */
export interface RequesterInit {
  transport: Transport;
  auth: AuthProvider;
  /** The compute endpoint, or undefined to take the provider's. */
  endpoint: string | undefined;
  /** The microversion the user pinned (option `microversion`), or undefined to negotiate one with Nova. */
  microversion: string | undefined;
  requestTimeoutMs: number;
  retry: RetryPolicy;
  /** `NovaClientOptions.refusedFirstContactMs`: see there. */
  refusedFirstContactMs: number;
  logger: Logger;
  stats: ClientStats;
  /** Called with the `x-openstack-request-id` of every response that has one. */
  onRequestId: (requestId: string) => void;
  /** The client's one abort listener per caller's signal (`core/signalFanOut.ts`): each request follows the caller's signal through its own. */
  signals: SignalFanOut;
}

/** Nothing listened at the endpoint (`ECONNREFUSED`): the request provably never reached Nova. */
const isRefused = (error: unknown): boolean => error instanceof NovaNetworkError && error.code === 'ECONNREFUSED';

/** A repeat after a 401, outside the time limit of the attempt that got it. */
const REAUTHENTICATE = Symbol('reauthenticate');

/**
 * How long a token issued after a 401 and refused in turn stays a verdict, in ms: a 401 on it within
 * this time fails at once, without asking the provider for another token.
 */
export const REFUSED_TOKEN_HOLD_MS = 60_000;

/**
 * The microversion of a request that names none, and where it comes from: `pinned` (the client's
 * option), `negotiated` (the highest both know, from Nova's version document), `base` (2.1: Nova
 * names no microversion this client knows), `unread` (2.1: the document could not be read; `error`).
 */
export type ChosenMicroversion =
  | { version: string; source: 'pinned' }
  | { version: string; source: 'negotiated' | 'base'; range: MicroversionRange | undefined }
  | { version: string; source: 'unread'; error: Error };

/** The time limit of a read of the version document, in ms: half of `requestTimeoutMs`, at most `VERSION_READ_MAX_MS` (5000). */
export function versionReadLimitMs(requestTimeoutMs: number): number {
  return Math.min(requestTimeoutMs / 2, VERSION_READ_MAX_MS);
}

/**
 * How a request that names no microversion is made at the one chosen for it (inside its attempt,
 * once the version document was waited for): the request as sent. It may throw (a
 * `ValidationError` for a feature the microversion lacks): the attempt then ends with it, unsent.
 */
export type PrepareRequest = (chosen: ChosenMicroversion) => RawRequest;

/** A 406 (Nova does not take the microversion). */
const isNotAcceptable = (error: unknown): error is NovaApiError => error instanceof NovaApiError && error.status === 406;

/** Sends `NovaClient`'s requests: see the module. */
export class NovaRequester {
  readonly #init: RequesterInit;
  #endpoint: string | undefined;
  /** The token a repeat after a 401 went out with, until Nova answers it with anything but 401. */
  #onTrial: string | undefined;
  /** That token, refused in turn (401), and when (clock ms): the verdict. */
  #refused: { token: string; atMs: number } | undefined;
  /** The last token Nova took (answered with anything but 401). */
  #accepted: string | undefined;
  /** Nova has answered a request of this client (any HTTP status). */
  #answered = false;

  /** The one read of Nova's version document of this client (`versionDiscovery.ts`). */
  readonly #discovery: VersionDiscovery;

  constructor(init: RequesterInit) {
    this.#init = init;
    this.#endpoint = init.endpoint;
    this.#discovery = new VersionDiscovery({
      read: (signal) => this.#readVersionDocument(signal),
      clock: init.transport.clock,
      logger: init.logger,
      clientMax: CLIENT_MAX_MICROVERSION,
    });
  }

  /** The microversion negotiated with Nova, once its version document was read (undefined before, when pinned, or when none is common). */
  get negotiated(): string | undefined {
    return this.#discovery.known?.version;
  }

  /**
   * The microversion of a request that names none: the pinned one (no request), else the highest
   * both know from Nova's version document, read once per client (`versionDiscovery.ts`), else 2.1.
   * `waitMs`: the longest the caller waits for the document (see `versionWaitMs`); when it passes
   * first, 2.1 (`unread`). Default: until the read ends (at most {@link versionReadLimitMs}).
   * @throws {@link AbortError} when `signal` aborts while the document is read.
   */
  async microversion(signal?: AbortSignal, waitMs?: number): Promise<ChosenMicroversion> {
    const pinned = this.#init.microversion;
    if (pinned !== undefined) return { version: pinned, source: 'pinned' };
    const d = await this.#discovery.resolve(signal, waitMs);
    if (!d.read) return { version: BASE_MICROVERSION, source: 'unread', error: d.error };
    return d.version === undefined ? { version: BASE_MICROVERSION, source: 'base', range: d.range } : { version: d.version, source: 'negotiated', range: d.range };
  }

  /**
   * A 406 to a request at `version` on an unpinned client: when `version` is the negotiated one,
   * it is forgotten (see `VersionDiscovery.notAccepted`).
   * @returns whether the request, sent again, would go at another microversion.
   */
  notAccepted(version: string, error: NovaApiError): boolean {
    if (this.#init.microversion !== undefined || !isNotAcceptable(error)) return false;
    return this.#discovery.notAccepted(version, error.message);
  }

  /**
   * One `GET` of the version document (no token: Nova serves it to anyone), one attempt within
   * {@link versionReadLimitMs}; each caller waits for it at most its own share of its time
   * (`versionWaitMs`), so that when it hangs the request it was read for still goes out, at 2.1,
   * within its own time limit.
   */
  #readVersionDocument(signal: AbortSignal): Promise<unknown> {
    const { transport, stats, logger } = this.#init;
    const requestTimeoutMs = versionReadLimitMs(this.#init.requestTimeoutMs);
    let ctx: RequestContext = transport.context('GET', '(compute version document)');
    return transport.withTimeLimit(
      requestTimeoutMs,
      signal,
      async (s) => {
        const url = versionDocumentUrl(await this.endpoint(s));
        ctx = transport.context('GET', url);
        stats.requests++;
        stats.byMethod['GET'] = (stats.byMethod['GET'] ?? 0) + 1;
        const res = await transport.send({ method: 'GET', url, signal: s });
        this.#answered = true;
        logger.debug({ method: 'GET', url, status: res.status, requestId: res.requestId, elapsedMs: res.elapsedMs }, 'nova version document');
        // Nova answers its version documents 200 (the root list may come as 300 Multiple Choices).
        if (res.status !== 200 && res.status !== 300) throw transport.errorFor(res, ctx);
        return res.data;
      },
      () => transport.redact(networkError('ETIMEDOUT', `no response within ${requestTimeoutMs} ms`, ctx, true)),
    );
  }

  /**
   * The compute endpoint, from the options or the provider's catalog. The provider's answer is
   * kept once it came; each caller asks under its own signal until then (one caller's abort never
   * fails another's request).
   * @throws {@link ValidationError} when the provider's endpoint is not an http(s) URL or has user
   * info, a query or a fragment.
   */
  async endpoint(signal?: AbortSignal): Promise<string> {
    if (this.#endpoint !== undefined) return this.#endpoint;
    const e = await this.#init.auth.getEndpoint!({ signal });
    checkEndpoint(e);
    this.#endpoint ??= e.replace(/\/+$/, '');
    return this.#endpoint;
  }

  /**
   * See `NovaClient.request`. The caller's signal is followed through the client's fan-out
   * (`core/signalFanOut.ts`): p-retry, p-timeout and axios listen to the request's own signal, so
   * many requests sharing one signal add one listener to it, none once they settle.
   */
  async request<T>(req: RawRequest, prepare?: PrepareRequest): Promise<RawResponse<T>> {
    checkDurationMs('requestTimeoutMs', req.requestTimeoutMs, { timer: true });
    if (req.retry !== false) checkRetryPolicy('retry', req.retry);
    throwIfAborted(req.signal);
    if (!req.signal) return this.#request<T>(req, prepare);
    return this.#init.signals.run([req.signal], (signal) => this.#request<T>(signal === undefined ? req : { ...req, signal }, prepare));
  }

  /**
   * `req` with the microversion it goes at: its own, the pinned one, or the one chosen now (see
   * {@link microversion}; `prepare` makes the request of it), under the attempt's `signal`: the
   * document is waited for inside the attempt's time limit, after the token was had and checked (a
   * bad token sends nothing at all), at most half of the `leftMs` the attempt has left (at most
   * 5 s); the request gets the rest, at 2.1 if the document is not read by then. `sent.negotiated`:
   * the negotiated microversion the request goes at, if it does.
   */
  async #withMicroversion(req: RawRequest, signal: AbortSignal, leftMs: number, prepare: PrepareRequest | undefined, sent: { negotiated?: string | undefined }): Promise<RawRequest> {
    sent.negotiated = undefined;
    if (req.microversion !== undefined || this.#init.microversion !== undefined) return req;
    const chosen = await this.microversion(signal, versionWaitMs(leftMs));
    const out = prepare ? prepare(chosen) : { ...req, microversion: chosen.version };
    if (chosen.source === 'negotiated' && out.microversion === chosen.version) sent.negotiated = chosen.version;
    return out;
  }

  async #request<T>(req: RawRequest, prepare: PrepareRequest | undefined): Promise<RawResponse<T>> {
    const overrides = req.retry ? Object.fromEntries(Object.entries(req.retry).filter(([, v]) => v !== undefined)) : {};
    const policy: RetryPolicy = req.retry === false ? { ...this.#init.retry, retries: 0 } : { ...this.#init.retry, ...overrides };
    const retryable = req.retryOn ?? ((error: unknown): boolean => isRetryable(req.method, error));
    const { logger, transport, refusedFirstContactMs } = this.#init;
    // refusedFirstContactMs: before Nova has ever answered, a request refused on every attempt starts
    // no retry whose shortest backoff (minDelayMs doubling, as p-retry's) would begin past that time
    // from its first attempt: a wrong URL or a stopped Nova fails in about that long.
    const startedAt = transport.clock.now();
    let onlyRefused = true;
    let attempts = 0;
    const shouldRetry = (error: unknown): boolean => {
      if (!isRefused(error)) onlyRefused = false;
      if (onlyRefused && !this.#answered) {
        const shortestBackoffMs = Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** Math.max(0, attempts - 1));
        if (transport.clock.now() - startedAt + shortestBackoffMs > refusedFirstContactMs) return false;
      }
      return retryable(error);
    };
    return withRetry(
      async (attempt) => {
        attempts = attempt;
        req.onAttempt?.(attempt);
        try {
          return await this.#attempt<T>(req, prepare);
        } catch (error) {
          if (!isAbortError(error) && !req.signal?.aborted) {
            try {
              req.onFailedAttempt?.(error, attempt);
            } catch {
              // a callback must not break the request
            }
          }
          throw error;
        }
      },
      {
        ...policy,
        shouldRetry,
        signal: req.signal,
        clock: transport.clock,
        onRetry: (error, attempt, retryAfterMs) => {
          logger.debug({ method: req.method, path: req.path, serverId: req.serverId, attempt, retryAfterMs, err: (error as Error).message }, 'retrying request');
        },
      },
    );
  }

  /**
   * One attempt: the exchange, repeated once after a 401 (a new token) and once after a 406 to the
   * negotiated microversion (Nova's stated maximum, or 2.1 until the document is read again; see
   * `VersionDiscovery.notAccepted`). A 406 to a microversion the user chose is the user's error.
   */
  async #attempt<T>(req: RawRequest, prepare: PrepareRequest | undefined, renegotiated = false): Promise<RawResponse<T>> {
    const sent: { negotiated?: string | undefined } = {};
    try {
      const first = await this.#limited<T>(req, false, prepare, sent);
      if (first !== REAUTHENTICATE) return first;
      // The repeat has its own time limit; a second 401 is thrown, never answered REAUTHENTICATE.
      return (await this.#limited<T>(req, true, prepare, sent)) as RawResponse<T>;
    } catch (error) {
      if (!isNotAcceptable(error)) throw error;
      if (sent.negotiated === undefined) {
        // A call's own microversion: its error. When it is the negotiated one, Nova has said it does not take it.
        if (req.microversion !== undefined && req.microversion === this.negotiated) this.notAccepted(req.microversion, error);
        throw error;
      }
      if (!this.notAccepted(sent.negotiated, error) || renegotiated || req.signal?.aborted) throw error;
      // A POST goes again only after Nova's own 406 (it states Nova's range, and Nova refuses a
      // microversion before it does anything): a 406 from something in front of Nova says nothing of
      // whether the first POST reached it, and a second one could create a second server.
      if (req.method === 'POST' && rangeOf406(error.message) === undefined) throw error;
      this.#init.logger.info({ method: req.method, path: req.path, serverId: req.serverId, refused: sent.negotiated }, 'the negotiated microversion was refused (406): sending the request again once');
      return this.#attempt<T>(req, prepare, true);
    }
  }

  /** One exchange, the token included, under the request's time limit and signal. */
  #limited<T>(req: RawRequest, reauthenticated: boolean, prepare: PrepareRequest | undefined, sent: { negotiated?: string | undefined }): Promise<RawResponse<T> | typeof REAUTHENTICATE> {
    const { transport } = this.#init;
    const timeoutMs = req.requestTimeoutMs ?? this.#init.requestTimeoutMs;
    const startedAt = transport.clock.now();
    let ctx: RequestContext = transport.context(req.method, req.path, req.serverId);
    return transport.withTimeLimit(
      timeoutMs,
      req.signal,
      async (signal) => {
        const base = await this.endpoint(signal);
        ctx = transport.context(req.method, base + req.path, req.serverId);
        const token = await this.#init.auth.getToken({ signal });
        // A provider's token that cannot be a header value is refused, never sent empty or stripped.
        checkHeaderToken("the auth provider's token", token);
        const out = await this.#withMicroversion(req, signal, timeoutMs - (transport.clock.now() - startedAt), prepare, sent);
        return this.#exchange<T>(out, ctx, token, signal, reauthenticated);
      },
      () => transport.redact(networkError('ETIMEDOUT', `no response within ${timeoutMs} ms`, ctx, true)),
    );
  }

  async #exchange<T>(req: RawRequest, ctx: RequestContext, token: string, signal: AbortSignal, reauthenticated: boolean): Promise<RawResponse<T> | typeof REAUTHENTICATE> {
    const { transport, stats, logger } = this.#init;
    const microversion = req.microversion ?? this.#init.microversion ?? BASE_MICROVERSION;
    // The token of a repeat after a 401 is on trial until Nova takes it (one that Nova took already is not).
    if (reauthenticated && this.#accepted !== token) this.#onTrial = token;
    stats.requests++;
    stats.byMethod[req.method] = (stats.byMethod[req.method] ?? 0) + 1;
    const res = await transport.send({
      method: req.method,
      url: ctx.url,
      query: req.query,
      body: req.body,
      headers: {
        'X-Auth-Token': token,
        'X-OpenStack-Nova-API-Version': microversion,
        'OpenStack-API-Version': `compute ${microversion}`,
      },
      signal,
      serverId: req.serverId,
    });
    this.#answered = true;
    const { requestId } = res;
    if (requestId !== undefined) this.#init.onRequestId(requestId);
    if (res.status !== 401) this.#tokenTaken(token);
    logger.debug({ method: req.method, path: req.path, serverId: req.serverId, status: res.status, requestId, globalRequestId: currentOperation()?.requestId, elapsedMs: res.elapsedMs }, 'nova request');
    if ((res.status >= 200 && res.status < 300) || req.acceptStatus?.includes(res.status)) {
      return { status: res.status, data: res.data as T, requestId, serverDateMs: res.serverDateMs, url: ctx.url };
    }
    const error = transport.errorFor(res, ctx);
    if (!(error instanceof AuthError)) throw error;
    if (this.#isRefused(token)) throw error;
    if (reauthenticated || token === this.#onTrial) {
      // The token issued after a 401 is refused too: a verdict for every request that gets a 401 on it.
      this.#refused = { token, atMs: transport.clock.now() };
      this.#onTrial = undefined;
      logger.warn({ method: req.method, path: req.path, serverId: req.serverId, requestId }, 'the token issued after a 401 was refused too (401): not re-authenticating again');
      throw error;
    }
    if (this.#init.auth.invalidate?.(token)) {
      logger.info({ method: req.method, path: req.path, serverId: req.serverId, requestId }, 'token rejected (401): re-authenticating once');
      return REAUTHENTICATE;
    }
    throw error;
  }

  #tokenTaken(token: string): void {
    this.#accepted = token;
    if (this.#onTrial === token) this.#onTrial = undefined;
    if (this.#refused?.token === token) this.#refused = undefined;
  }

  /** `token` is the refused token of the verdict, and the verdict still holds. */
  #isRefused(token: string): boolean {
    const r = this.#refused;
    if (r === undefined || r.token !== token) return false;
    if (this.#init.transport.clock.now() - r.atMs < REFUSED_TOKEN_HOLD_MS) return true;
    this.#refused = undefined;
    return false;
  }
}
