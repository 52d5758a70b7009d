/**
 * `Transport`: the one HTTP layer under `NovaClient` and `KeystoneAuth`, on axios. One exchange at a
 * time: redirects never followed (a token or password would go along), TLS options (`caCert`,
 * `insecure`), a cap on the body read (`maxResponseBytes`), the axios `adapter`, a time limit on
 * the clock, the request id and `Date` headers read, and every error typed and free of secrets.
 * Retries are the caller's, through `withRetry` (`retry.ts`), around one or more exchanges.
 *
 * Connections: a GET or DELETE goes on a kept-alive connection (Node's agents keep sockets open
 * between requests); a POST or PUT, which is never repeated after a reset (`isRetryable`), goes on
 * a new connection of its own ({@link usesFreshConnection}), closed after its answer. A server (or
 * a load balancer) closes a connection that sat idle at its own keep-alive timeout; a request
 * sent on it just then is reset with nothing delivered, which for a `POST /servers` is a create of
 * unknown outcome (`src/guard/lostCreate.ts`). On a new connection a reset means a real fault. The
 * new connection's agent is built from the same TLS options as the shared one (`tlsAgentOptions`):
 * it trusts the same CAs, presents the same client certificate, and verifies or not alike. The cost
 * is one TCP (and TLS) handshake per create, nothing next to a server's build.
 *
 * Sources: keystoneauth1 `Session.request` (one session for identity and services, redirects
 * handled by the caller, `X-OpenStack-Request-Id` logged), openstacksdk `CloudRegion.get_requests_verify_args`
 * for TLS.
 *
 * @module
 */
import http from 'node:http';
import https from 'node:https';
import axios, { type AxiosAdapter, type AxiosInstance, type AxiosResponse } from 'axios';
import { systemClock, type Clock } from '../core/clock.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { redactSecrets, redactUrlSecrets } from '../core/redact.js';
import { currentOperation, recordQuotaRefusal, startRequest } from '../core/telemetry.js';
import { AbortError, InvalidResponseError, QuotaExceededError, type NovaApiError } from '../errors/index.js';
import { errorFromResponse, networkError, requestIdOf, serverDateOf, type HeaderBag, type RequestContext } from './http.js';
import { tlsAgentOptions, type TlsOptions } from './tls.js';
import { withTimeLimit } from './timeLimit.js';

/** The HTTP methods nova-guard sends. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Options of {@link Transport}. */
export interface TransportOptions extends TlsOptions {
  /**
   * Who is called, as error messages name it: `'Keystone'` makes `Keystone POST <url> ...`, and
   * its messages of a failed connection carry the system's own message as well (a TLS failure
   * needs it). Default: none (`GET <url> ...`).
   */
  label?: string | undefined;
  /** Headers sent with every request (e.g. `Accept`, `User-Agent`). */
  headers?: Record<string, string> | undefined;
  /** Largest response body read, in bytes; a larger body is cut off as it arrives. Positive integer. */
  maxResponseBytes: number;
  /** The axios adapter that sends requests. Default: axios's own (node:http). */
  adapter?: AxiosAdapter | undefined;
  /** The clock of the time limits. Default {@link systemClock}. */
  clock?: Clock | undefined;
  /** pino logger (curated fields only: method, URL, status, request id, timing). Default silent. */
  logger?: Logger | undefined;
  /**
   * Every secret that must never reach an error message (tokens, passwords), read at each use.
   * Default: none.
   */
  secrets?: (() => readonly string[]) | undefined;
  /** Name of the service in the TLS warning (`... (insecure) for Keystone: ...`). Default: none. */
  tlsWhat?: string | undefined;
}

/** One HTTP exchange for {@link Transport.send}. */
export interface TransportRequest {
  method: HttpMethod;
  /** Full URL, without the query. */
  url: string;
  /** Query parameters; undefined values are dropped. */
  query?: Record<string, string | number | boolean | undefined> | undefined;
  /** Body: a string is sent as it is, anything else as JSON. */
  body?: unknown;
  /** Headers of this request (beside {@link TransportOptions.headers}). */
  headers?: Record<string, string> | undefined;
  /** Abort the exchange: rejects with {@link AbortError} and releases the socket. */
  signal?: AbortSignal | undefined;
  /** Time limit of the exchange, in ms (`Infinity`: none). Default: none (the caller bounds it). */
  timeoutMs?: number | undefined;
  /** The server the request is about, recorded in errors. */
  serverId?: string | undefined;
}

