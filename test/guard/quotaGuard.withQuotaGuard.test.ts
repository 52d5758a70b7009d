/**
 * withQuotaGuard (your own create under the guard), quotaGuard(), and input validation before any
 * request.
 */
import { describe, expect, it } from 'vitest';
import { NovaClient } from '../../src/nova/client.js';
import { ForbiddenError, NotFoundError, QuotaExceededError, ValidationError } from '../../src/errors/index.js';
import { QuotaGuard, quotaGuard, QUOTA_GUARD_DEFAULTS, type QuotaNeedsSpec, type QuotaRetryInfo } from '../../src/guard/quotaGuard.js';
import { QuotaNeverFitsError } from '../../src/guard/errors.js';
import type { Server } from '../../src/core/types.js';
import { body, clientFor, guardFor, limitsAndPosts, posts, quota403, startNova } from './fixtures.js';
import { rejection } from '../helpers.js';

describe('withQuotaGuard', () => {
  it('{ flavorRef, count }: needs from the flavor × count; fn gets a signal; resolves fn\'s value', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    nova.addServer({ flavorId: '3' }); // 4 cores used: 6 free
    const client = clientFor(nova);
    const guard = new QuotaGuard(client, { minDelayMs: 5, baseDelayMs: 5 });
    const seen: { signal: unknown; inFlight: number }[] = [];
    const result = await guard.withQuotaGuard({ flavorRef: '2', count: 3 }, async (signal) => {
      seen.push({ signal, inFlight: (await guard.headroom()).cores.inFlight });
      return 'done';
    });
    expect(result).toBe('done');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.signal).toBeInstanceOf(AbortSignal);
    expect(seen[0]!.inFlight).toBe(6);
    expect(guard.inFlightClaims).toBe(0);
    expect(nova.requestsTo('GET', '/flavors/2')).toHaveLength(1);
  });

  it('flavor × count above the limit → permanent at once, fn never called', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    let calls = 0;
    const err = await rejection(
      guardFor(nova).withQuotaGuard({ flavorRef: '3', count: 3 }, async () => {
        calls++;
      }),
    );
    expect(err).toBeInstanceOf(QuotaNeverFitsError);
    expect((err as QuotaNeverFitsError).permanent).toBe(true);
    expect((err as QuotaNeverFitsError).resources).toEqual([{ name: 'cores', requested: 12, used: 0, allowed: 10 }]);
    expect(calls).toBe(0);
  });

  it('fn rejecting with a quota 403 from its own client.createServer is retried after a fresh /limits read', async () => {
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: quota403('Quota exceeded for cores: Requested 2, but already used 20 of 20 cores') });
    const client = clientFor(nova);
    const retries: QuotaRetryInfo[] = [];
    const guard = guardFor(nova, { onRetry: (r) => void retries.push(r) });
    let calls = 0;
    const server = await guard.withQuotaGuard({ cores: 2, ramMiB: 2048, instances: 1 }, async (signal) => {
      calls++;
      return client.createServer(body(`own-${calls}`), { signal });
    });
    expect(calls).toBe(2);
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'POST /servers', 'GET /limits', 'POST /servers']);
    expect(server.id).toBe(posts(nova)[1]!.serverId);
    expect(retries.map((r) => r.reason)).toEqual(['quota']);
    expect(guard.stats).toMatchObject({ attempts: 2, quota403s: 1, quotaRetries: 1, succeeded: 1 });
  });

  it('a plain Error whose message is a quota message (e.g. from a CLI) is retried; any other error is thrown at once', async () => {
    const nova = await startNova();
    const guard = guardFor(nova);
    let calls = 0;
    const r = await guard.withQuotaGuard({ cores: 1, ramMiB: 512, instances: 1 }, async () => {
      if (++calls === 1) throw new Error('ERROR (Forbidden): Quota exceeded for instances: Requested 1, but already used 10 of 10 instances (HTTP 403)');
      return calls;
    });
    expect(r).toBe(2);

    let other = 0;
    const err = await rejection(
      guard.withQuotaGuard({ cores: 1, ramMiB: 512, instances: 1 }, async () => {
        other++;
        throw new Error('boom');
      }),
    );
    expect(err.message).toBe('boom');
    expect(other).toBe(1);
  });

  it('a policy 403 from fn is thrown at once (fn called once)', async () => {
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: { forbidden: { code: 403, message: "Policy doesn't allow os_compute_api:servers:create to be performed." } } });
    const client = clientFor(nova);
    let calls = 0;
    const err = await rejection(
      guardFor(nova).withQuotaGuard({ flavorRef: '1' }, async (): Promise<Server> => {
        calls++;
        return client.createServer(body('p'));
      }),
    );
    expect(err).toBeInstanceOf(ForbiddenError);
    expect(calls).toBe(1);
    expect(posts(nova)).toHaveLength(1);
  });
});

