/** Setup of every unit test file: real timers back and every registered cleanup run after each test. */
import { afterEach, vi } from 'vitest';
import { runCleanups } from './cleanup.js';

afterEach(async () => {
  vi.useRealTimers();
  await runCleanups();
});
