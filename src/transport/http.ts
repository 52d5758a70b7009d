/**
 * Turning an HTTP response (or the lack of one) into nova-guard's typed errors, and reading the
 * headers nova-guard cares about (`x-openstack-request-id`, `Retry-After`, `Date`).
 *
 * Sources: Nova API reference, "Faults" (the `{"<fault>": {"code", "message"}}` envelope, 413
 * `overLimit` with `retryAfter`); keystonemiddleware's 401 body. A 413 may be a rate limit, a quota
 * (older Nova) or a proxy's "body too large"; a 429 may come without any hint.
 *
 * @module
 */
import {
  AuthError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  NovaApiError,
  NovaNetworkError,
  QuotaExceededError,
  RateLimitError,
  RequestTooLargeError,
  ServerError,
  type NovaErrorInit,
} from '../errors/index.js';
import { parseQuotaMessage } from '../errors/quotaMessage.js';
import { systemClock } from '../core/clock.js';
import { redactUrlSecrets } from '../core/redact.js';
import { isOpenStackRequestId, isPlainObject } from '../core/validate.js';

/** Response headers as axios gives them (lower-case names). */
export type HeaderBag = Record<string, unknown>;

function header(headers: HeaderBag, name: string): string | undefined {
  const lower = name.toLowerCase();
  // Names in any case (node:http gives lower case; an adapter or a proxy may not).
  const key = lower in headers ? lower : name in headers ? name : Object.keys(headers).find((k) => k.toLowerCase() === lower);
  const v = key === undefined ? undefined : headers[key];
  if (Array.isArray(v)) return v[0] === undefined ? undefined : String(v[0]);
  return v === undefined || v === null ? undefined : String(v);
}

/** Longest request id kept (one of OpenStack's form is 40 characters); a longer one is cut. */
const MAX_REQUEST_ID_CHARS = 200;

/**
 * `x-openstack-request-id`, else `x-compute-request-id`. One of OpenStack's form (`req-<uuid>`) is
 * kept verbatim; any other value (a proxy's, or an echo of the request: it may hold the token) is
 * passed through `redact` (the caller's secrets) and `redactUrlSecrets`, then cut to 200 characters,
 * before it reaches an error, a log line or a result.
 */
export function requestIdOf(headers: HeaderBag, redact?: Redactor): string | undefined {
  const raw = header(headers, 'x-openstack-request-id') ?? header(headers, 'x-compute-request-id');
  if (raw === undefined || isOpenStackRequestId(raw)) return raw;
  const safe = redactUrlSecrets(redact ? redact(raw) : raw);
  return safe.length > MAX_REQUEST_ID_CHARS ? `${safe.slice(0, MAX_REQUEST_ID_CHARS)}...` : safe;
}

