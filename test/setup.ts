/**
 * Setup of every unit test file: real timers back and every registered cleanup run after each test,
 * and no guarded create left waiting for headroom when the file ends (the files of a worker share one
 * module graph, so a create a file leaves waiting raises the `nova_guard.creates.waiting` gauge that
 * the next files read).
 */
import { afterAll, afterEach, beforeAll, beforeEach, expect, vi } from 'vitest';
import { waitingCreatesNow } from '../src/core/telemetry.js';
import { runCleanups } from './cleanup.js';

let atFileStart = 0;
let atTestStart = 0;
const raisedBy: string[] = [];

beforeAll(() => {
  atFileStart = waitingCreatesNow();
  raisedBy.length = 0;
});

beforeEach(() => {
  atTestStart = waitingCreatesNow();
});

afterEach(async () => {
  vi.useRealTimers();
  await runCleanups();
  const now = waitingCreatesNow();
  if (now > atTestStart) raisedBy.push(`${expect.getState().currentTestName} (${atTestStart} -> ${now})`);
});

afterAll(() => {
  const left = waitingCreatesNow() - atFileStart;
  if (left > 0) {
    throw new Error(`${left} guarded create(s) left waiting for headroom after this file (end them: await, abort or let maxWaitMs run out); raised by: ${raisedBy.join('; ') || 'unknown'}`);
  }
});