describe('quotaGuard() and options', () => {
  it('quotaGuard(client, options) is a QuotaGuard with the defaults filled in', async () => {
    const nova = await startNova();
    const g = quotaGuard(clientFor(nova), { maxAttempts: 3 });
    expect(g).toBeInstanceOf(QuotaGuard);
    expect(g.options).toMatchObject({ ...QUOTA_GUARD_DEFAULTS, maxAttempts: 3 });
    expect(QUOTA_GUARD_DEFAULTS).toEqual({
      maxWaitMs: 600000,
      finalReadMs: 5000,
      maxAttempts: 8,
      minDelayMs: 1000,
      baseDelayMs: 2000,
      maxDelayMs: 60000,
      jitter: 0.2,
      onStaleLimits: 'throw',
      waitForActive: true,
      explainShortfall: true,
      activeTimeoutMs: 600000,
      activeIntervalMs: 2000,
      shortLookIntervalMs: 1000,
      lostCreateIntervalMs: 5000,
      lostCreateSearches: 4,
      novaApiTimeoutMs: 180000,
    });
  });

  it.each([
    [{ maxWaitMs: -1 }, 'maxWaitMs must be a non-negative number of milliseconds, got -1'],
    [{ maxAttempts: 0 }, 'maxAttempts must be a positive integer, got 0'],
    [{ lostCreateSearches: 1 }, 'lostCreateSearches must be an integer of at least 2, got 1'],
    [{ lostCreateIntervalMs: -1 }, 'lostCreateIntervalMs must be a non-negative, finite number of milliseconds, got -1'],
    [{ maxAttempts: 1.5 }, 'maxAttempts must be a positive integer, got 1.5'],
    [{ jitter: 1 }, 'jitter must be a number in [0, 1), got 1'],
    [{ minDelayMs: 100, maxDelayMs: 50 }, 'maxDelayMs (50) must not be below minDelayMs (100)'],
    [{ onStaleLimits: 'ignore' }, `onStaleLimits must be 'throw' or 'attempt', got "ignore"`],
    [{ activeTimeoutMs: 0 }, 'activeTimeoutMs must be a positive number of milliseconds, got 0'],
    [{ onWait: 'x' }, 'onWait must be a function'],
  ])('%j → ValidationError', (opts, message) => {
    const client = new NovaClient({ endpoint: 'http://127.0.0.1:1/v2.1', token: 't' });
    expect(() => new QuotaGuard(client, opts as never)).toThrow(new ValidationError(message));
  });

  it('bad body or needs → ValidationError before any request', async () => {
    const nova = await startNova();
    const guard = guardFor(nova);
    await expect(guard.createServer({ name: '', flavorRef: '1' })).rejects.toThrow(ValidationError);
    await expect(guard.createServer({ name: 'x', flavorRef: '' })).rejects.toThrow(ValidationError);
    await expect(guard.createServer({ name: 'x', flavorRef: '1', max_count: 2 })).rejects.toThrow(
      'QuotaGuard.createServer creates one server; body.max_count must be 1 or absent (use withQuotaGuard for multi-create)',
    );
    // A key Nova's create accepts at no microversion (withQuotaGuard's `count`, a misspelled `network`):
    // Nova would answer 400 after the wait for headroom; refused at once, with the closest key.
    await expect(guard.createServer({ ...body('x'), count: 2 } as never)).rejects.toThrow(
      "createServer: body.count (did you mean min_count?) is not a key of Nova's create-server body at any microversion (Nova answers 400)",
    );
    await expect(guard.createServer({ ...body('x'), network: 'auto', bogus: 1 } as never)).rejects.toThrow(
      "createServer: body.network (did you mean networks?), body.bogus are not keys of Nova's create-server body at any microversion (Nova answers 400)",
    );
    await expect(guard.createServer(body('x'), { needs: { cores: -1 } })).rejects.toThrow('needs.cores must be a non-negative number, got -1');
    await expect(guard.withQuotaGuard({ cores: 1 } as never, async () => 1)).rejects.toThrow('needs must give cores, ramMiB and instances');
    await expect(guard.withQuotaGuard({ flavorRef: '1', count: 0 }, async () => 1)).rejects.toThrow('count must be a positive integer, got 0');
    expect(() => new QuotaGuard(undefined as never)).toThrow('QuotaGuard needs a NovaClient');
    // NovaClient.fromEnv() and fromCloud() are async: a forgotten await is named (a new user's first trip).
    expect(() => new QuotaGuard(Promise.resolve({}) as never)).toThrow('QuotaGuard needs a NovaClient, got a Promise: await it (const nova = await NovaClient.fromEnv())');
    expect(nova.requests).toHaveLength(0);
  });

  it('partial needs are completed from the flavor; a flavor URL works as flavorRef', async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    const guard = guardFor(nova, { waitForActive: false });
    await guard.createServer({ ...body('x'), flavorRef: `${nova.endpoint}/flavors/3` }, { needs: { instances: 1 } });
    expect(nova.requestsTo('GET', '/flavors/3')).toHaveLength(1);
    const err = await rejection(guard.createServer(body('y', '1'), { needs: { cores: 5 } }));
    expect((err as QuotaExceededError).permanent).toBe(true);
    expect((err as QuotaExceededError).resources).toEqual([{ name: 'cores', requested: 5, used: 4, allowed: 4 }]);
  });
});

