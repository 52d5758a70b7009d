/**
 * Checks of caller input shared by the client, the delete-waiter and `deleteServer`: bad input gets
 * a {@link ValidationError} before any request is sent.
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';
import { checkOptions } from './options.js';
import type { OptionCheck, OptionsSpec } from './options.js';

/**
 * Check an id that goes into a URL path segment (`/servers/{id}`, `/flavors/{id}`): a non-empty
 * string without `/`, `?` or `#`, and not `.` or `..`. A dot segment is removed by URL
 * normalisation (WHATWG URL, and so axios), even when percent-encoded: `DELETE /servers/..` would
 * become `DELETE /v2.1/`, whose 404 would read as "already gone".
 * @throws {@link ValidationError}
 */
export function checkPathId(what: string, id: unknown): asserts id is string {
  if (typeof id !== 'string' || id.trim().length === 0 || /[/?#]/.test(id) || id === '.' || id === '..') {
    throw new ValidationError(`${what} must be a non-empty string without '/', '?' or '#' (and not '.' or '..'), got ${JSON.stringify(id)}`);
  }
}

/** True for a JSON object: not null, not an array. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Nova's server ids are UUIDs: 32 hexadecimal digits, in any case, with or without the dashes of the
 * 8-4-4-4-12 form (oslo.utils `uuidutils.is_uuid_like`, which Nova's compute API checks before any
 * lookup: anything else is answered 404, `Instance ... could not be found.`).
 */
export const SERVER_ID_PATTERN = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/** True when `id` has the form of a Nova server id ({@link SERVER_ID_PATTERN}). */
export function isServerId(id: unknown): boolean {
  return typeof id === 'string' && SERVER_ID_PATTERN.test(id);
}

/**
 * Check a server id given to a library call (`getServer`, `deleteServer`, `waitForDelete`, ...):
 * a UUID ({@link SERVER_ID_PATTERN}). Any other string is one Nova could never accept as a server id
 * (its 404 would read as "already gone" while a server of that *name* exists), so it is refused
 * before any request, with the lookup to use: `client.listServers({ name: '^<name>$' })` (Nova's
 * name filter is a regular expression), as the CLI does when it is given a name.
 * @param what - How the id is named in the message, e.g. `server id`.
 * @throws {@link ValidationError}
 */
export function checkServerId(what: string, id: unknown): asserts id is string {
  checkPathId(what, id);
  if (isServerId(id)) return;
  const name = id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  throw new ValidationError(
    `${what} must be a UUID (Nova's server ids are; Nova answers 404 for anything else), got ${JSON.stringify(id)}: ` +
      `to find a server by name, use client.listServers({ name: ${JSON.stringify(`^${name}$`)} }) and take the id of the server whose name is exactly ${JSON.stringify(id)}`,
  );
}

/**
 * The form of an OpenStack request id (`x-openstack-request-id`, `x-compute-request-id`): `req-` and
 * a UUID (oslo.middleware `request_id`). Nova's own answers carry one; a proxy's may carry none, an
 * empty one, or anything (even an echoed secret).
 */
export const REQUEST_ID_PATTERN = /^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `id` is a request id of OpenStack's form ({@link REQUEST_ID_PATTERN}). */
export function isOpenStackRequestId(id: unknown): id is string {
  return typeof id === 'string' && REQUEST_ID_PATTERN.test(id);
}

/**
 * Nova's canonical form of a server id: lower case, with the dashes of the 8-4-4-4-12 form. Nova
 * accepts an id in any case and without dashes, but answers 404 for any form other than the one it
 * stores and lists, so an id is put in this form before any request and compared in it.
 * @param id - A server id of the form {@link SERVER_ID_PATTERN} (checked by the caller).
 */
export function canonicalServerId(id: string): string {
  const hex = id.replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Check a server id given to a library call ({@link checkServerId}) and return it in Nova's
 * canonical form ({@link canonicalServerId}): lower case, 8-4-4-4-12 dashes. Every request and
 * every result uses this form.
 * @throws {@link ValidationError}
 */
export function normaliseServerId(what: string, id: unknown): string {
  checkServerId(what, id);
  return canonicalServerId(id);
}

/**
 * Why `token` cannot be sent as an HTTP header value (`X-Auth-Token`) as it is, or undefined when it
 * can. An HTTP field value (RFC 9110, 5.5) is visible ASCII and `obs-text` (bytes 0x80-0xFF, which
 * Node sends as Latin-1), with spaces or tabs only inside: a CR or LF would end the header (the HTTP
 * stack strips or refuses it), a character above U+00FF (`'☃'`) cannot be sent, and whitespace at
 * either end is trimmed; so such a token is refused before any request instead of being sent empty
 * or changed. The reason never shows the token.
 */
export function tokenHeaderProblem(token: unknown): string | undefined {
  if (typeof token !== 'string' || token.length === 0) return 'it is not a non-empty string';
  const bad = /[^\t\x20-\x7e\x80-\xff]/.exec(token);
  if (bad) {
    const c = bad[0].charCodeAt(0);
    const what = c === 13 || c === 10 ? 'a line break (CR or LF)' : c < 0x20 || c === 0x7f ? 'a control character' : 'a character above U+00FF';
    return `it holds ${what} at position ${bad.index}`;
  }
  if (/^[\t ]|[\t ]$/.test(token)) return 'it starts or ends with whitespace (a header value is trimmed)';
  return undefined;
}

/**
 * Check a token before it is used as the `X-Auth-Token` header: see {@link tokenHeaderProblem}.
 * @param what - How the token is named in the message, e.g. `token`.
 * @throws {@link ValidationError} (the message never shows the token)
 */
export function checkHeaderToken(what: string, token: unknown): asserts token is string {
  const problem = tokenHeaderProblem(token);
  if (problem !== undefined) throw new ValidationError(`${what} cannot be sent as an X-Auth-Token header: ${problem}`);
}

/**
 * The longest delay a Node timer can wait: 2147483647 ms (about 24.8 days). A longer `setTimeout`
 * fires after 1 ms (with a TimeoutOverflowWarning), so a longer finite timeout would end at once.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * Check a duration in milliseconds: a number, not NaN, not negative, not 0 unless `allowZero`, and
 * finite unless `allowInfinity` (e.g. a timeout, where `Infinity` means none). With `timer` (the
 * value feeds a timer: a timeout, an interval, a delay) a finite value must be at most
 * {@link MAX_TIMER_MS}.
 * @throws {@link ValidationError}
 */
export function checkDurationMs(name: string, value: unknown, { allowZero = false, allowInfinity = true, timer = false } = {}): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (!allowZero && value === 0) || (!allowInfinity && !Number.isFinite(value))) {
    throw new ValidationError(
      `${name} must be a ${allowZero ? 'non-negative' : 'positive'}${allowInfinity ? '' : ', finite'} number of milliseconds, got ${String(value)}`,
    );
  }
  if (timer && Number.isFinite(value) && value > MAX_TIMER_MS) {
    throw new ValidationError(
      `${name} must be at most ${MAX_TIMER_MS} ms (about 24.8 days, the longest a timer can wait)${allowInfinity ? ', or Infinity for no limit' : ''}, got ${String(value)}`,
    );
  }
}

