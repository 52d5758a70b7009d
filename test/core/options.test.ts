/**
 * The one options mechanism (src/core/options.ts): a misspelt safety flag of a destructive call
 * deletes nothing, the "did you mean" hint finds the name meant (case, unit, prefix, substring, edit
 * distance), and nested option objects are checked the same way.
 */
import { describe, expect, it } from 'vitest';
import { NovaClient, QuotaGuard, Reaper, ValidationError, auditQuota, deleteServer, deleteServers, reapServers, waitForActive, watchQuota } from '../../src/index.js';
import { FakeKeystone, FakeNova } from '../../src/testing/index.js';
import { closestOption } from '../../src/core/options.js';
import { clientFor, rejection, startNova } from '../helpers.js';

const HOUR = 3_600_000;

/** A fake with one fleet server created two hours ago, and a client on it. */
async function fleet(): Promise<{ nova: FakeNova; client: NovaClient; id: string }> {
  const nova = await startNova();
  const id = nova.addServer({ name: 'x-1', createdMs: Date.now() - 2 * HOUR }).id;
  return { nova, client: clientFor(nova), id };
}

describe('a misspelt option of a destructive call deletes nothing', () => {
  it('reapServers({ dryrun: true }) is refused with "did you mean dryRun", before any request, and the server is still there', async () => {
    const { nova, client, id } = await fleet();
    const e = await rejection(reapServers(client, { prefix: 'x-', olderThanMs: HOUR, passIntervalMs: 0, dryrun: true } as never));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toContain('unknown option "dryrun" (did you mean dryRun?)');
    expect(nova.requests).toEqual([]);
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
  });

  it('new Reaper({ dry_run: true }) and reaper.run({ interval: ... }) are refused, naming dryRun and intervalMs', () => {
    const client = new NovaClient({ endpoint: 'http://nova.invalid/v2.1', token: 't' });
    expect(() => new Reaper(client, { prefix: 'x-', olderThanMs: HOUR, dry_run: true } as never)).toThrow(/unknown option "dry_run" \(did you mean dryRun\?\)/);
    const reaper = new Reaper(client, { prefix: 'x-', olderThanMs: HOUR });
    return expect(reaper.run({ interval: 1000, signal: AbortSignal.abort() } as never)).rejects.toThrow(/unknown option "interval" \(did you mean intervalMs\?\)/);
  });

  it('a dryRun that is not a boolean (0, "yes") is refused: a falsy 0 would have deleted', async () => {
    const { nova, client, id } = await fleet();
    for (const dryRun of [0, 'yes']) {
      const e = await rejection(reapServers(client, { prefix: 'x-', olderThanMs: HOUR, passIntervalMs: 0, dryRun } as never));
      expect(e).toBeInstanceOf(ValidationError);
      expect(e.message).toContain('dryRun must be a boolean');
    }
    expect(nova.requestsTo('DELETE', /servers/)).toEqual([]);
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
  });

  it("the reaper's deleteOptions refuse the four options the reaper sets itself (wait, timeoutMs, intervalMs, signal)", () => {
    const client = new NovaClient({ endpoint: 'http://nova.invalid/v2.1', token: 't' });
    expect(() => new Reaper(client, { prefix: 'x-', olderThanMs: HOUR, deleteOptions: { wait: false } as never })).toThrow(/unknown option "wait"/);
  });

  it('deleteServer({ redelete: 1000 }) and deleteServers({ force_soft_deleted: true }) delete nothing and name the option meant', async () => {
    const { nova, client, id } = await fleet();
    await expect(deleteServer(client, id, { redelete: 1000 } as never)).rejects.toThrow(/unknown option "redelete" \(did you mean redeleteAfterMs\?\)/);
    await expect(deleteServers(client, [id], { force_soft_deleted: true } as never)).rejects.toThrow(/unknown option "force_soft_deleted" \(did you mean forceSoftDeleted\?\)/);
    expect(nova.requests).toEqual([]);
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
  });
});

