/**
 * Where {@link NovaClient} gets its token (and, optionally, its compute endpoint) from.
 *
 * The client asks its {@link AuthProvider} for a token before every request, so a provider can renew
 * tokens (Keystone) without the client knowing. After a 401 the client calls
 * {@link AuthProvider.invalidate} once, asks for a token again and repeats the request once.
 *
 * @module
 */
import { checkHeaderToken } from '../core/validate.js';

/** Options passed to {@link AuthProvider.getToken}. */
export interface GetTokenOptions {
  /**
   * Stop waiting: the call rejects with `AbortError` at once. A renewal shared with other callers
   * goes on for them; one that no caller waits for any more is cancelled. `NovaClient` passes a
   * signal that also ends at its `requestTimeoutMs`.
   */
  signal?: AbortSignal | undefined;
}

/**
 * A source of tokens for the `X-Auth-Token` header. Implemented by {@link StaticTokenProvider} and by
 * the Keystone v3 provider.
 */
export interface AuthProvider {
  /** Resolve a token that is valid now (renewing it first if it is about to expire). */
  getToken(options?: GetTokenOptions): Promise<string>;
  /**
   * Called after Nova answered 401 to `token`. Returns true if a later {@link getToken} can return a
   * different token (then the client repeats the request once); false if not (the 401 becomes an
   * `AuthError` at once). Default when absent: false.
   */
  invalidate?(token: string): boolean;
  /** The compute endpoint from the service catalog, if this provider knows one. */
  getEndpoint?(options?: GetTokenOptions): Promise<string>;
  /**
   * The project id this provider's tokens are scoped to, when it knows it (`KeystoneAuth`: the
   * current token's project, else the configured `projectId`; `undefined` before the first token of
   * a credential that names its project by name or is pre-scoped). A quota ledger's `forClient`
   * refuses a project id that is not this one (`src/ledger/scope.ts`).
   */
  getProjectId?(): string | undefined;
  /**
   * Every secret this provider holds (passwords, application credential secrets, tokens issued so
   * far), so that callers and tests can make sure none reaches a log or error.
   */
  secrets?(): string[];
}

/** A fixed token, as given by `{ token }` or `--token`: never renewed; a 401 is final. */
export class StaticTokenProvider implements AuthProvider {
  readonly #token: string;
  /**
   * @param token - The token to send as `X-Auth-Token`.
   * @throws {@link ValidationError} when it cannot be a header value (empty, a CR or LF, a space, a
   * control or non-ASCII character: see `tokenHeaderProblem`), before any request; the message never
   * shows the token.
   */
  constructor(token: string) {
    checkHeaderToken('token', token);
    this.#token = token;
  }
  /** Resolves the fixed token. */
  getToken(): Promise<string> {
    return Promise.resolve(this.#token);
  }
  /** A fixed token cannot be renewed: always false. */
  invalidate(): boolean {
    return false;
  }
  /** The token itself. */
  secrets(): string[] {
    return [this.#token];
  }
  /** Never shows the token. */
  toJSON(): Record<string, string> {
    return { type: 'static-token', token: '[REDACTED]' };
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return 'StaticTokenProvider { token: [REDACTED] }';
  }
}
