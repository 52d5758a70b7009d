/**
 * Work to undo after the current test (close a fake, a server): helpers register it here, and
 * `test/setup.ts` (a vitest setup file, run for every test file) drains it after each test. A hook
 * in a shared helper module would be registered only by the first file that imports it when
 * vitest runs files without isolation.
 */
const pending: Array<() => Promise<unknown> | unknown> = [];

/** Run `fn` after the current test. */
export function afterThisTest(fn: () => Promise<unknown> | unknown): void {
  pending.push(fn);
}

/** Run and forget everything registered so far (the setup file's afterEach). */
export async function runCleanups(): Promise<void> {
  await Promise.all(pending.splice(0).map((fn) => fn()));
}