/** What {@link Transport.send} resolves: any status (the caller decides what is an error). */
export interface TransportResponse {
  status: number;
  headers: HeaderBag;
  /** The body: parsed JSON, else the text (an HTML page from a proxy); `undefined` when empty. */
  data: unknown;
  /** `x-openstack-request-id` (or `x-compute-request-id`). */
  requestId: string | undefined;
  /** The `Date` header, epoch ms. */
  serverDateMs: number | undefined;
  /** The request URL (without the query). */
  url: string;
  /** Time from sending to the whole body, ms (on the clock). */
  elapsedMs: number;
}

/**
 * True when a request of `method` goes on a new connection of its own, never on a kept-alive one:
 * POST and PUT, the methods never repeated after a reset (see the module description).
 */
export function usesFreshConnection(method: HttpMethod): boolean {
  return method === 'POST' || method === 'PUT';
}

/** One HTTP client for one service: see the module. */
export class Transport {
  /** The clock of the time limits. */
  readonly clock: Clock;
  readonly #http: AxiosInstance;
  readonly #label: string | undefined;
  readonly #secrets: () => readonly string[];
  readonly #logger: Logger;
  /** The https.Agent options of the TLS options (undefined: Node's defaults), shared by both kinds of connection. */
  readonly #tls: https.AgentOptions | undefined;
  /** The agents of {@link usesFreshConnection} requests (no keep-alive), made at the first one. */
  #fresh: { httpAgent: http.Agent; httpsAgent: https.Agent } | undefined;

