/**
 * `KeystoneAuth`: an {@link AuthProvider} that gets tokens from Keystone v3 (password, application
 * credential or an existing token), renews them before they expire, and picks the compute endpoint
 * from the service catalog.
 *
 * Behaviour ported from keystoneauth1 (not its code):
 * - `identity/base.py` `BaseIdentityPlugin.get_access`: a token with less than
 *   `MIN_TOKEN_LIFE_SECONDS = 120` s left is renewed before use (here {@link KeystoneAuthOptions.minTokenLifeMs});
 * - `session.py` `Session.request`: after a 401 the plugin is invalidated and the request repeated once
 *   (here {@link KeystoneAuth.invalidate}, driven by `NovaClient`);
 * - `access/service_catalog.py`: endpoint by service type, interface and region.
 *
 * Keystone API reference: "Password authentication with scoped authorization", "Application
 * credential authentication", "Token authentication" (`POST /v3/auth/tokens`, `X-Subject-Token`).
 *
 * @module
 */
import { VERSION } from '../core/version.js';
import { recordReauthentication } from '../core/telemetry.js';
import { inspect } from 'node:util';
import pTimeout from 'p-timeout';
import type { AuthProvider, GetTokenOptions } from './provider.js';
import { AbortError, InvalidResponseError, NovaApiError, NovaNetworkError, ValidationError, throwIfAborted, type NovaErrorInit } from '../errors/index.js';
import { Transport, type TransportResponse } from '../transport/transport.js';
import { systemClock, type Clock } from '../core/clock.js';
import { componentLogger, type Logger } from '../core/logger.js';
import { REDACTED, redactUrlSecrets } from '../core/redact.js';
import { isPlainObject, tokenHeaderProblem } from '../core/validate.js';
import {
  authRequestBody,
  credentialSecrets,
  describeCredentials,
  validateCredentials,
  type KeystoneCredentials,
  type RevealedCredentials,
  revealCredentials,
  type KeystoneMethod,
} from './authBody.js';
import { normaliseInterface, selectEndpoint, type EndpointInterface } from './catalog.js';
import { parseTokenBody, type KeystoneTokenInfo } from './token.js';
import { CREDENTIAL_KEYS, GET_TOKEN_SPEC, KEYSTONE_AUTH_SPEC, MIN_TOKEN_LIFE_MS, checkKeystoneDurations, normaliseAuthUrl, type KeystoneAuthOptions } from './options.js';
import { checkOptions } from '../core/options.js';
import { projectFromNoauthToken } from './noauth.js';

export type { KeystoneCredentials, KeystoneMethod } from './authBody.js';
export { normaliseAuthUrl } from './options.js';
export type { KeystoneAuthOptions } from './options.js';
export { authRequestBody } from './authBody.js';
export { EndpointNotFoundError } from './catalog.js';
export type { EndpointInterface } from './catalog.js';
export { loadCaCert } from '../transport/tls.js';
export type { KeystoneTokenInfo } from './token.js';

/** A token request under way, shared by every caller waiting for it. */
interface Renewal {
  promise: Promise<TokenState>;
  /** Aborts the request (when no caller waits any more). */
  controller: AbortController;
  /** Callers waiting now. */
  waiters: number;
}

/** The token in use and what came with it. */
interface TokenState {
  token: string;
  info: KeystoneTokenInfo;
  /** Local clock time (epoch ms) at which the token expires; undefined: never. */
  expiresAtLocalMs: number | undefined;
  /** Set by {@link KeystoneAuth.invalidate}: renew on the next use. */
  invalidated: boolean;
}

/** Largest Keystone response body read (16 MiB). */
const KEYSTONE_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

export { redactSecrets } from '../core/redact.js';

/**
 * Keystone v3 authentication for {@link NovaClient}.
 *
 * - `getToken()` returns the current token, renewing it first when it has less than
 *   `minTokenLifeMs` left or was invalidated; concurrent calls share one renewal (single flight).
 * - `invalidate(token)` (called by the client after a 401) returns true and makes the next
 *   `getToken()` fetch a new token, so the client repeats the request once.
 * - `getEndpoint()` returns `endpointOverride`, or the catalog's `compute` endpoint for the interface
 *   and region.
 * - Errors: {@link AuthError} (Keystone's 401, with Keystone's message), other {@link NovaApiError}s
 *   for other statuses, {@link NovaNetworkError} without a response (refused, TLS failure, timeout).
 *   Never a raw axios error (its config holds the password).
 * - `toJSON()` and `util.inspect` show no secret.
 *
 * @example
 * ```ts
 * const auth = new KeystoneAuth({ authUrl: 'https://keystone:5000', username: 'ci', password,
 *   userDomainName: 'Default', projectName: 'ci', projectDomainName: 'Default' });
 * const nova = new NovaClient({ auth });
 * ```
 */
