/**
 * Unknown option names: a misspelt option (`{ wiat: true }`) must fail before any request, naming
 * the closest known option, instead of being ignored.
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';

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

/**
 * Check that `options` is an object (or undefined) whose own keys are all in `known`.
 * @param where - What the options belong to, for the message (e.g. `deleteServer options`).
 * @throws {@link ValidationError} naming the unknown key and the closest known one.
 */
export function checkKnownOptions(where: string, options: unknown, known: readonly string[]): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new ValidationError(`${where} must be an object`);
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const closest = [...known].sort((x, y) => distance(key.toLowerCase(), x.toLowerCase()) - distance(key.toLowerCase(), y.toLowerCase()))[0];
    const hint = closest !== undefined && distance(key.toLowerCase(), closest.toLowerCase()) <= Math.max(2, Math.floor(closest.length / 3)) ? ` (did you mean ${closest}?)` : '';
    throw new ValidationError(`${where}: unknown option ${JSON.stringify(key)}${hint}; known options: ${known.join(', ')}`);
  }
}
