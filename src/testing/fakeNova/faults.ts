/**
 * Injected faults of a {@link FakeNova}: a queue of {@link FaultSpec}s, checked in order before the
 * real handler; the first one that matches applies and uses up one of its `times`.
 *
 * @module
 */
import type { FaultSpec } from './types.js';

interface Entry {
  spec: FaultSpec;
  left: number;
}

/** The queue of injected faults. */
export class FaultQueue {
  private entries: Entry[] = [];

  /** Queue a fault. `times` defaults to 1; it must be a positive number or `Infinity`. */
  add(spec: FaultSpec): void {
    const left = spec.times ?? 1;
    if (!(left > 0)) throw new RangeError(`FaultSpec.times must be > 0 (got ${String(spec.times)})`);
    this.entries.push({ spec, left });
  }

  /** Drop every queued fault. */
  clear(): void {
    this.entries = [];
  }

  /** Number of queued faults that can still apply. */
  get size(): number {
    return this.entries.length;
  }

  /** The first fault matching `method` and `path` (path without `/v2.1`), used up by one; or undefined. */
  take(method: string, path: string): FaultSpec | undefined {
    for (let i = 0; i < this.entries.length; i++) {
      const e = this.entries[i]!;
      if (e.spec.method !== undefined && e.spec.method.toUpperCase() !== method) continue;
      const p = e.spec.path;
      if (typeof p === 'string' ? p !== path : !testRegExp(p, path)) continue;
      e.left--;
      if (e.left <= 0) this.entries.splice(i, 1);
      return e.spec;
    }
    return undefined;
  }
}

/** `re.test(s)` without the `lastIndex` surprise of global/sticky regexps. */
function testRegExp(re: RegExp, s: string): boolean {
  re.lastIndex = 0;
  return re.test(s);
}
