// The `MaxListenersExceededWarning`s the process emits during each test of a file: call
// `captureListenerWarnings()` at the top of the file, read `warnings()` after `nextTicks()`.
import { afterEach, beforeEach } from 'vitest';

/** Collects the warnings of each test (reset before it); returns the reader. */
export function captureListenerWarnings(): () => readonly string[] {
  let seen: string[] = [];
  const onWarning = (w: Error): void => {
    if (w.name === 'MaxListenersExceededWarning') seen.push(w.message);
  };
  beforeEach(() => {
    seen = [];
    process.on('warning', onWarning);
  });
  afterEach(() => {
    process.off('warning', onWarning);
  });
  return () => seen;
}

/** Let process warnings (sent on the next tick) arrive. */
export const nextTicks = async (): Promise<void> => {
  for (let i = 0; i < 3; i++) await new Promise<void>((r) => process.nextTick(r));
};
