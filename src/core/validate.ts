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
  /** A function. */
  function: ((value, name) => {
    if (typeof value !== 'function') throw new ValidationError(`${name} must be a function`);
  }) as OptionCheck,
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
