/**
 * The option and request shapes of `NovaClient`, and the checks of its options.
 *
 * @module
 */
import type { AxiosAdapter } from 'axios';
import type { Clock } from '../core/clock.js';
import type { LoggerOption } from '../core/logger.js';
import type { AuthProvider } from '../auth/provider.js';
import { NOVA_CLIENT_OPTION_NAMES, type CloudClientExtras } from '../config/load.js';
import { checkOptions, closestOption, type OptionsSpec } from '../core/options.js';
import { EVER_SERVER_KEYS } from '../core/createServerKeys.js';
import { redactUrlSecrets, withoutUserInfo } from '../core/redact.js';
import { ValidationError } from '../errors/index.js';
import { is, retryPolicyOption } from '../core/validate.js';

/** Retry policy of idempotent requests (GET, DELETE). */
export interface RetryOptions {
  /**
   * Retries after the first attempt. Default 4 (5 attempts in all). 0 disables retries. A rate
   * limit with a `Retry-After` does not use a retry: only `maxRetryTimeMs` bounds its pauses.
   */
  retries?: number;
  /**
   * Delay before the first retry, in ms; doubles each retry, randomized by [1, 2). Default 250.
   * Also the shortest pause after a rate limit's `Retry-After`.
   */
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
  /** Project id (a non-empty string), used by {@link NovaClient.getQuotaSetDetail} when none is passed. @throws ValidationError otherwise */
  projectId?: string;
  /**
   * Pin the compute API microversion sent with every request: a string `"2.<minor>"` or `"latest"`.
   * Unset (the default), the client negotiates as openstacksdk does: it reads Nova's version document
   * (`GET /v2.1/`) once, on its first request, and speaks the highest microversion both know (at
   * most 2.93, the highest this client is written for). Each call waits for the document within its
   * own time limit (at most half of what is left of it, at most 5000 ms); when that document cannot be
   * read in time (or is not one: a proxy's page), requests go at 2.1 and it is read again a minute
   * later, never sooner. A 406 to the negotiated microversion makes the client take Nova's stated
   * maximum (or 2.1 until the next read) and send the request once more. A feature of a call that needs more than the microversion it goes
   * at (`networks: 'none'` 2.37, `tags` 2.52, ...) fails before the request with a
   * {@link ValidationError} naming the microversion.
   * @default negotiated with Nova (2.1 when the version document cannot be read)
   */
  microversion?: string;
  /**
   * Time limit of one attempt of a request, in ms: the token (a Keystone renewal included) and
   * the HTTP exchange. `Infinity`: none. Default 30000.
   */
  requestTimeoutMs?: number;
  /**
   * Retry policy of idempotent requests. See {@link RetryOptions} for the defaults. `false`: one
   * attempt per request (the same as `{ retries: 0 }`), like a request's own `retry: false`.
   */
  retry?: RetryOptions | false;
  /**
   * Until Nova has answered this client once (any HTTP response, an error status included), how
   * long a request whose every attempt was refused (`ECONNREFUSED`: nothing listens at the
   * endpoint) goes on retrying, in ms from its first attempt: no retry starts whose shortest
   * backoff would begin later than that; the request then fails with that `NovaNetworkError`
   * instead of spending the rest of the `retry` policy (5 attempts over 5-7 s by default). Once any request has had an answer, or when an attempt failed otherwise (a
   * timeout, a reset, a 503), the `retry` policy alone applies, so a Nova that restarts later is
   * waited for as before. For a command line's first contact, where a wrong URL or a stopped Nova
   * should fail in about a second (the `nova-guard` CLI sets 1000). `Infinity`: off.
   * @default Infinity
   */
  refusedFirstContactMs?: number;
  /** pino logger, or any object with pino's level methods (`console` included; anything else, `null` too, is a ValidationError); default silent. The client logs method, path, server id, status, request id and timing only. */
  logger?: LoggerOption;
  /**
   * The CA bundle (`OS_CACERT`): the only CAs trusted, as openstacksdk's `verify=<path>`: PEM text,
   * a Buffer, or the path of a PEM file (`~/` expanded). `insecure` beats it.
   */
  caCert?: string | Buffer;
  /** Client certificate (`OS_CERT`): PEM text, a Buffer or a path. Default: none. */
  clientCert?: string | Buffer;
  /** Private key of `clientCert` (`OS_KEY`): PEM text, a Buffer or a path. Default: read from `clientCert`. */
  clientKey?: string | Buffer;
  /**
   * Turn TLS verification off (`OS_INSECURE`): a boolean, `true` only (a string such as `'false'` or a
   * number is a ValidationError, never read as true). Default false: verification is on. A warning is logged.
   */
  insecure?: boolean;
  /** HTTP user agent (a non-empty string). Default `nova-guard/<version>`. */
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
   * while two or more servers are pending, shared listings answer for all of them (a `changes-since`
   * listing for the servers not yet under way, a brief `GET /servers` for the others; see
   * `src/delete/engine.ts`); a single pending wait looks with its own `GET /servers/{id}`. `false`
   * looks with one GET a server (osc-lib's way).
   * @default true
   */
  coalesce?: boolean;
  /**
   * One cap on the requests per second of the client's delete engine: every DELETE, force-delete,
   * listing and GET that `deleteServer`, `deleteServers` and `waitForDelete` send (p-throttle, like
   * nodepool's provider `rate`). A single wait polling faster than this is slowed to it. Other
   * requests (create, limits, ...) are not capped. `Infinity` for no cap.
   * @default 10
   */
  maxRequestsPerSecond?: number;
  /**
   * Shortest time between shared ticks while two or more servers are pending, in ms.
   * @default half the smallest pending `intervalMs` (or its `confirmIntervalMs` once a server shows `DELETED`)
   */
  watchIntervalMs?: number;
}

/**
 * Options of `NovaClient.fromCloud`, `NovaClient.fromEnv` and `clientOptionsFromCloud`: any
 * {@link NovaClientOptions} (they win over the cloud's), and `keystone`, the options of the
 * `KeystoneAuth` built from the cloud.
 */
export interface CloudClientOptions extends CloudClientExtras, Partial<NovaClientOptions> {}

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
  /** Called after each attempt that failed (an abort excepted), with its error and number (1-based), before any retry. */
  onFailedAttempt?: ((error: unknown, attempt: number) => void) | undefined;
  /** The compute microversion of this call only (`"2.<minor>"` or `"latest"`). @default the client's `microversion` */
  microversion?: string | undefined;
}

