/**
 * The one options mechanism of nova-guard: every public function, constructor and factory checks
 * its options object (and each nested one) against an {@link OptionsSpec} before any request. An
 * unknown option name (`{ dryrun: true }`, `{ ram: 4096 }`) is refused with a
 * {@link ValidationError} naming the closest known option, instead of being ignored; each known
 * option's value is checked by the spec's {@link OptionCheck} (types, ranges, units: see
 * `core/validate.ts` for the checks).
 *
 * Not a schema library (zod 4 strict objects, valibot): the checks are mostly durations with this
 * project's wording and timer ceiling, the unknown-name message (closest name, then every known
 * one) would need a custom error map at every call site, and a spec typed `OptionsSpec<T>` makes the
 * compiler check that it names every option of the interface, which a schema does not.
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';

/**
 * The check of one option's value: throws a {@link ValidationError} (whose message names `name`)
 * when `value` is not acceptable. Never called for `undefined` (an absent option).
 * @param value - The option's value, never `undefined`.
 * @param name - The option's name as the message shows it (e.g. `retry.retries`).
 */
export type OptionCheck = (value: unknown, name: string) => void;

/**
 * The options an options object may carry: each known name, with the check of its value, or `null`
 * when the value is checked elsewhere (by the function itself, e.g. a cross-option rule) or is free.
 * Typed from the options interface `T`, so a spec lists every option of `T` and nothing else.
 */
export type OptionsSpec<T = Record<string, unknown>> = { readonly [K in keyof T]-?: OptionCheck | null };

/** Edit distance (Levenshtein) between two short strings. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** A name without case, `_`/`-`, and a trailing unit (`ms`, `seconds`, `mib`, ...): `timeout_seconds` and `timeoutMs` share `timeout`. */
function stem(name: string): string {
  return name
    .toLowerCase()
    .replace(/[_-]/g, '')
    .replace(/(milliseconds|millis|msecs|msec|ms|seconds|secs|sec|mib|mb|gib|gb|bytes)$/, '');
}

/**
 * How close `key` is to the known name `known` (lower is closer), or `undefined` when too far to
 * suggest: same name but case or unit (0-1), one a prefix of the other (2: `ram` and `ramMiB`), one
 * inside the other (3: `delay` and `minDelayMs`), else a small edit distance (4 + distance).
 */
function closeness(key: string, known: string): number | undefined {
  const k = key.toLowerCase().replace(/[_-]/g, '');
  const n = known.toLowerCase();
  if (k === n) return 0;
  const ks = stem(key);
  const ns = stem(known);
  if (ks.length > 0 && ks === ns) return 1;
  const shorter = Math.min(k.length, n.length);
  if (shorter >= 3 && (n.startsWith(k) || k.startsWith(n))) return 2 + Math.abs(n.length - k.length) / 100;
  if (shorter >= 4 && (n.includes(k) || k.includes(n))) return 3 + Math.abs(n.length - k.length) / 100;
  const d = Math.min(distance(k, n), distance(ks, ns));
  return d <= Math.max(2, Math.floor(known.length / 3)) ? 4 + d : undefined;
}

/**
 * The known option name closest to the unknown `key`, or `undefined` when none is close enough to
 * suggest (see {@link checkOptions}).
 */
export function closestOption(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = Infinity;
  for (const name of known) {
    const score = closeness(key, name);
    if (score !== undefined && score < bestScore) {
      best = name;
      bestScore = score;
    }
  }
  return best;
}

/** Throws unless `options` is a plain options object (not null, not an array, not a function). */
function checkIsObject(where: string, options: unknown): asserts options is Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ValidationError(`${where} must be an object, got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`);
  }
}

/**
 * Check an options object against its spec, before any request: `undefined` passes (no options);
 * anything but an object is refused; an own key not in `spec` is refused with the closest known
 * name (`did you mean ...?`, by case, unit, prefix, substring or edit distance) and the list of
 * known names; each present (not `undefined`) value is given to its {@link OptionCheck}.
 * @param where - What the options belong to, for the message (e.g. `deleteServer options`).
 * @param options - The caller's options.
 * @param spec - The known names and the check of each.
 * @param namePrefix - Put before each option's name in value messages (`retry.` gives `retry.retries must be ...`).
 * @throws {@link ValidationError} for a non-object, an unknown name or a bad value.
 */
export function checkOptions<T = Record<string, unknown>>(where: string, options: unknown, spec: OptionsSpec<T>, namePrefix = ''): void {
  if (options === undefined) return;
  checkIsObject(where, options);
  const known = Object.keys(spec);
  for (const key of Object.keys(options)) {
    if (Object.hasOwn(spec, key)) continue;
    const closest = closestOption(key, known);
    const hint = closest !== undefined ? ` (did you mean ${closest}?)` : '';
    throw new ValidationError(`${where}: unknown option ${JSON.stringify(key)}${hint}; known options: ${known.join(', ')}`);
  }
  for (const key of known) {
    const value = options[key];
    const check = (spec as Record<string, OptionCheck | null>)[key];
    if (value !== undefined && check) check(value, `${namePrefix}${key}`);
  }
}
