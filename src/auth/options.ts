/**
 * The options of `KeystoneAuth` and their checks.
 *
 * @module
 */
import type { AxiosAdapter } from 'axios';
import type { Clock } from '../core/clock.js';
import type { LoggerOption } from '../core/logger.js';
import { MAX_TIMER_MS, is } from '../core/validate.js';
import type { OptionsSpec } from '../core/options.js';
import { redactUrlSecrets, withoutUserInfo } from '../core/redact.js';
import { ValidationError } from '../errors/index.js';
import type { TlsOptions } from '../transport/tls.js';
import type { KeystoneCredentials } from './authBody.js';

/** keystoneauth1's `MIN_TOKEN_LIFE_SECONDS` (120 s), in ms. */
export const MIN_TOKEN_LIFE_MS = 120_000;

/** Options of {@link KeystoneAuth}: credentials, where Keystone is, how to pick the endpoint, TLS. */
export interface KeystoneAuthOptions extends KeystoneCredentials, TlsOptions {
  /**
   * Keystone's URL, e.g. `https://keystone.example.org:5000` or `.../v3`. `/v3` is appended when the
   * URL does not end with it. Required, except for `method: 'token'` with an `endpointOverride`
   * (the token is then used as it is, never renewed).
   */
  authUrl?: string;
  /** Endpoint interface: `public` (default), `internal` or `admin` (`OS_INTERFACE`). */
  interface?: string;
  /** Region of the endpoint (`OS_REGION_NAME`); any region when absent. */
  regionName?: string;
  /** Service type looked for in the catalog. Default `compute`. */
  serviceType?: string;
  /** Use this compute endpoint instead of the catalog's (`compute_endpoint_override`). */
  endpointOverride?: string;
  /**
   * Renew a token that has less than this much time left, in ms. Default 120000 (keystoneauth's
   * `MIN_TOKEN_LIFE_SECONDS`). 0 renews only expired tokens.
   */
  minTokenLifeMs?: number;
  /**
   * Time limit of one `POST /v3/auth/tokens`, in ms. Default 30000. A caller of
   * {@link KeystoneAuth.getToken} is also bounded by its own signal (`NovaClient` passes the time
   * limit of its request): it gets its error at once, and a renewal nobody waits for any more is
   * cancelled.
   */
  requestTimeoutMs?: number;
  /** pino logger; default silent. Logs method, project, expiry and timing: never a secret. */
  logger?: LoggerOption;
  /** HTTP user agent. Default `nova-guard/<version>`. */
  userAgent?: string;
  /** The axios adapter that sends requests. Default: axios's own. For tests: a `FakeKeystone`'s in-process adapter. */
  adapter?: AxiosAdapter;
  /** The clock of the time limit, of token expiry and of timings. Default {@link systemClock}. */
  clock?: Clock;
}

/**
 * Normalise a Keystone URL: trailing slashes removed, `/v3` appended when absent.
 * @throws {@link ValidationError} for a non-http(s) URL, a URL with user info, a query or a
 * fragment, or a v2.0 URL.
 */
export function normaliseAuthUrl(authUrl: string): string {
  if (typeof authUrl !== 'string' || !/^https?:\/\/[^/]+/i.test(authUrl)) {
    throw new ValidationError(`authUrl must be an http(s) URL, got ${JSON.stringify(typeof authUrl === 'string' ? redactUrlSecrets(withoutUserInfo(authUrl)) : authUrl)}`);
  }
  // Any `@`: user info whose password holds a `/` would not end at the first `/`.
  if (authUrl.includes('@')) throw new ValidationError('authUrl must not contain user info (user:password@)');
  if (/[?#]/.test(authUrl)) throw new ValidationError(`authUrl must not have a query or fragment (/v3/auth/tokens is appended to it), got ${JSON.stringify(redactUrlSecrets(authUrl))}`);
  const trimmed = authUrl.replace(/\/+$/, '');
  if (/\/v2\.0$/i.test(trimmed)) throw new ValidationError(`Keystone v2.0 is not supported: use the v3 URL instead of ${trimmed}`);
  return /\/v3$/i.test(trimmed) ? trimmed : `${trimmed}/v3`;
}

/** The credential keys of {@link KeystoneAuthOptions}. */
export const CREDENTIAL_KEYS = [
  'method',
  'username',
  'userId',
  'userDomainName',
  'userDomainId',
  'password',
  'projectName',
  'projectId',
  'projectDomainName',
  'projectDomainId',
  'domainName',
  'domainId',
  'applicationCredentialId',
  'applicationCredentialName',
  'applicationCredentialSecret',
  'token',
] as const satisfies ReadonlyArray<keyof KeystoneCredentials>;

/**
 * Check `minTokenLifeMs` (non-negative) and `requestTimeoutMs` (positive, at most what a timer can wait).
 * @throws {@link ValidationError} naming the option, never a value of another option.
 */
export function checkKeystoneDurations(options: Pick<KeystoneAuthOptions, 'minTokenLifeMs' | 'requestTimeoutMs'>): void {
  for (const [name, v, zeroOk] of [
    ['minTokenLifeMs', options.minTokenLifeMs, true],
    ['requestTimeoutMs', options.requestTimeoutMs, false],
  ] as const) {
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (!zeroOk && v === 0) || (name === 'requestTimeoutMs' && v > MAX_TIMER_MS))) {
      throw new ValidationError(`${name} must be a ${zeroOk ? 'non-negative' : 'positive'} number of milliseconds, got ${String(v)}`);
    }
  }
}

/**
 * What {@link KeystoneAuth} takes (see {@link KeystoneAuthOptions}): credentials are checked together
 * by `validateCredentials`, URLs, interface and durations by the constructor.
 */
export const KEYSTONE_AUTH_SPEC: OptionsSpec<KeystoneAuthOptions> = {
  ...(Object.fromEntries(CREDENTIAL_KEYS.map((k) => [k, null])) as OptionsSpec<KeystoneCredentials>),
  caCert: is.stringOrBuffer,
  clientCert: is.stringOrBuffer,
  clientKey: is.stringOrBuffer,
  insecure: is.boolean,
  authUrl: null,
  interface: is.string(),
  regionName: null,
  serviceType: is.string({ nonEmpty: true }),
  endpointOverride: null,
  minTokenLifeMs: null,
  requestTimeoutMs: null,
  logger: is.logger,
  userAgent: is.string({ nonEmpty: true }),
  adapter: is.function,
  clock: is.object,
};

/** What `getToken` and `getEndpoint` take (see `GetTokenOptions`). */
export const GET_TOKEN_SPEC: OptionsSpec<{ signal?: AbortSignal | undefined }> = { signal: is.signal };
