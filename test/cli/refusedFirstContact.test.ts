/**
 * `RefusedFirstContact` (server delete's give-up on a Nova that refused every connection since the
 * first), on fake timers: it aborts only when refusals went on for the limit with no answer ever.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RefusedFirstContact } from '../../src/cli/refusedFirstContact.js';
import { systemClock } from '../../src/core/clock.js';
import { NovaNetworkError, ServerError } from '../../src/errors/index.js';

const refusal = (): NovaNetworkError => new NovaNetworkError({ status: 0, message: 'refused', code: 'ECONNREFUSED', url: 'http://127.0.0.1:9/v2.1/servers/x' });

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('RefusedFirstContact', () => {
  it('refusals for the limit and no answer: aborts with the refusal', async () => {
    const r = new RefusedFirstContact({ clock: systemClock, lastRequestId: undefined }, 1000);
    const error = refusal();
    r.failed(error);
    expect(r.pending).toBe(true);
    await vi.advanceTimersByTimeAsync(999);
    expect(r.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.signal.aborted).toBe(true);
    expect(r.refusal).toBe(error);
  });

  it('an answer within the limit (an observation, or a request id on the client) keeps it from aborting, for good', async () => {
    const r = new RefusedFirstContact({ clock: systemClock, lastRequestId: undefined }, 1000);
    r.failed(refusal());
    r.answered();
    r.failed(refusal());
    await vi.advanceTimersByTimeAsync(5000);
    expect(r.signal.aborted).toBe(false);
    const client = { clock: systemClock, lastRequestId: undefined as string | undefined };
    const late = new RefusedFirstContact(client, 1000);
    late.failed(refusal());
    client.lastRequestId = 'req-1';
    await vi.advanceTimersByTimeAsync(5000);
    expect(late.signal.aborted).toBe(false);
  });

  it('a failure that is not a refusal (a 503: something answers) disarms it; a client Nova already answered never arms', async () => {
    const r = new RefusedFirstContact({ clock: systemClock, lastRequestId: undefined }, 1000);
    r.failed(new ServerError({ status: 503, message: 'busy' }));
    r.failed(refusal());
    await vi.advanceTimersByTimeAsync(5000);
    expect(r.signal.aborted).toBe(false);
    const known = new RefusedFirstContact({ clock: systemClock, lastRequestId: 'req-0' }, 1000);
    known.failed(refusal());
    expect(known.pending).toBe(false);
    await vi.advanceTimersByTimeAsync(5000);
    expect(known.signal.aborted).toBe(false);
  });
});