describe('flavorRef is a flavor id, not a name', () => {
  it("a flavor name ('m1.small') is a NotFoundError that says flavorRef is an id and how to find a name's id; no claim, no POST", async () => {
    const nova = await startNova();
    const guard = guardFor(nova);
    let ran = false;
    const viaFn = await rejection(guard.withQuotaGuard({ flavorRef: 'm1.small' }, async () => (ran = true)));
    const viaCreate = await rejection(guard.createServer(body('x', 'm1.small')));
    for (const err of [viaFn, viaCreate]) {
      expect(err).toBeInstanceOf(NotFoundError);
      expect((err as NotFoundError).status).toBe(404);
      expect(err.message).toBe(
        'Flavor m1.small could not be found. flavorRef is a flavor id (or a flavor URL), not a flavor name: "m1.small" names no flavor id of this cloud. ' +
          'Find the id of a name in GET /flavors (`openstack flavor show NAME -f value -c id`; `nova-guard server create --flavor NAME` resolves names itself).',
      );
    }
    expect(ran).toBe(false);
    expect(posts(nova)).toHaveLength(0);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('the types refuse numbers beside flavorRef, as the call does (ValidationError)', async () => {
    const nova = await startNova();
    const guard = guardFor(nova);
    // @ts-expect-error cores beside flavorRef: numbers or a flavor, never both
    await expect(guard.withQuotaGuard({ flavorRef: '1', cores: 4 }, async () => 1)).rejects.toThrow(ValidationError);
    // @ts-expect-error count beside numbers
    await expect(guard.withQuotaGuard({ cores: 1, ramMiB: 1, instances: 1, count: 2 }, async () => 1)).rejects.toThrow(ValidationError);
    const both: QuotaNeedsSpec[] = [{ flavorRef: '1' }, { flavorRef: '1', count: 2 }, { cores: 1, ramMiB: 512, instances: 1 }];
    expect(both).toHaveLength(3);
  });
});

describe('QuotaGuard option limits (found by the adversarial pass)', () => {
  it('refuses delays a Node timer cannot wait (over 2^31-1 ms, or Infinity), before any request', () => {
    const c = new NovaClient({ endpoint: 'http://127.0.0.1:1/v2.1', token: 't' });
    expect(() => new QuotaGuard(c, { minDelayMs: 3e9, maxDelayMs: 3e9, maxWaitMs: 4e9 })).toThrow(ValidationError);
    expect(() => new QuotaGuard(c, { minDelayMs: Number.POSITIVE_INFINITY })).toThrow(/minDelayMs must be a non-negative, finite number/);
    expect(() => new QuotaGuard(c, { activeIntervalMs: 2 ** 31 })).toThrow(/at most 2147483647 ms/);
    expect(() => new QuotaGuard(c, { maxWaitMs: 600000, minDelayMs: 0 })).not.toThrow();
  });
});