describe('"did you mean" finds the name meant', () => {
  it('withQuotaGuard({ ram }) is refused with "did you mean ramMiB", and createServer\'s needs too', async () => {
    const { nova, client } = await fleet();
    const guard = new QuotaGuard(client);
    await expect(guard.withQuotaGuard({ cores: 1, ram: 512, instances: 1 } as never, () => Promise.resolve(1))).rejects.toThrow(/unknown option "ram" \(did you mean ramMiB\?\)/);
    await expect(guard.createServer({ name: 'a', flavorRef: '1' }, { needs: { ram: 512 } as never })).rejects.toThrow(/unknown option "ram" \(did you mean ramMiB\?\)/);
    expect(nova.requests).toEqual([]);
  });

  it.each([
    ['ram', ['cores', 'ramMiB', 'instances'], 'ramMiB'],
    ['dryrun', ['dryRun', 'timeoutMs'], 'dryRun'],
    ['timeout', ['intervalMs', 'timeoutMs', 'requestTimeoutMs'], 'timeoutMs'],
    ['timeout_seconds', ['intervalMs', 'timeoutMs'], 'timeoutMs'],
    ['interval', ['intervalMs', 'confirmIntervalMs'], 'intervalMs'],
    ['passInterval', ['intervalMs', 'passIntervalMs'], 'passIntervalMs'],
    ['wiat', ['wait', 'jitter'], 'wait'],
    ['concurency', ['concurrency', 'onSettled'], 'concurrency'],
    ['redelete', ['redeleteAfterMs', 'deleteRetries'], 'redeleteAfterMs'],
  ] as const)('%s -> %s', (key, known, meant) => {
    expect(closestOption(key, known)).toBe(meant);
  });

  it('a name close to nothing gets no hint, only the list of known options', () => {
    expect(closestOption('bogusOptionName', ['signal', 'timeoutMs'])).toBeUndefined();
  });
});

describe('options the library used to ignore are checked, nested ones too', () => {
  it('auditQuota, watchQuota and waitForActive refuse a misspelt option before any request', async () => {
    const { nova, client, id } = await fleet();
    await expect(auditQuota(client, { checkGhost: false } as never)).rejects.toThrow(/unknown option "checkGhost" \(did you mean checkGhosts\?\)/);
    await expect(watchQuota(client, { sample: 2 } as never)).rejects.toThrow(/unknown option "sample" \(did you mean samples\?\)/);
    await expect(waitForActive(client, id, { timeout: 5 } as never)).rejects.toThrow(/unknown option "timeout" \(did you mean timeoutMs\?\)/);
    expect(nova.requests).toEqual([]);
  });

  it('values are checked too, before any request: types, ranges and units (waitForActive jitter 2, watchQuota samples 0, auditQuota countingModel, a Reaper concurrency of 0)', async () => {
    const { nova, client, id } = await fleet();
    await expect(waitForActive(client, id, { jitter: 2 })).rejects.toThrow('jitter must be a number in [0, 1), got 2');
    await expect(waitForActive(client, id, { intervalMs: -5 })).rejects.toThrow('intervalMs must be a positive, finite number of milliseconds, got -5');
    await expect(watchQuota(client, { samples: 0 })).rejects.toThrow('samples must be a positive integer, got 0');
    await expect(auditQuota(client, { countingModel: 'cells' } as never)).rejects.toThrow(`countingModel must be 'legacy', 'placement' or 'unified-limits', got "cells"`);
    expect(() => new Reaper(client, { prefix: 'x-', olderThanMs: HOUR, concurrency: 0 })).toThrow('concurrency must be a positive integer, got 0');
    expect(nova.requests).toEqual([]);
  });

  it("FakeNova.start checks its nested flavors, FakeKeystone.start its users, and a request's retry policy its names", async () => {
    await expect(FakeNova.start({ flavors: [{ id: '9', name: 'x', vcpus: 1, ramMiB: 512, disk: 1 }] } as never)).rejects.toThrow(/flavors\[0\]: unknown option "ramMiB" \(did you mean ram\?\)/);
    await expect(FakeKeystone.start({ users: [{ name: 'u', pasword: 'p' }] } as never)).rejects.toThrow(/users\[0\]: unknown option "pasword" \(did you mean password\?\)/);
    const { nova, client } = await fleet();
    await expect(client.getLimits({ retry: { retires: 1 } } as never)).rejects.toThrow(/retry: unknown option "retires" \(did you mean retries\?\)/);
    expect(nova.requests).toEqual([]);
  });

  it("a request method's options cannot carry a method or path that would change the request", async () => {
    const { nova, client, id } = await fleet();
    await expect(client.getServer(id, { method: 'DELETE' } as never)).rejects.toThrow(/getServer options: unknown option "method"/);
    expect(nova.requests).toEqual([]);
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
  });
});
