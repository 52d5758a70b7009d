/**
 * The base of every error nova-guard throws, and the errors that are not about an HTTP exchange:
 * bad input ({@link ValidationError}), bad configuration ({@link ConfigError}) and an abort
 * ({@link AbortError}).
 *
 * @module
 */

/**
 * Base class of every error nova-guard throws: `catch (e) { if (e instanceof NovaGuardError) ... }`
 * tells nova-guard's errors from a bug or a caller's own error. `name` is the class name. No
 * nova-guard error holds a token or password.
 */
export class NovaGuardError extends Error {
  /**
   * @param message - What went wrong (never a secret).
   * @param options - `cause`: the underlying error, if any.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
  }
}

/**
 * The operation was aborted through its AbortSignal. `cause` is the signal's reason; `serverId`
 * names the server when the operation was about one (`deleteServer`, `deleteServers`,
 * `waitForDelete`).
 */
export class AbortError extends NovaGuardError {
  /** The server the aborted operation was about, if any. */
  readonly serverId: string | undefined;
  /**
   * @param message - Default `The operation was aborted`.
   * @param options - `cause`: the signal's reason; `serverId`: the server the operation was about.
   */
  constructor(message = 'The operation was aborted', options?: { cause?: unknown; serverId?: string | undefined }) {
    super(message, options);
    this.serverId = options?.serverId;
  }
}

/**
 * Bad input caught before any request: a missing option, a negative duration, an empty id.
 * Derives from {@link NovaGuardError} (no longer from `TypeError`).
 */
export class ValidationError extends NovaGuardError {
  /** @param message - Which input is wrong and what was given (never a secret). */
  constructor(message: string) {
    super(message);
  }
}

/** Configuration could not be loaded: names the file and the key, never a secret value. */
export class ConfigError extends NovaGuardError {
  /** The file that was being read, if any. */
  readonly file: string | undefined;
  /** The key that is missing or wrong, if any. */
  readonly key: string | undefined;
  /**
   * @param message - What is wrong (never a secret value).
   * @param options - `file` and `key` it is about; `cause`.
   */
  constructor(message: string, options?: { file?: string; key?: string; cause?: unknown }) {
    super(message, options);
    this.file = options?.file;
    this.key = options?.key;
  }
}

/**
 * Throws {@link AbortError} (with the signal's reason as `cause`) when `signal` is aborted.
 * @throws {@link AbortError}
 */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
}

/**
 * True for an abort: nova-guard's {@link AbortError}, the platform's (a `DOMException` of the
 * `AbortError` kind, as `AbortSignal.abort()` gives; Node's own with code `ABORT_ERR`, as
 * `node:timers/promises` gives), or axios's cancel (`ERR_CANCELED`).
 */
export function isAbortError(error: unknown): boolean {
  if (error instanceof AbortError) return true;
  // A DOMException's kind is its name (WebIDL): there is no subclass to test with instanceof.
  if (error instanceof DOMException) return error.name === 'AbortError';
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return code === 'ABORT_ERR' || code === 'ERR_CANCELED';
}