/** Nova's `Date` header as epoch milliseconds (one-second resolution), or undefined. */
export function serverDateOf(headers: HeaderBag): number | undefined {
  const d = header(headers, 'date');
  if (!d) return undefined;
  const ms = Date.parse(d);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * A retry delay in milliseconds from a `Retry-After` header (seconds or an HTTP date), Nova's body
 * `retryAfter` (seconds) or `retryAt` (an absolute time). Negative values become 0.
 */
export function retryAfterMsOf(headers: HeaderBag, faultBody: Record<string, unknown> | undefined, nowMs = systemClock.wallNow()): number | undefined {
  const candidates: Array<string | undefined> = [header(headers, 'retry-after')];
  const bodyAfter = faultBody?.['retryAfter'];
  if (bodyAfter !== undefined && bodyAfter !== null) candidates.push(String(bodyAfter));
  for (const c of candidates) {
    if (c === undefined || c.trim() === '') continue;
    const n = Number(c);
    if (Number.isFinite(n)) return Math.max(0, n * 1000);
    const at = Date.parse(c);
    if (Number.isFinite(at)) return Math.max(0, at - nowMs);
  }
  const retryAt = faultBody?.['retryAt'];
  if (typeof retryAt === 'string') {
    const at = Date.parse(retryAt.replace(/UTC$/, 'Z'));
    if (Number.isFinite(at)) return Math.max(0, at - nowMs);
  }
  return undefined;
}

/** Nova's `{"<fault>": {"code", "message"}}` envelope, or keystone's `{"error": {...}}`, taken apart. */
export function parseFaultBody(data: unknown): { fault?: string; message?: string; body?: Record<string, unknown> } {
  let obj = data;
  if (typeof obj === 'string') {
    try {
      obj = JSON.parse(obj);
    } catch {
      return {};
    }
  }
  if (!isPlainObject(obj)) return {};
  const key = Object.keys(obj)[0];
  if (key === undefined) return {};
  const inner = obj[key];
  if (isPlainObject(inner)) return { fault: key, message: typeof inner['message'] === 'string' ? inner['message'] : undefined, body: inner };
  return typeof obj['message'] === 'string' ? { message: obj['message'] } : {};
}

/** Removes secrets from a text (see `redactSecrets`). */
export type Redactor = (text: string) => string;

/**
 * `data` with every secret removed, before anything is read from it: a string as it is, any
 * other JSON value through its JSON text (so Nova's message and fault key are free of secrets too).
 */
export function redactedBody(data: unknown, redact: Redactor | undefined): unknown {
  if (!redact || data === undefined || data === null) return data;
  if (typeof data === 'string') return redact(data);
  if (Buffer.isBuffer(data)) return redact(data.toString('utf8'));
  try {
    return JSON.parse(redact(JSON.stringify(data))) as unknown;
  } catch {
    return '(body withheld: it could not be redacted)';
  }
}

/**
 * A short, tag-stripped excerpt of a body for an error message (`empty body` when there is none).
 * With `redact`, secrets are removed from the whole body first, then again from the text with its
 * tags taken out (a secret split by a tag, `S3cr3t-XY<b>ZZY-1234</b>`, is whole only there), before
 * tags become spaces and the excerpt is cut (a cut could leave part of a secret unrecognised).
 */
export function textSnippet(data: unknown, redact?: Redactor): string {
  if (data === undefined || data === null || data === '') return 'empty body';
  const raw = typeof data === 'string' ? data : Buffer.isBuffer(data) ? data.toString('utf8') : JSON.stringify(data);
  let s = redact ? redact(raw) : raw;
  if (redact && /<[^>]*>/.test(s)) {
    // A secret that only shows once the tags are out: the text is then shown without them (no
    // space in their place), so that the secret is redacted whole.
    const joined = s.replace(/<[^>]*>/g, '');
    if (redact(joined) !== joined) s = redact(joined);
  }
  const text = s.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
  if (!text) return 'empty body';
  return `body: "${text.length > 200 ? `${text.slice(0, 200)}...` : text}"`;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Request Entity Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** Context of the request an error is built for. */
export interface RequestContext {
  method: string;
  url: string;
  serverId?: string | undefined;
  /**
   * Who was called, when it is not Nova (`'Keystone'`): prefixed to messages of a failed
   * connection, which then carry the system's message too.
   */
  label?: string | undefined;
  /** Removes the caller's secrets from a body before any of it reaches a message. */
  redact?: Redactor | undefined;
}

/**
 * Build the typed error for a non-2xx response. Classification reads the body, not only the status:
 * a 403 is a {@link QuotaExceededError} only when its message is a quota message. A 3xx (never
 * followed) is a {@link NovaApiError} naming its `Location`, e.g. an http endpoint redirected to https.
 * @param nowMs - Wall-clock time (epoch ms) an HTTP-date `Retry-After` is counted from.
 */
export function errorFromResponse(status: number, headers: HeaderBag, data: unknown, ctx: RequestContext, nowMs = systemClock.wallNow()): NovaApiError {
  if (status >= 300 && status < 400) {
    // Redirects are never followed (the token or password would go along): say where to point instead.
    // Secrets out before the cut (a cut secret would no longer be recognised).
    const raw = header(headers, 'location');
    const location = raw === undefined ? undefined : redactUrlSecrets(ctx.redact ? ctx.redact(raw) : raw);
    return new NovaApiError({
      status,
      message:
        `HTTP ${status} from ${ctx.method} ${ctx.url}: ` +
        (location
          ? `redirected to ${location.length > 300 ? `${location.slice(0, 300)}...` : location}; nova-guard does not follow redirects (credentials would go along): use that URL`
          : 'a redirect, which nova-guard does not follow'),
      requestId: requestIdOf(headers, ctx.redact),
      method: ctx.method,
      url: ctx.url,
      serverId: ctx.serverId,
    });
  }
  // A body may echo the request (a debugging proxy, an echo service at the wrong URL): secrets out first.
  const safe = redactedBody(data, ctx.redact);
  const { fault, message: novaMessage, body } = parseFaultBody(safe);
  const message =
    novaMessage ??
    `HTTP ${status} ${STATUS_TEXT[status] ?? ''}`.trim() + ` from ${ctx.method} ${ctx.url} (${textSnippet(safe, ctx.redact)})`;
  const init: NovaErrorInit = {
    status,
    fault,
    message,
    requestId: requestIdOf(headers, ctx.redact),
    method: ctx.method,
    url: ctx.url,
    serverId: ctx.serverId,
    retryAfterMs: retryAfterMsOf(headers, body, nowMs),
  };
  if (status === 400) return new BadRequestError(init);
  if (status === 401) return new AuthError(init);
  if (status === 403) {
    return novaMessage && parseQuotaMessage(novaMessage) ? new QuotaExceededError(init) : new ForbiddenError(init);
  }
  if (status === 404) return new NotFoundError(init);
  if (status === 409) return new ConflictError(init);
  if (status === 413) {
    if (novaMessage && parseQuotaMessage(novaMessage)) return new QuotaExceededError({ ...init, retryAfterMs: undefined });
    const rateLimited =
      (fault === 'overLimit' && /rate.?limit/i.test(novaMessage ?? '')) ||
      (init.retryAfterMs !== undefined && fault === 'overLimit') ||
      (body !== undefined && body['retryAt'] !== undefined);
    return rateLimited ? new RateLimitError(init) : new RequestTooLargeError(init);
  }
  if (status === 429) return new RateLimitError(init);
  if (status >= 500) return new ServerError(init);
  return new NovaApiError(init);
}

/** Build the typed error for a request that got no response. */
export function networkError(code: string | undefined, detail: string, ctx: RequestContext, timedOut: boolean): NovaNetworkError {
  const what = `${ctx.label ? `${ctx.label} ` : ''}${ctx.method} ${ctx.url}`;
  const why = ctx.label ? (code ? `${code} (${detail})` : detail) : (code ?? detail);
  return new NovaNetworkError({
    status: 0,
    message: timedOut ? `${what} timed out (${detail})` : `${what} failed without a response: ${why}`,
    method: ctx.method,
    url: ctx.url,
    serverId: ctx.serverId,
    code,
    timedOut,
  });
}

/** The 5xx statuses a GET or DELETE is repeated after (Nova's 500, a proxy's 502/503/504). */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([500, 502, 503, 504]);

/**
 * The one definition of "transient": true for the errors after which an idempotent request (GET,
 * DELETE) may be sent again: no response ({@link NovaNetworkError}: reset, refused, request
 * timeout), 500/502/503/504 ({@link ServerError}), and rate limits ({@link RateLimitError}: 429, 413
 * `overLimit` that is a rate limit). Never a 4xx other than the rate limits, never an
 * {@link InvalidResponseError}, never an abort.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof NovaNetworkError) return true;
  if (error instanceof RateLimitError) return true;
  if (error instanceof ServerError) return TRANSIENT_STATUSES.has(error.status);
  return false;
}

/**
 * True for the errors after which a request of `method` may be sent again: {@link isTransient} for
 * GET and DELETE; for POST and PUT (which may have reached Nova: a create) only rate limits and a
 * refused connection, when the request provably did not reach the service.
 */
export function isRetryable(method: string, error: unknown): boolean {
  if (method === 'GET' || method === 'DELETE') return isTransient(error);
  return error instanceof RateLimitError || (error instanceof NovaNetworkError && error.code === 'ECONNREFUSED');
}

/**
 * True when a 404 says that this server does not exist: Nova answers `Instance <id> could not be
 * found.` (`InstanceNotFound`). A 404 that does not name the server (a wrong endpoint such as Nova's
 * unversioned root, a proxy page) is no evidence that the server is gone, so a delete or a wait must
 * never end on it (it would leak the server while reporting it deleted).
 */
export function isServerNotFound(error: unknown, serverId: string): boolean {
  // Only Nova's own fault envelope counts: a message made up from an HTML or empty body (or an
  // `itemNotFound` with no message) quotes the request URL, which holds the id too.
  if (!(error instanceof NotFoundError) || error.fault !== 'itemNotFound') return false;
  if (error.url && error.message.includes(error.url)) return false;
  // The id as a whole word: `Instance abcd could not be found.` does not name server `abc`.
  const escaped = serverId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?:^|[\\s"'(])${escaped}[.,:;)"']?(?=[\\s"']|$)`).test(error.message);
}