/** The parts of a retry policy {@link checkRetryPolicy} checks (see `RetryOptions` in `client.ts`). */
export interface RetryPolicyInput {
  retries?: number | undefined;
  minDelayMs?: number | undefined;
  maxDelayMs?: number | undefined;
  maxRetryTimeMs?: number | undefined;
}

/**
 * Check a retry policy (`false` is checked by the caller, where it is allowed): no option name but
 * `retries`, `minDelayMs`, `maxDelayMs`, `maxRetryTimeMs` (a misspelt one names the closest),
 * `retries` a non-negative integer, `minDelayMs` a finite non-negative duration, `maxDelayMs` a
 * non-negative duration (both at most {@link MAX_TIMER_MS}), `maxRetryTimeMs` a positive duration.
 * @param where - Prefix of the option names in messages, e.g. `retry`.
 * @throws {@link ValidationError}
 */
export function checkRetryPolicy(where: string, r: RetryPolicyInput | undefined): void {
  if (r === undefined) return;
  if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new ValidationError(`${where} must be an object (or false), got ${String(r)}`);
  checkOptions(where, r, retryPolicySpec(), `${where}.`);
}

/** The {@link OptionsSpec} of a retry policy (see {@link checkRetryPolicy}). */
function retryPolicySpec(): OptionsSpec<RetryPolicyInput> {
  return {
    retries: is.integer(),
    minDelayMs: is.durationMs({ allowZero: true, allowInfinity: false, timer: true }),
    maxDelayMs: is.durationMs({ allowZero: true, timer: true }),
    maxRetryTimeMs: is.durationMs(),
  };
}

/** A retry policy option: `false` (no retries) or a policy object (see {@link checkRetryPolicy}). */
export function retryPolicyOption(value: unknown, name: string): void {
  if (value === false) return;
  checkRetryPolicy(name, value as RetryPolicyInput);
}

/**
 * The checks of option values an {@link OptionsSpec} names (see `core/options.ts`): each throws a
 * {@link ValidationError} naming the option.
 */