/** Options of `NovaClient.listServers` and `NovaClient.listServersWithMeta`. */
export interface ListServersOptions extends RequestOptions {
  /** Read `GET /servers` (id, name and links only: Nova API reference, "List Servers") instead of `/servers/detail`. @default false */
  brief?: boolean | undefined;
  /**
   * Most pages read: a listing whose last page read still has a `next` link fails with
   * {@link InvalidResponseError} instead of following it (a proxy or a bug that hands out a new
   * marker with every page would be followed for ever). At Nova's usual page size
   * (`[api] max_limit`, 1000 servers) the default is a million servers. `Infinity`: no bound.
   * @default 1000
   */
  maxPages?: number | undefined;
  /**
   * Time limit of the whole listing (every page, retries included), in ms; each page is also
   * bounded by `requestTimeoutMs`. Fails with {@link NovaNetworkError} (`timedOut`, code
   * `ETIMEDOUT`) naming the pages read. `Infinity`: only `signal` and `maxPages` bound it.
   * @default 600000 (10 minutes)
   */
  timeoutMs?: number | undefined;
}

/** The defaults of `ListServersOptions`. */
export const LIST_SERVERS_DEFAULTS = Object.freeze({ maxPages: 1000, timeoutMs: 600_000 });

/**
 * Check the bounds of a listing.
 * @throws {@link ValidationError} when `maxPages` is not a positive integer (or `Infinity`), or
 * `timeoutMs` not a positive duration.
 */
