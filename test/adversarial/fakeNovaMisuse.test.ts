/**
 * FakeNova misuse: a fault spec the fake could not apply is refused at inject() (it used to throw
 * inside the request handler: an uncaught exception in the test process and a hung request), bad
 * seeds are refused, close() is idempotent.
 */
import { describe, expect, it } from 'vitest';
import { ServerError, ValidationError } from '../../src/index.js';
import { FakeKeystone, FakeNova, type FaultSpec } from '../../src/testing/index.js';
import { clientFor, startNova } from '../helpers.js';

describe('FakeNova.inject refuses specs it cannot apply', () => {
  it.each([
    [{ method: 'GET', status: 500 }, 'FaultSpec.path must be a string or a RegExp (got undefined)'],
    [{ path: '/limits', method: 5, status: 500 }, 'FaultSpec.method must be a string (got 5)'],
    [{ path: '/limits', status: 'abc' }, 'FaultSpec.status must be an integer from 100 to 999 (got abc)'],
    [{ path: '/limits', status: 99 }, 'FaultSpec.status must be an integer from 100 to 999 (got 99)'],
    [{ path: '/limits', status: 500, times: 1.5 }, 'FaultSpec.times must be a positive integer or Infinity (got 1.5)'],
    [{ path: '/limits', status: 500, times: 0 }, 'FaultSpec.times must be a positive integer or Infinity (got 0)'],
    [{ path: '/limits', status: 500, delayMs: Number.NaN }, 'FaultSpec.delayMs must be a finite number from 0 to 2147483647 (got NaN)'],
    [{ path: '/limits', status: 500, delayMs: 3e9 }, 'FaultSpec.delayMs must be a finite number from 0 to 2147483647 (got 3000000000)'],
    [{ path: '/limits', hang: 'yes' }, 'FaultSpec.hang must be a boolean (got yes)'],
    [{ path: '/limits', status: 500, headers: { 'Bad Header': 'x' } }, /^FaultSpec\.headers: "Bad Header" is not a valid header/],
    [{ path: '/limits', status: 500, headers: { 'X-A': 'a\nb' } }, /^FaultSpec\.headers: "X-A" is not a valid header/],
    [{ path: '/limits', status: 500, headers: { 'X-A': 5 } }, /^FaultSpec\.headers: "X-A" is not a valid header \(not a string\)/],
  ])('%j', async (spec, message) => {
    const nova = await startNova();
    expect(() => nova.inject(spec as unknown as FaultSpec)).toThrow(ValidationError);
    expect(() => nova.inject(spec as unknown as FaultSpec)).toThrow(message);
    // Nothing was queued: the next request is answered normally.
    expect((await clientFor(nova).getLimits()).absolute.maxTotalCores).toBe(20);
  });

  it('a valid fault with custom headers still applies, once', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/limits', status: 503, headers: { 'Retry-After': '0', 'X-Custom': 'yes' } });
    const client = clientFor(nova, { retry: { retries: 0 } });
    await expect(client.getLimits()).rejects.toBeInstanceOf(ServerError);
    expect((await client.getLimits()).absolute.maxTotalCores).toBe(20);
  });
});

describe('FakeNova seeds and options', () => {
  it.each(['', 'a/b', 'a?b', '..'])('addServer({ id: %j }) is refused: no client could ask for it', async (id) => {
    const nova = await startNova();
    expect(() => nova.addServer({ id })).toThrow(ValidationError);
    expect(nova.listServerStates()).toEqual([]);
  });

  it('setUsageDrift refuses NaN (it would reach /limits)', async () => {
    const nova = await startNova();
    expect(() => nova.setUsageDrift({ cores: Number.NaN })).toThrow('FakeNova.setUsageDrift: cores must be an integer, got NaN');
    expect(nova.reportedUsage()).toEqual({ cores: 0, instances: 0, ramMiB: 0, ram: 0 });
  });

  it.each([70000, 1.5, -1])('port %s is a ValidationError, not a RangeError from node:net', async (port) => {
    await expect(FakeNova.start({ port })).rejects.toBeInstanceOf(ValidationError);
  });

  it('close() twice resolves both times and leaves no timer', async () => {
    const nova = await FakeNova.start({ deleteDelayMs: 10_000 });
    const id = nova.addServer().id;
    await clientFor(nova).requestDelete(id);
    expect(nova.pendingTimers()).toBe(1);
    await nova.close();
    await nova.close();
    expect(nova.pendingTimers()).toBe(0);
  });
});

describe('FakeKeystone options', () => {
  it.each([[{ tokenLifetimeMs: Number.NaN }], [{ tokenLifetimeMs: -1 }], [{ tokenLifetimeMs: Number.POSITIVE_INFINITY }], [{ port: 70000 }]])(
    '%j is a ValidationError at start',
    async (options) => {
      await expect(FakeKeystone.start(options)).rejects.toBeInstanceOf(ValidationError);
    },
  );
});
