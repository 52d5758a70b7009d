// The stop signals of the CLI (`src/cli/interrupt.ts`): SIGINT, SIGTERM and SIGHUP alike, their
// exit codes, a second signal that ends the process, and no listener left once a command ends.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { STOP_SIGNALS, watchStopSignals, type StopSignal } from '../../src/cli/interrupt.js';
import { registerServerCreateCommand } from '../../src/cli/serverCreate.js';
import { registerServerDeleteCommand } from '../../src/cli/serverDelete.js';
import { registerReapCommand } from '../../src/cli/reap.js';
import { DEFAULT_IMAGES } from '../../src/testing/index.js';
import { clientFor, startNova } from '../helpers.js';
import { runCli } from './run.js';

const SIGNALS: StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const count = (target: EventEmitter | NodeJS.Process): number => SIGNALS.reduce((n, s) => n + target.listenerCount(s), 0);

describe('watchStopSignals', () => {
  it('exit codes are the shell\'s, 128 + the signal number: SIGHUP 129, SIGINT 130, SIGTERM 143', () => {
    expect(STOP_SIGNALS).toEqual({ SIGHUP: 129, SIGINT: 130, SIGTERM: 143 });
  });

  for (const signal of SIGNALS) {
    it(`${signal}: the first aborts and calls first; a second calls again and exits with that signal's code; dispose removes every listener`, () => {
      const target = new EventEmitter();
      const seen: string[] = [];
      const exits: number[] = [];
      const w = watchStopSignals({ first: (s) => void seen.push(`first ${s}`), again: (s) => void seen.push(`again ${s}`) }, { target, exit: (c) => void exits.push(c) });
      expect(count(target)).toBe(3);
      target.emit(signal);
      expect(w.signal.aborted).toBe(true);
      expect(w.received).toBe(signal);
      expect(w.exitCode).toBe(STOP_SIGNALS[signal]);
      expect(exits).toEqual([]);
      target.emit('SIGTERM');
      expect(seen).toEqual([`first ${signal}`, 'again SIGTERM']);
      expect(exits).toEqual([143]);
      w.dispose();
      w.dispose();
      expect(count(target)).toBe(0);
    });
  }

  it('first returning true ends at once; a handler that throws is said and the signal still takes effect', () => {
    const target = new EventEmitter();
    const exits: number[] = [];
    const printed: string[] = [];
    const w = watchStopSignals({ first: () => true, again: () => undefined }, { target, exit: (c) => void exits.push(c), print: (l) => void printed.push(l) });
    target.emit('SIGHUP');
    expect(exits).toEqual([129]);
    w.dispose();
    const v = watchStopSignals(
      {
        first: () => {
          throw new Error('boom');
        },
        again: () => undefined,
      },
      { target, exit: (c) => void exits.push(c), print: (l) => void printed.push(l) },
    );
    target.emit('SIGINT');
    expect(v.signal.aborted).toBe(true);
    expect(printed).toEqual(['nova-guard: while stopping: boom']);
    v.dispose();
  });
});

describe('no signal listener is left on process once a command ends', () => {
  it('server create, server delete and server reap, in success and in failure', async () => {
    const nova = await startNova({ buildDelayMs: 0, deleteDelayMs: 0 });
    const client = clientFor(nova, { microversion: '2.79' });
    const before = count(process);
    const made = await runCli('server', registerServerCreateCommand, client, ['create', 'leak-check', '--flavor', 'm1.tiny', '--image', DEFAULT_IMAGES[0]!.name, '--wait', '-f', 'value', '-c', 'id']);
    expect(made.exitCode).toBe(0);
    expect(count(process)).toBe(before);
    // A create the guard refuses (the flavor is above the cores limit itself): QuotaNeverFitsError.
    const full = await startNova({ maxTotalCores: 0 });
    await expect(runCli('server', registerServerCreateCommand, clientFor(full, { microversion: '2.79' }), ['create', 'leak-check', '--flavor', 'm1.tiny', '--image', DEFAULT_IMAGES[0]!.name])).rejects.toThrow(/cores/);
    expect(count(process)).toBe(before);
    const gone = await runCli('server', registerServerDeleteCommand, client, ['delete', made.stdout.trim(), '--wait', '--interval', '10ms']);
    expect(gone.exitCode).toBe(0);
    expect(count(process)).toBe(before);
    const reaped = await runCli('server', registerReapCommand, client, ['reap', '--prefix', 'leak-', '--older-than', '1h', '--pass-interval', '0s']);
    expect(reaped.exitCode).toBe(0);
    expect(count(process)).toBe(before);
  });
});