export class KeystoneAuth implements AuthProvider {
  /** The auth method in use. */
  readonly method: KeystoneMethod;
  /** Normalised Keystone URL (ending in `/v3`), or undefined for a token used as it is. */
  readonly authUrl: string | undefined;
  /** Endpoint interface. */
  readonly interface: EndpointInterface;
  /** Endpoint region, if one was asked for. */
  readonly regionName: string | undefined;
  /** Catalog service type. */
  readonly serviceType: string;
  /** Renewal margin, ms. */
  readonly minTokenLifeMs: number;
  /** Time limit of one token request, ms. */
  readonly requestTimeoutMs: number;
  /** The clock of the time limit, of token expiry and of timings (option `clock`). */
  readonly clock: Clock;
  /** Token requests sent so far (every attempt counts). */
  tokenRequests = 0;

  readonly #creds: RevealedCredentials;
  readonly #endpointOverride: string | undefined;
  readonly #direct: boolean;
  readonly #transport: Transport;
  readonly #logger: Logger;
  readonly #issued: string[] = [];
  #current: TokenState | undefined;
  #renewal: Renewal | undefined;
  #warnedShortLifetime = false;

  /**
   * @throws {@link ValidationError} for missing or contradictory credentials, a bad URL, interface or
   * duration (before any request); {@link ConfigError} when the CA file cannot be read.
   */
  constructor(options: KeystoneAuthOptions) {
    if (!options || typeof options !== 'object') throw new ValidationError('KeystoneAuth needs an options object');
    checkOptions('KeystoneAuth options', options, KEYSTONE_AUTH_SPEC);
    const given: KeystoneCredentials = {};
    for (const key of CREDENTIAL_KEYS) {
      const v = options[key];
      if (v !== undefined) (given as Record<string, unknown>)[key] = v;
    }
    // Secrets given as Secret (a loaded cloud's) are read here, once: #creds is private.
    const creds = revealCredentials(given);
    this.method = validateCredentials(creds);
    this.#creds = creds;
    if (options.endpointOverride !== undefined && (typeof options.endpointOverride !== 'string' || !/^https?:\/\/[^/]+/i.test(options.endpointOverride))) {
      const given = options.endpointOverride;
      throw new ValidationError(`endpointOverride must be an http(s) URL, got ${typeof given === 'string' ? JSON.stringify(redactUrlSecrets(given)) : String(given)}`);
    }
    this.#endpointOverride = options.endpointOverride?.replace(/\/+$/, '');
    this.#direct = this.method === 'token' && options.authUrl === undefined;
    if (this.#direct && this.#endpointOverride === undefined) {
      throw new ValidationError('token auth needs authUrl (to exchange the token for a catalog) or endpointOverride (to use it as it is)');
    }
    if (!this.#direct && options.authUrl === undefined) throw new ValidationError(`${this.method} auth needs authUrl`);
    this.authUrl = options.authUrl === undefined ? undefined : normaliseAuthUrl(options.authUrl);
    this.interface = normaliseInterface(options.interface);
    if (options.regionName !== undefined && (typeof options.regionName !== 'string' || options.regionName === '')) {
      throw new ValidationError('regionName must be a non-empty string');
    }
    this.regionName = options.regionName;
    this.serviceType = options.serviceType ?? 'compute';
    checkKeystoneDurations(options);
    this.minTokenLifeMs = options.minTokenLifeMs ?? MIN_TOKEN_LIFE_MS;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.#logger = componentLogger(options.logger, 'keystone');
    this.clock = options.clock ?? systemClock;
    this.#transport = new Transport({
      label: 'Keystone',
      tlsWhat: 'Keystone',
      headers: { Accept: 'application/json', 'User-Agent': options.userAgent ?? `nova-guard/${VERSION}` },
      // A token body with a large catalog is well under 1 MiB: an endless body is cut off, not buffered.
      maxResponseBytes: KEYSTONE_MAX_RESPONSE_BYTES,
      adapter: options.adapter,
      caCert: options.caCert,
      clientCert: options.clientCert,
      clientKey: options.clientKey,
      insecure: options.insecure,
      clock: this.clock,
      logger: this.#logger,
      secrets: () => this.secrets(),
    });
  }

  /**
   * A token valid for at least `minTokenLifeMs` more (or one that never expires). Renews through
   * Keystone when needed; concurrent callers share one renewal (single flight), bounded by
   * `requestTimeoutMs`. Aborting `signal` rejects this call at once with {@link AbortError}; the
   * shared renewal goes on for the callers still waiting, and is cancelled (its socket released)
   * when none is left.
   * @throws {@link AuthError} when Keystone rejects the credentials; {@link NovaApiError} for other
   * Keystone statuses; {@link NovaNetworkError} when Keystone does not answer.
   */
  async getToken(options: GetTokenOptions = {}): Promise<string> {
    checkOptions('getToken options', options, GET_TOKEN_SPEC);
    throwIfAborted(options.signal);
    if (this.#direct) return this.#creds.token!;
    const cur = this.#current;
    if (cur && !this.#needsRenewal(cur)) return cur.token;
    return (await this.#renew(options.signal)).token;
  }

  /**
   * Called by the client after a 401 for `token`. Marks that token as spent so the next
   * {@link getToken} fetches a new one, and returns true (the client repeats the request once).
   * Returns false for a token used as it is (no Keystone to ask).
   */
  invalidate(token: string): boolean {
    if (this.#direct) return false;
    const cur = this.#current;
    if (cur && cur.token === token && !cur.invalidated) {
      cur.invalidated = true;
      this.#logger.info({ projectId: cur.info.projectId }, 'token rejected by the service (401): the next request re-authenticates');
    }
    return true;
  }

  /**
   * The compute endpoint: `endpointOverride`, else the catalog's endpoint of `serviceType` for
   * `interface` and `regionName` (authenticating first if needed).
   * @throws {@link EndpointNotFoundError} (a ConfigError) when the catalog has none; the errors of {@link getToken}.
   */
  async getEndpoint(options: GetTokenOptions = {}): Promise<string> {
    checkOptions('getEndpoint options', options, GET_TOKEN_SPEC);
    if (this.#endpointOverride !== undefined) return this.#endpointOverride;
    await this.getToken(options);
    return selectEndpoint(this.#current?.info.catalog, { serviceType: this.serviceType, interface: this.interface, region: this.regionName });
  }

  /**
   * The project of the current token, else the configured `projectId`, else, for a token used as it
   * is (`endpointOverride`, no `authUrl`), the project of a noauth token `user:project` (as
   * `new NovaClient({ endpoint, token })` does); undefined before the first token of an application credential.
   */
  getProjectId(): string | undefined {
    return this.#current?.info.projectId ?? this.#creds.projectId ?? (this.#direct ? projectFromNoauthToken(this.#creds.token) : undefined);
  }

  /** What came with the current token (expiry, project, user, roles, catalog), without the token itself. */
  tokenInfo(): KeystoneTokenInfo | undefined {
    const info = this.#current?.info;
    return info ? { ...info, catalog: [...info.catalog] } : undefined;
  }

  /** Every secret this provider holds: password, application credential secret, given token, every token issued. */
  secrets(): string[] {
    return [...credentialSecrets(this.#creds), ...this.#issued];
  }

  /** A description without secrets. */
  toJSON(): Record<string, unknown> {
    const c = this.#creds;
    const out: Record<string, unknown> = {
      type: 'keystone',
      method: this.method,
      authUrl: this.authUrl,
      interface: this.interface,
      regionName: this.regionName,
      endpointOverride: this.#endpointOverride,
      username: c.username,
      userId: c.userId,
      projectName: c.projectName,
      projectId: this.getProjectId(),
      applicationCredentialId: c.applicationCredentialId,
      applicationCredentialName: c.applicationCredentialName,
      expiresAt: this.#current?.info.expiresAtMs === undefined ? undefined : new Date(this.#current.info.expiresAtMs).toISOString(),
    };
    for (const k of ['password', 'applicationCredentialSecret', 'token'] as const) if (c[k] !== undefined) out[k] = REDACTED;
    return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
  }

  [inspect.custom](): string {
    return `KeystoneAuth ${inspect(this.toJSON())}`;
  }

  #needsRenewal(cur: TokenState): boolean {
    if (cur.invalidated) return true;
    if (cur.expiresAtLocalMs === undefined) return false;
    return cur.expiresAtLocalMs - this.clock.wallNow() < this.minTokenLifeMs;
  }

  /**
   * Join the renewal under way, or start one; wait for it under `signal`. The last waiter to leave
   * (its signal aborted: the caller's abort or its request's time limit) cancels it.
   */
  /** Authentications started so far (the first, then re-authentications). */
  #authentications = 0;

  async #renew(signal: AbortSignal | undefined): Promise<TokenState> {
    let renewal = this.#renewal;
    if (!renewal) {
      // Every authentication after the first is a re-authentication (expiry, a 401): a metric.
      if (this.#authentications++ > 0) recordReauthentication();
      const controller = new AbortController();
      const started: Renewal = {
        controller,
        waiters: 0,
        promise: this.#authenticate(controller.signal).finally(() => {
          if (this.#renewal === started) this.#renewal = undefined;
        }),
      };
      started.promise.catch(() => undefined); // a renewal whose callers all left must not leave an unhandled rejection
      this.#renewal = renewal = started;
    }
    renewal.waiters++;
    try {
      // p-timeout without a time limit: only the caller's signal ends this wait early.
      return await pTimeout(renewal.promise, { milliseconds: Number.POSITIVE_INFINITY, ...(signal ? { signal } : {}) });
    } catch (error) {
      if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
      throw error;
    } finally {
      renewal.waiters--;
      if (renewal.waiters === 0 && signal?.aborted) {
        // Nobody waits for it any more: release its socket, and let the next caller start afresh.
        if (this.#renewal === renewal) this.#renewal = undefined;
        renewal.controller.abort();
      }
    }
  }

  async #authenticate(signal: AbortSignal): Promise<TokenState> {
    const url = `${this.authUrl!}/auth/tokens`;
    const who = describeCredentials(this.#creds);
    this.tokenRequests++;
    let res: TransportResponse;
    try {
      res = await this.#transport.send({ method: 'POST', url, body: JSON.stringify(authRequestBody(this.#creds)), signal, timeoutMs: this.requestTimeoutMs });
    } catch (error) {
      if (error instanceof NovaNetworkError || error instanceof InvalidResponseError) {
        this.#logger.warn({ url, code: error instanceof NovaNetworkError ? error.code : undefined }, 'keystone token request failed without a response');
      }
      throw error;
    }
    const { headers, requestId, elapsedMs, data } = res;
    if (res.status !== 201 && res.status !== 200) {
      this.#logger.warn({ url, status: res.status, requestId, elapsedMs }, 'keystone rejected the token request');
      throw this.#httpError(res, url, who);
    }
    const subject = headers['x-subject-token'];
    const token = Array.isArray(subject) ? String(subject[0]) : typeof subject === 'string' ? subject : undefined;
    if (!token) {
      throw new NovaApiError({ status: res.status, message: `Keystone answered ${res.status} without an X-Subject-Token header (POST ${url})`, method: 'POST', url, requestId });
    }
    const unsafe = tokenHeaderProblem(token);
    if (unsafe !== undefined) {
      // Never kept: it could not be sent as X-Auth-Token as it is (it would go out empty or changed).
      throw new InvalidResponseError({ status: res.status, message: `Keystone answered ${res.status} with an X-Subject-Token that cannot be sent as a header: ${unsafe} (POST ${url})`, method: 'POST', url, requestId });
    }
    if (!isPlainObject(data) || !isPlainObject(data['token'])) {
      // A 2xx with a body Keystone never sends (a proxy's page): no token is kept, the next call asks again.
      throw new InvalidResponseError({ status: res.status, message: `Keystone answered ${res.status} with a body that is not a token (POST ${url})`, method: 'POST', url, requestId });
    }
    this.#issued.push(token);
    const info = parseTokenBody(data);
    const receivedAt = this.clock.wallNow();
    const expiresAtLocalMs =
      info.expiresAtMs === undefined ? undefined : info.lifetimeMs !== undefined ? receivedAt + info.lifetimeMs : info.expiresAtMs;
    const state: TokenState = { token, info, expiresAtLocalMs, invalidated: false };
    this.#current = state;
    this.#logger.info(
      {
        method: info.methods.join(',') || this.method,
        projectId: info.projectId,
        expiresAt: info.expiresAtMs === undefined ? null : new Date(info.expiresAtMs).toISOString(),
        lifetimeMs: info.lifetimeMs,
        requestId,
        elapsedMs,
      },
      'keystone token issued',
    );
    if (info.lifetimeMs !== undefined && info.lifetimeMs <= this.minTokenLifeMs && !this.#warnedShortLifetime) {
      this.#warnedShortLifetime = true;
      this.#logger.warn({ lifetimeMs: info.lifetimeMs, minTokenLifeMs: this.minTokenLifeMs }, 'token lifetime is not longer than minTokenLifeMs: every request renews it');
    }
    return state;
  }

  #httpError(res: TransportResponse, url: string, who: string): NovaApiError {
    const base = this.#transport.errorFor(res, { method: 'POST', url });
    const status = res.status;
    const init: NovaErrorInit = {
      status,
      fault: base.fault,
      message: `Keystone authentication failed (${this.method}, ${who}): HTTP ${status}: ${base.message}`,
      requestId: base.requestId,
      method: 'POST',
      url,
      retryAfterMs: base.retryAfterMs,
    };
    const Cls = base.constructor as new (init: NovaErrorInit) => NovaApiError;
    return this.#transport.redact(new Cls(init));
  }
}
