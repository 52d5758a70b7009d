/**
 * The errors of an HTTP exchange with Nova or Keystone: {@link NovaApiError} and its subclasses, one
 * per kind of answer. Every one carries the status, Nova's fault key and message, the
 * `x-openstack-request-id`, the method and URL (never a token) and, where known, the server id.
 *
 * Source for the envelope: Nova API reference, "Faults" (`{"<faultKey>": {"code", "message"}}`);
 * keystonemiddleware's `{"error": {...}}` for 401.
 *
 * @module
 */
import { inspect } from 'node:util';
import { NovaGuardError } from './base.js';
import { parseQuotaMessage, type QuotaResource } from './quotaMessage.js';

export type { QuotaResource } from './quotaMessage.js';

/** What every nova-guard HTTP error knows about the request that failed. */
export interface NovaErrorInit {
  /** HTTP status; 0 when no response came (connection error, request timeout, abort). */
  status: number;
  /** Nova's fault key (`itemNotFound`, `forbidden`, `conflictingRequest`, `overLimit`, ...), if the body had one. */
  fault?: string;
  /** Nova's message, or a description of what happened. */
  message: string;
  /** `x-openstack-request-id` (or `x-compute-request-id`) of the response. */
  requestId?: string;
  /** HTTP method. */
  method?: string;
  /** Request URL, without query secrets; never a token. */
  url?: string;
  /** The server the request was about, where there is one. */
  serverId?: string;
  /** Retry-After in milliseconds, from the header or Nova's `retryAfter` body field. */
  retryAfterMs?: number;
  /** The underlying error (a redacted description, never a raw axios error). */
  cause?: unknown;
}

/**
 * Base class of every error nova-guard throws for an HTTP exchange with Nova or Keystone.
 * `name` is the class name. Never holds a token or password: the request's headers are not kept.
 */
export class NovaApiError extends NovaGuardError {
  /** HTTP status; 0 when no response came. */
  readonly status: number;
  /** Nova's fault key, e.g. `itemNotFound`, `forbidden`, `conflictingRequest`, `overLimit`. */
  readonly fault: string | undefined;
  /** `x-openstack-request-id` of the response, for the operator's logs. */
  readonly requestId: string | undefined;
  /** HTTP method of the failed request. */
  readonly method: string | undefined;
  /** URL of the failed request (never with a token). */
  readonly url: string | undefined;
  /** The server this request was about, if any. */
  readonly serverId: string | undefined;
  /** Suggested delay before a retry, in milliseconds, from `Retry-After` or Nova's `retryAfter`. */
  readonly retryAfterMs: number | undefined;

