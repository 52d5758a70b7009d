/** The per-call signals of `SignalFanOut`: one listener per parent, the parent's reason, released on settle. */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { SignalFanOut } from '../../src/core/signalFanOut.js';

describe('SignalFanOut', () => {
  it('many calls on one parent: one listener on it, each call aborted with its reason, none left after', () => {
    const fan = new SignalFanOut();
    const parent = new AbortController();
    const calls = Array.from({ length: 50 }, () => fan.child(parent.signal));
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    const reason = new Error('stop');
    parent.abort(reason);
    for (const c of calls) expect(c.signal!.reason).toBe(reason);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    for (const c of calls) c.release(); // idempotent after the abort
  });

  it('released calls leave nothing on the parent; a later abort does not reach them', () => {
    const fan = new SignalFanOut();
    const parent = new AbortController();
    const a = fan.child(parent.signal);
    const b = fan.child(parent.signal);
    a.release();
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    b.release();
    b.release();
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    parent.abort();
    expect(a.signal!.aborted).toBe(false);
  });

  it('two parents: the first to abort decides; the call leaves the other at once', () => {
    const fan = new SignalFanOut();
    const caller = new AbortController();
    const closing = new AbortController();
    const c = fan.child(caller.signal, closing.signal);
    closing.abort('closed');
    expect(c.signal!.reason).toBe('closed');
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });

  it('no parent: no signal; a parent already aborted: aborted at once with no listener added', async () => {
    const fan = new SignalFanOut();
    expect(fan.child(undefined).signal).toBeUndefined();
    // Not a signal: skipped (the caller passes on what it was given, for its own validation to refuse).
    expect(fan.child('soon' as never).signal).toBeUndefined();
    const done = AbortSignal.abort('early');
    const c = fan.child(done, new AbortController().signal);
    expect(c.signal!.reason).toBe('early');
    const parent = new AbortController();
    await expect(fan.run([parent.signal], async (s) => {
      expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
      return s!.aborted;
    })).resolves.toBe(false);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
  });
});