  /**
   * @throws {@link ConfigError} when `caCert` names a file that cannot be read.
   */
  constructor(options: TransportOptions) {
    this.clock = options.clock ?? systemClock;
    this.#label = options.label;
    this.#secrets = options.secrets ?? (() => []);
    this.#logger = options.logger ?? silentLogger;
    this.#tls = tlsAgentOptions({ caCert: options.caCert, clientCert: options.clientCert, clientKey: options.clientKey, insecure: options.insecure }, this.#logger, options.tlsWhat);
    const httpsAgent = this.#tls ? new https.Agent(this.#tls) : undefined;
    this.#http = axios.create({
      validateStatus: () => true,
      // Secrets must never ride on a redirect to another host: a 3xx is answered as an error naming its Location.
      maxRedirects: 0,
      maxContentLength: options.maxResponseBytes,
      ...(options.adapter ? { adapter: options.adapter } : {}),
      ...(httpsAgent ? { httpsAgent } : {}),
      headers: { ...(options.headers ?? {}) },
    });
  }

  /**
   * `text` with every secret (in any of its echoed forms) replaced by `[REDACTED]`, and with what a
   * URL in it may carry of one (user info, `?token=`, `?password=`, ...: `redactUrlSecrets`).
   */
  readonly redactText = (text: string): string => {
    const secrets = this.#secrets();
    return redactUrlSecrets(secrets.length > 0 ? redactSecrets(text, secrets) : text);
  };

  /**
   * `error` with every secret (in any of its echoed forms) removed from its message, its stack, and
   * its `url` and `fault` fields (a {@link NovaApiError}'s): whatever inspects, logs or serialises it.
   */
  redact<E extends Error>(error: E): E {
    error.message = this.redactText(error.message);
    if (typeof error.stack === 'string') error.stack = this.redactText(error.stack);
    for (const field of ['url', 'fault'] as const) {
      const value = (error as Partial<Record<typeof field, unknown>>)[field];
      if (typeof value === 'string') Object.defineProperty(error, field, { value: this.redactText(value), enumerable: true, configurable: true, writable: false });
    }
    return error;
  }

  /** The context errors of an exchange are built with (the label, and the redaction of bodies). */
  context(method: string, url: string, serverId?: string): RequestContext {
    return { method, url, serverId, redact: this.redactText, ...(this.#label ? { label: this.#label } : {}) };
  }

  /**
   * Run `work` under a time limit of `timeoutMs` on the clock and the caller's `signal`. `work`
   * gets a signal that aborts when either ends (so its sockets are released), and this call settles
   * at once then, whether or not `work` listens: with `timeoutError()` when the time is up, with
   * {@link AbortError} (cause: the signal's reason) when `signal` aborts. `timeoutMs` `Infinity`:
   * only the signal bounds it.
   */
  withTimeLimit<T>(timeoutMs: number, signal: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>, timeoutError: () => Error): Promise<T> {
    return withTimeLimit(this.clock, timeoutMs, signal, work, timeoutError);
  }

  /**
   * Send one request and read the whole response (any status). Never follows a redirect.
   * @throws {@link AbortError} when `signal` aborts; {@link NovaNetworkError} when no response came
   * (`timedOut` when `timeoutMs` passed); {@link InvalidResponseError} when the body is larger than
   * `maxResponseBytes`. Never a raw axios error (its config holds the token or the password).
   */
  async send(req: TransportRequest): Promise<TransportResponse> {
    const ctx = this.context(req.method, req.url, req.serverId);
    if (req.timeoutMs !== undefined && req.timeoutMs !== Number.POSITIVE_INFINITY) {
      const ms = req.timeoutMs;
      return this.withTimeLimit(ms, req.signal, (signal) => this.send({ ...req, timeoutMs: undefined, signal }), () =>
        this.redact(networkError('ETIMEDOUT', `no response within ${ms} ms`, ctx, true)),
      );
    }
    if (req.signal?.aborted) throw new AbortError(undefined, { cause: req.signal.reason });
    const started = this.clock.now();
    // One OpenTelemetry span per exchange; the operation's global request id (oslo.middleware
    // `RequestId`: `req-<uuid>`) goes along, so Nova's logs show it beside its own id.
    const traced = startRequest(req.method, this.redactText(req.url), req.serverId, () => this.clock.now());
    const op = currentOperation();
    let res: AxiosResponse<string>;
    try {
      res = await this.#http.request<string>({
        method: req.method,
        url: req.url,
        params: req.query ? Object.fromEntries(Object.entries(req.query).filter(([, v]) => v !== undefined)) : undefined,
        data: req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body),
        headers: {
          ...(req.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
          ...(op ? { 'X-OpenStack-Request-ID': op.requestId } : {}),
          ...(req.headers ?? {}),
        },
        ...(req.signal ? { signal: req.signal } : {}),
        ...(usesFreshConnection(req.method) ? this.#freshAgents() : {}),
        responseType: 'text',
        transformResponse: [(d: unknown) => d],
      });
    } catch (error) {
      const typed = req.signal?.aborted ? new AbortError(undefined, { cause: req.signal.reason }) : this.#noResponse(error, ctx);
      traced.failed(typed);
      throw typed;
    }
    const headers = res.headers as HeaderBag;
    const requestId = requestIdOf(headers, this.redactText);
    traced.response(res.status, requestId);
    const elapsedMs = Math.round(this.clock.now() - started);
    return { status: res.status, headers, data: parseBody(res.data), requestId, serverDateMs: serverDateOf(headers), url: req.url, elapsedMs };
  }

  /**
   * The typed error for a response the caller does not accept, without secrets: the body is
   * redacted before anything is read from it (a body may echo the request), the message after.
   */
  errorFor(res: TransportResponse, ctx: RequestContext): NovaApiError {
    const error = this.redact(errorFromResponse(res.status, res.headers, res.data, { ...ctx, redact: this.redactText }, this.clock.wallNow()));
    if (error instanceof QuotaExceededError) recordQuotaRefusal();
    return error;
  }

  /**
   * The agents of a request on a new connection: `keepAlive: false` (and no limit on sockets), so
   * Node opens a socket for each request, sends `Connection: close` and closes it after the
   * answer; the https one with the same TLS options as the shared agent.
   */
  #freshAgents(): { httpAgent: http.Agent; httpsAgent: https.Agent } {
    this.#fresh ??= { httpAgent: new http.Agent({ keepAlive: false }), httpsAgent: new https.Agent({ ...(this.#tls ?? {}), keepAlive: false }) };
    return this.#fresh;
  }

  #noResponse(error: unknown, ctx: RequestContext): Error {
    const e = error as { code?: string; message?: string };
    const message = String(e.message ?? 'unknown error');
    this.#logger.debug({ method: ctx.method, url: ctx.url, code: e.code }, 'request failed without a response');
    if (e.code === 'ERR_BAD_RESPONSE' && /^maxContentLength size of \d+ exceeded/.test(message)) {
      return new InvalidResponseError({
        status: 0,
        message: `${ctx.label ? `${ctx.label} ` : ''}${ctx.method} ${ctx.url}: the response body is larger than maxResponseBytes (${message.replace(/\D+/g, ' ').trim()} bytes); it was not read`,
        method: ctx.method,
        url: ctx.url,
        serverId: ctx.serverId,
      });
    }
    return this.redact(networkError(e.code, message, ctx, false));
  }
}

/** A body as read: parsed JSON, else the text; `undefined` when empty. */
function parseBody(text: unknown): unknown {
  if (typeof text !== 'string') return text;
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text; // HTML from a proxy, plain text
  }
}