  /** @param init - Status, Nova's fault and message, request id, method, URL, server id, `Retry-After`. */
  constructor(init: NovaErrorInit) {
    super(init.message, { cause: init.cause });
    this.status = init.status;
    this.fault = init.fault;
    this.requestId = init.requestId;
    this.method = init.method;
    this.url = init.url;
    this.serverId = init.serverId;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/**
 * `error` said again with `message`: a new error of its class (one whose constructor takes
 * {@link NovaErrorInit}, not {@link NovaNetworkError} or {@link QuotaExceededError}) with its status,
 * fault, request id, method, URL, server id and `retryAfterMs`, and `error` as its `cause`. For a
 * verdict that adds what the caller needs to know to Nova's own answer.
 */
export function restated<E extends NovaApiError>(error: E, message: string): E {
  const { status, fault, requestId, method, url, serverId, retryAfterMs } = error;
  const Kind = error.constructor as new (init: NovaErrorInit) => E;
  return new Kind({ status, fault, requestId, method, url, serverId, retryAfterMs, message, cause: error } as NovaErrorInit);
}

/** 404 `itemNotFound`: the server (or flavor, ...) does not exist. */
export class NotFoundError extends NovaApiError {}

/** 409 `conflictingRequest`: e.g. the server is locked, or in a state that forbids the action. */
export class ConflictError extends NovaApiError {}

/** 400 `badRequest`: Nova rejected the request's content. Never retried. */
export class BadRequestError extends NovaApiError {}

/**
 * 403 that is not a quota error: a policy denial (`Policy doesn't allow ... to be performed.`) or an
 * opaque proxy page. Never retried.
 */
export class ForbiddenError extends NovaApiError {}

/** 401 from Nova or Keystone: the token is missing, invalid or expired, or the credentials are wrong. */
export class AuthError extends NovaApiError {}

/**
 * 429, or 413 `overLimit` that is a rate limit ("This request was rate-limited."): retry after
 * {@link NovaApiError.retryAfterMs}.
 */
export class RateLimitError extends NovaApiError {}

/** 413 that is neither a rate limit nor a quota: the request body is too large. Never retried. */
export class RequestTooLargeError extends NovaApiError {}

/** 5xx from Nova or a proxy in front of it. */
export class ServerError extends NovaApiError {}

/**
 * Nova answered 2xx, but the body is not what the Nova API reference says it is: not JSON (an HTML
 * page from a proxy or captive portal), JSON `null`, or without the expected member (`server`,
 * `servers`, `flavor`, `limits.absolute`, `quota_set`) of the expected type. Usually a wrong
 * endpoint (e.g. the version document instead of `/v2.1`) or a proxy in front of Nova. `status` is
 * the 2xx status. Never retried, and never taken as an empty answer (an empty server list would make
 * an audit report drift and a reaper see nothing). After a `POST /servers` the server may have been
 * created even though its id is unknown.
 */
export class InvalidResponseError extends NovaApiError {}

/**
 * No response: connection refused or reset, DNS failure, or the request timed out
 * (`requestTimeoutMs`). `status` is 0; `code` is the system or axios code.
 */
export class NovaNetworkError extends NovaApiError {
  /** `ECONNRESET`, `ECONNREFUSED`, `ETIMEDOUT` (request timeout), ... */
  readonly code: string | undefined;
  /** True when the request was ended by `requestTimeoutMs`. */
  readonly timedOut: boolean;
  constructor(init: NovaErrorInit & { code?: string; timedOut?: boolean }) {
    super(init);
    this.code = init.code;
    this.timedOut = init.timedOut ?? false;
  }
}

/** Options of {@link QuotaExceededError} beyond {@link NovaErrorInit}. */
export interface QuotaExceededInit extends NovaErrorInit {
  /** The parsed over-quota resources; parsed from `message` when omitted. */
  resources?: QuotaResource[];
  /** True when waiting cannot help (requested above the limit itself). Derived from `resources` when omitted. */
  permanent?: boolean;
}

/**
 * A quota error: 403 (or legacy 413) whose message is a quota message (see {@link parseQuotaMessage}),
 * a server that went to ERROR with a quota fault, or the guard's own verdict that a request can never fit.
 */
export class QuotaExceededError extends NovaApiError {
  /** Parsed resources: name (`cores`, `ram`, `instances`), requested, used, allowed. */
  readonly resources: QuotaResource[];
  /** True when some resource's request exceeds its limit: no amount of waiting helps. */
  readonly permanent: boolean;
  /** Whose quota it is: `compute` (Nova), `network` (Neutron ports, floating IPs), `volume` (Cinder), or `unknown`. */
  readonly service: 'compute' | 'network' | 'volume' | 'unknown';
  constructor(init: QuotaExceededInit) {
    super(init);
    const parsed = parseQuotaMessage(init.message);
    this.resources = init.resources ?? parsed?.resources ?? [];
    this.permanent = init.permanent ?? parsed?.permanent ?? false;
    this.service = parsed?.service ?? 'unknown';
  }
}

// Keep util.inspect of errors free of anything but their own fields (no nested axios config).
Object.defineProperty(NovaApiError.prototype, inspect.custom, {
  value: function (this: NovaApiError) {
    const { name, message, status, fault, requestId, method, url, serverId } = this;
    return `${name}: ${message} ${inspect({ status, fault, requestId, method, url, serverId })}`;
  },
});

