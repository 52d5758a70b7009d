/**
 * Calling a set of listeners: each one, in the order added, on a copy (a listener may remove itself
 * or add another), and a listener that throws does not stop the others (its failure is its own).
 *
 * @module
 */

/** Call every listener of `listeners` with `args`, ignoring what they throw. */
export function callEach<A extends unknown[]>(listeners: Iterable<(...args: A) => void>, ...args: A): void {
  for (const listener of [...listeners]) {
    try {
      listener(...args);
    } catch {
      // A listener's failure is its own.
    }
  }
}
