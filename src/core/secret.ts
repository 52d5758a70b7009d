/**
 * A secret (a password, an application credential secret, a token) as a value that shows itself as
 * `[REDACTED]` wherever it goes: `util.inspect` and `console.log` (at any depth), `JSON.stringify`
 * and pino, `String()`, template literals and `util.format('%s')`. The value is in a private field
 * (`#value`), so a copy of the object that holds the secret (`{ ...config.auth }`, `Object.assign`,
 * a copy by a logger's serializer) copies the `Secret` itself, still redacted; only
 * {@link Secret.reveal} gives the value, for the one place that sends it (the Keystone request body).
 *
 * `structuredClone` (and `postMessage`, and v8 serialization) copies no private field: the copy of a
 * `Secret` is a plain empty object, without the value. {@link revealSecret} refuses such a copy
 * with a `ValidationError` that says so, instead of sending `[object Object]` as a password.
 *
 * Options given by users keep taking plain strings; nova-guard wraps them where it keeps them
 * (`loadCloudConfig` gives the secrets of a cloud's `auth` block as `Secret`s).
 *
 * @module
 */
import { inspect } from 'node:util';
import { ValidationError } from '../errors/index.js';
import { REDACTED } from './redact.js';

/** A secret that shows itself as `[REDACTED]`: see the module description. */
export class Secret {
  readonly #value: string;

  /**
   * @param value - The secret.
   * @throws {@link ValidationError} when `value` is not a string (the message never shows it).
   */
  constructor(value: string) {
    if (typeof value !== 'string') throw new ValidationError(`a Secret holds a string, got ${value === null ? 'null' : typeof value}`);
    this.#value = value;
  }

  /** `value` as a `Secret` (a `Secret` as it is; `undefined` stays `undefined`). */
  static of(value: string | Secret): Secret;
  static of(value: string | Secret | undefined): Secret | undefined;
  static of(value: string | Secret | undefined): Secret | undefined {
    return value === undefined || value instanceof Secret ? value : new Secret(value);
  }

  /** The secret itself: for the request that sends it, never for a message or a log. */
  reveal(): string {
    return this.#value;
  }

  /** `[REDACTED]`. */
  toString(): string {
    return REDACTED;
  }

  /** `[REDACTED]` (`JSON.stringify`, pino). */
  toJSON(): string {
    return REDACTED;
  }

  /** `[REDACTED]` (template literals, `+`). */
  [Symbol.toPrimitive](): string {
    return REDACTED;
  }

  /** `[REDACTED]` (`util.inspect`, `console.log`). */
  [inspect.custom](): string {
    return REDACTED;
  }
}

/**
 * The value of a secret given as a string or a {@link Secret}; `undefined` as it is.
 * @param what - The option's name, for the error (e.g. `password`).
 * @throws {@link ValidationError} for anything else: in particular the copy `structuredClone` makes
 * of a `Secret` (a plain object without the value: private fields are not cloned), and the string
 * `[REDACTED]` itself, what a `Secret` becomes in a JSON copy (`JSON.parse(JSON.stringify(config))`):
 * sent to Keystone it would be a wrong password (a 401, and a failed login counted towards the user's
 * lockout), so it is refused before any request.
 */
export function revealSecret(value: unknown, what: string): string | undefined {
  if (value === REDACTED) {
    throw new ValidationError(
      `${what} is the text ${REDACTED}, what a secret becomes in a JSON copy (JSON.stringify) of a loaded configuration, not the secret itself: pass the loaded configuration itself, or a spread copy of it`,
    );
  }
  if (value === undefined || typeof value === 'string') return value;
  if (value instanceof Secret) return value.reveal();
  const cloned = value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype && Object.keys(value).length === 0;
  throw new ValidationError(
    cloned
      ? `${what} is an empty object: a copy of a secret made by structuredClone (or postMessage), which drops its value; pass the loaded configuration itself, or a spread copy of it`
      : `${what} must be a string or a Secret, got ${value === null ? 'null' : typeof value}`,
  );
}