export function checkListServersOptions(options: ListServersOptions): void {
  checkOptions('listServers options', options, LIST_SERVERS_SPEC);
}

/** What every request method takes (see {@link RequestOptions}). */
const REQUEST_SPEC: OptionsSpec<RequestOptions> = {
  signal: is.signal,
  requestTimeoutMs: is.durationMs({ timer: true }),
  retry: retryPolicyOption,
  retryOn: is.function,
  onAttempt: is.function,
  onFailedAttempt: is.function,
  microversion: is.string({ nonEmpty: true }),
};

/** What `listServers` and `listServersWithMeta` take (see {@link ListServersOptions}). */
const LIST_SERVERS_SPEC: OptionsSpec<ListServersOptions> = {
  ...REQUEST_SPEC,
  brief: is.boolean,
  maxPages: (value, name) => {
    if (value !== Number.POSITIVE_INFINITY && (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)) {
      throw new ValidationError(`${name} must be a positive integer (or Infinity), got ${String(value)}`);
    }
  },
  timeoutMs: is.durationMs({ timer: true }),
};

/** What `NovaClient.request` takes (see {@link RawRequest}). */
export const RAW_REQUEST_SPEC: OptionsSpec<RawRequest> = {
  ...REQUEST_SPEC,
  method: is.oneOf(['GET', 'POST', 'PUT', 'DELETE']),
  path: is.string({ nonEmpty: true }),
  query: is.object,
  body: null,
  acceptStatus: is.arrayOf(is.integer({ min: 100, max: 599 })),
  serverId: is.string(),
};

/**
 * Check the options of one request method (`getServer`, `createServer`, `getLimits`, ...): only
 * {@link RequestOptions} names (a `method` or `path` there would change the request), each value
 * of its type.
 * @param where - The method, for the message (e.g. `getServer`).
 * @throws {@link ValidationError}
 */
export function checkRequestOptions(where: string, options: RequestOptions): void {
  checkOptions(`${where} options`, options, REQUEST_SPEC);
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

/**
 * An http(s) URL without user info (it would reach error messages and logs), query or fragment (the
 * client appends paths to it). The message never repeats a password.
 * @throws {@link ValidationError}
 */
export function checkEndpoint(endpoint: unknown): void {
  let url: URL | undefined;
  try {
    url = typeof endpoint === 'string' && /^https?:\/\/[^/]+/i.test(endpoint) ? new URL(endpoint) : undefined;
  } catch {
    url = undefined;
  }
  // The message echoes the endpoint without what it may carry of a secret (user info, `?token=`).
  const shown = typeof endpoint === 'string' ? JSON.stringify(redactUrlSecrets(withoutUserInfo(endpoint))) : String(endpoint);
  if (!url) throw new ValidationError(`endpoint must be an http(s) URL, got ${shown}`);
  // An `@` anywhere may end user info whose password holds a `/` (then URL parsing sees another host).
  if ((endpoint as string).includes('@')) throw new ValidationError('endpoint must not contain user info (user:password@): give the token as token or auth');
  if (url.username !== '' || url.password !== '') throw new ValidationError('endpoint must not contain user info (user:password@): give the token as token or auth');
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(endpoint as string)) {
    throw new ValidationError(`endpoint must not have a query or fragment, got ${shown}`);
  }
}

/** noauth2 tokens look like `user:project`; their project is the client's default project (`src/auth/noauth.ts`). */
export { projectFromNoauthToken } from '../auth/noauth.js';

/** Default of {@link NovaClientOptions.maxResponseBytes}: 64 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** The defaults of {@link NovaClientOptions}. */
export const NOVA_CLIENT_DEFAULTS = Object.freeze({
  requestTimeoutMs: 30_000,
  refusedFirstContactMs: Number.POSITIVE_INFINITY,
  coalesce: true,
  maxRequestsPerSecond: 10,
  maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
});

/**
 * What {@link NovaClientOptions} takes: any other name is refused (a misspelling must not be
 * ignored). `token`, `auth`, `endpoint`, `maxResponseBytes` and `microversion` are checked together
 * by {@link checkNovaClientOptions}; TLS material by the transport.
 */
