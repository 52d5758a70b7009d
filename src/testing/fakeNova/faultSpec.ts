/**
 * Checking a {@link FaultSpec} when it is queued (`FakeNova.inject`), so a mistake in a test is a
 * `ValidationError` (nova-guard) at the call, not an exception inside the fake's request handler (which
 * crashed the test process and left the request hanging).
 *
 * @module
 */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { ValidationError } from '../../errors/index.js';
import { MAX_TIMER_MS } from '../../core/validate.js';
import type { FaultSpec } from './types.js';
import { checkOptions, type OptionsSpec } from '../../core/options.js';

/** Every field of a {@link FaultSpec}: another name is refused (a misspelt `stauts` would inject a 200). Values are checked below. */
const FAULT_SPEC: OptionsSpec<FaultSpec> = { method: null, path: null, status: null, body: null, headers: null, delayMs: null, hang: null, reset: null, times: null, passThroughAfterMs: null };

/**
 * @throws `ValidationError` (nova-guard) for a spec that is not an object, an unknown field name, a `path` that is neither a
 * string nor a RegExp, a `method` that is not a string, a `status` that is not an integer from 100
 * to 999 (what node:http can send), `headers` that are not valid HTTP header names and values,
 * `times` that is not a positive integer or `Infinity`, a `delayMs` outside 0 to 2147483647 (a longer
 * timer fires at once), a `passThroughAfterMs` outside the same range, or `hang`/`reset` that are not
 * booleans.
 */
export function checkFaultSpec(spec: FaultSpec): void {
  if (!spec || typeof spec !== 'object') throw new ValidationError('FakeNova.inject needs a FaultSpec object');
  checkOptions('FaultSpec', spec, FAULT_SPEC);
  const bad = (what: string): ValidationError => new ValidationError(`FaultSpec.${what}`);
  if (typeof spec.path !== 'string' && !(spec.path instanceof RegExp)) throw bad(`path must be a string or a RegExp (got ${String(spec.path)})`);
  if (spec.method !== undefined && typeof spec.method !== 'string') throw bad(`method must be a string (got ${String(spec.method)})`);
  if (spec.status !== undefined && !(Number.isInteger(spec.status) && spec.status >= 100 && spec.status <= 999)) {
    throw bad(`status must be an integer from 100 to 999 (got ${String(spec.status)})`);
  }
  if (spec.times !== undefined && !(spec.times === Number.POSITIVE_INFINITY || (Number.isInteger(spec.times) && spec.times > 0))) {
    throw bad(`times must be a positive integer or Infinity (got ${String(spec.times)})`);
  }
  for (const key of ['delayMs', 'passThroughAfterMs'] as const) {
    const v = spec[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= MAX_TIMER_MS)) {
      throw bad(`${key} must be a finite number from 0 to ${MAX_TIMER_MS} (got ${String(v)})`);
    }
  }
  for (const flag of ['hang', 'reset'] as const) {
    if (spec[flag] !== undefined && typeof spec[flag] !== 'boolean') throw bad(`${flag} must be a boolean (got ${String(spec[flag])})`);
  }
  if (spec.headers !== undefined) {
    if (!spec.headers || typeof spec.headers !== 'object') throw bad('headers must be an object of strings');
    for (const [name, value] of Object.entries(spec.headers)) {
      try {
        validateHeaderName(name);
        if (typeof value !== 'string') throw new TypeError('not a string');
        validateHeaderValue(name, value);
      } catch (e) {
        throw bad(`headers: ${JSON.stringify(name)} is not a valid header (${(e as Error).message})`);
      }
    }
  }
}