export const is = Object.freeze({
  /** A duration in ms (see {@link checkDurationMs}: `allowZero`, `allowInfinity`, `timer`). */
  durationMs(opts: { allowZero?: boolean; allowInfinity?: boolean; timer?: boolean } = {}): OptionCheck {
    return (value, name) => checkDurationMs(name, value, opts);
  },
  /** An integer in `[min, max]` (`min` defaults to 0). */
  integer({ min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {}): OptionCheck {
    return (value, name) => {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
        const range = max === Number.MAX_SAFE_INTEGER ? (min === 0 ? 'a non-negative integer' : min === 1 ? 'a positive integer' : `an integer of at least ${min}`) : `an integer in [${min}, ${max}]`;
        throw new ValidationError(`${name} must be ${range}, got ${String(value)}`);
      }
    };
  },
  /** A finite number in `[min, max]` (`maxExclusive` makes the top open). */
  number({ min = -Infinity, max = Infinity, maxExclusive = false }: { min?: number; max?: number; maxExclusive?: boolean } = {}): OptionCheck {
    return (value, name) => {
      if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max || (maxExclusive && value === max)) {
        throw new ValidationError(`${name} must be a number in [${min}, ${max}${maxExclusive ? ')' : ']'}, got ${String(value)}`);
      }
    };
  },
  /** `true` or `false` (not a truthy string or number: `dryRun: 'no'` is refused, not read as true). */
  boolean: ((value, name) => {
    if (typeof value !== 'boolean') throw new ValidationError(`${name} must be a boolean, got ${String(value)}`);
  }) as OptionCheck,
  /** A string; with `nonEmpty` not `''`. */
  string({ nonEmpty = false }: { nonEmpty?: boolean } = {}): OptionCheck {
    return (value, name) => {
      if (typeof value !== 'string' || (nonEmpty && value.trim() === '')) throw new ValidationError(`${name} must be a ${nonEmpty ? 'non-empty ' : ''}string, got ${typeof value}`);
    };
  },
  /** One of `values`. */
  oneOf(values: readonly unknown[]): OptionCheck {
    return (value, name) => {
      if (!values.includes(value)) {
        const quoted = values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v)));
        const list = quoted.length > 1 ? `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}` : quoted.join('');
        throw new ValidationError(`${name} must be ${list}, got ${JSON.stringify(value) ?? String(value)}`);
      }
    };
  },
  /** A string or a Buffer (PEM text, its bytes, or a file path: `caCert`, `clientCert`, `clientKey`). */
  stringOrBuffer: ((value, name) => {
    if (typeof value !== 'string' && !Buffer.isBuffer(value)) throw new ValidationError(`${name} must be a string or a Buffer, got ${value === null ? 'null' : typeof value}`);
  }) as OptionCheck,
  /**
   * A logger: a pino `Logger` or an object with pino's level methods `info`, `warn`, `error` and
   * `debug` (`console` included). `null` and any other value are refused here, before `toLogger`.
   */
  logger: ((value, name) => {
    if (value === null || typeof value !== 'object') throw new ValidationError(`${name} must be a pino Logger or an object with pino's level methods (info, warn, error, debug), got ${value === null ? 'null' : typeof value}`);
    for (const m of ['info', 'warn', 'error', 'debug']) {
      if (typeof (value as Record<string, unknown>)[m] !== 'function') throw new ValidationError(`${name} must be a pino Logger or an object with pino's level methods (info, warn, error, debug): ${m} is missing`);
    }
  }) as OptionCheck,
  /** A function. */
  function: ((value, name) => {
    if (typeof value !== 'function') throw new ValidationError(`${name} must be a function`);
  }) as OptionCheck,
  /**
   * A function of the given shape: the message says what it is called with and must return
   * (`signature`, e.g. `(token: string) => boolean`, and `hint`), and the kind of value it got (a
   * string is never shown: it may be a secret given in the wrong place).
   */
  functionOf(signature: string, hint = ''): OptionCheck {
    return (value, name) => {
      if (typeof value === 'function') return;
      const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : typeof value === 'string' ? 'a string' : String(value);
      throw new ValidationError(`${name} must be a function ${signature}${hint ? ` ${hint}` : ''}, got ${got}`);
    };
  },
  /** An `AbortSignal`. */
  signal: ((value, name) => {
    if (!(value instanceof AbortSignal)) throw new ValidationError(`${name} must be an AbortSignal`);
  }) as OptionCheck,
  /** An object (not null, not an array): a value checked no further. */
  object: ((value, name) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ValidationError(`${name} must be an object`);
  }) as OptionCheck,
  /** A nested options object, checked against its own spec (unknown names refused the same way). */
  options<T>(spec: OptionsSpec<T>): OptionCheck {
    return (value, name) => checkOptions(name, value, spec, `${name}.`);
  },
  /** An array whose every item passes `item` (named `name[i]` in messages). */
  arrayOf(item: OptionCheck): OptionCheck {
    return (value, name) => {
      if (!Array.isArray(value)) throw new ValidationError(`${name} must be an array`);
      value.forEach((v: unknown, i) => item(v, `${name}[${i}]`));
    };
  },
  /** Any of the checks: the value passes when one passes; else the first one's error. */
  either(...checks: OptionCheck[]): OptionCheck {
    return (value, name) => {
      let first: unknown;
      for (const c of checks) {
        try {
          c(value, name);
          return;
        } catch (e) {
          first ??= e;
        }
      }
      throw first;
    };
  },
});