const NOVA_CLIENT_SPEC: OptionsSpec<NovaClientOptions> = {
  endpoint: null,
  token: null,
  auth: null,
  projectId: is.string({ nonEmpty: true }),
  microversion: is.string({ nonEmpty: true }),
  requestTimeoutMs: is.durationMs({ timer: true }),
  retry: retryPolicyOption,
  refusedFirstContactMs: is.durationMs({ allowZero: true }),
  logger: is.logger,
  caCert: is.stringOrBuffer,
  clientCert: is.stringOrBuffer,
  clientKey: is.stringOrBuffer,
  insecure: is.boolean,
  userAgent: is.string({ nonEmpty: true }),
  maxResponseBytes: null,
  adapter: null,
  clock: null,
  coalesce: is.boolean,
  maxRequestsPerSecond: (value, name) => {
    if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) throw new ValidationError(`${name} must be a positive number (or Infinity), got ${String(value)}`);
  },
  watchIntervalMs: is.durationMs({ timer: true }),
};
/** Compile-time proof that `NOVA_CLIENT_OPTION_NAMES` (kept in `config/load.ts`, below this layer) names every option. */
type MissingClientOption = Exclude<keyof NovaClientOptions, (typeof NOVA_CLIENT_OPTION_NAMES)[number]>;
const _everyClientOptionNamed: [MissingClientOption] extends [never] ? true : MissingClientOption = true;

/**
 * Check the options of `NovaClient` before anything is built.
 * @throws {@link ValidationError} naming the option.
 */
export function checkNovaClientOptions(options: NovaClientOptions): void {
  if (!options || typeof options !== 'object') throw new ValidationError('NovaClient needs an options object');
  checkOptions('NovaClient options', options, NOVA_CLIENT_SPEC);
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
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (!Number.isInteger(maxResponseBytes) || maxResponseBytes < 1) {
    throw new ValidationError(`maxResponseBytes must be a positive integer, got ${String(options.maxResponseBytes)}`);
  }
  const mv = options.microversion ?? '2.1';
  if (!/^(2\.\d+|latest)$/.test(mv)) throw new ValidationError(`microversion must be "2.<minor>" (e.g. "2.79") or "latest", got ${JSON.stringify(mv)}`);
}

/**
 * Check the body of `createServer` (the `server` member of `POST /servers`): an object with a
 * non-empty `name` and a `flavorRef`.
 * @throws {@link ValidationError}
 */
export function checkCreateServerBody(body: unknown): void {
  if (!body || typeof body !== 'object') throw new ValidationError('createServer needs the server body');
  const { name, flavorRef } = body as { name?: unknown; flavorRef?: unknown };
  if (typeof name !== 'string' || name.length === 0) throw new ValidationError('createServer: body.name must be a non-empty string');
  if (flavorRef === undefined || String(flavorRef).length === 0) throw new ValidationError('createServer: body.flavorRef is required');
  checkServerKeys(body as Record<string, unknown>);
}

/**
 * Refuse, before any request, a key of the `server` body that Nova's create schema accepts at no
 * microversion (`src/core/createServerKeys.ts`): Nova would answer 400 (a typo such as `network`, or
 * `count`, which is `withQuotaGuard`'s). A key only some microversions accept is left to the request.
 * @throws {@link ValidationError} naming the key and the closest one Nova accepts.
 */
function checkServerKeys(body: Record<string, unknown>): void {
  const unknown = Object.keys(body).filter((k) => !EVER_SERVER_KEYS.includes(k));
  if (unknown.length === 0) return;
  const hint = (k: string): string => {
    const near = closestOption(k, EVER_SERVER_KEYS);
    return near === undefined ? '' : ` (did you mean ${near}?)`;
  };
  throw new ValidationError(`createServer: ${unknown.map((k) => `body.${k}${hint(k)}`).join(', ')} ${unknown.length === 1 ? 'is not a key' : 'are not keys'} of Nova's create-server body at any microversion (Nova answers 400)`);
}
