/**
 * The base class of every error nova-guard throws.
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
