/**
 * A RedisQuotaLedger is bound to one endpoint and project: a guard of another project is refused
 * with a ValidationError at construction, a guard of another endpoint at its first call, before any
 * request; two spellings of one endpoint share one ledger (one set of keys); `liveClaimIds()` lists
 * the live claims of the scope for a reaper. Real redis-server.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { ValidationError } from '../../src/errors/index.js';
import { QuotaGuard } from '../../src/guard/index.js';
import { ledgerKeys } from '../../src/redis/options.js';
import { afterThisTest } from '../cleanup.js';
import { FAST, body, clientFor, startNova } from '../guard/fixtures.js';
import { haveRedis, skipReason, useRedisServer } from './support.js';

describe.skipIf(!haveRedis)(`RedisQuotaLedger scope${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();

  function ledgerFor(endpoint: string, projectId: string): RedisQuotaLedger {
    const l = new RedisQuotaLedger({ url: server.url, endpoint, projectId, holder: 'scope-test' });
    afterThisTest(() => l.close());
    return l;
  }

  it('a ledger made for project A is refused by a guard of project B at construction; A\'s guard creates', async () => {
    const a = await startNova({ projectId: 'proj-a' });
    const b = await startNova({ projectId: 'proj-b' });
    const ledger = ledgerFor(a.endpoint, 'proj-a');
    expect(() => new QuotaGuard(clientFor(b), { ...FAST, ledger })).toThrow(ValidationError);
    expect(() => new QuotaGuard(clientFor(b), { ...FAST, ledger })).toThrow(/redis quota ledger serves project "proj-a" on http:\/\/127\.0\.0\.1:\d+\/v2\.1, but the guard's client is for project "proj-b"/);
    expect(b.requests).toEqual([]);
    const server1 = await new QuotaGuard(clientFor(a), { ...FAST, ledger }).createServer(body('a-1'));
    expect(server1.status).toBe('ACTIVE');
  });

  it('the same project id on another endpoint is refused at the first call, before any request', async () => {
    const a = await startNova({ projectId: 'shared' });
    const b = await startNova({ projectId: 'shared' });
    const ledger = ledgerFor(a.endpoint, 'shared');
    const guard = new QuotaGuard(clientFor(b), { ...FAST, ledger });
    await expect(guard.createServer(body('b-1'))).rejects.toBeInstanceOf(ValidationError);
    await expect(guard.headroom()).rejects.toBeInstanceOf(ValidationError);
    expect(b.requests).toEqual([]);
  });

  it('two spellings of one endpoint (host case, default port, trailing slash) name the same keys and are accepted', async () => {
    expect(ledgerKeys('nova-guard:', 'HTTP://Nova.Example:80/v2.1/', 'p')).toEqual(ledgerKeys('nova-guard:', 'http://nova.example/v2.1', 'p'));
    const nova = await startNova({ projectId: 'p1' });
    const ledger = ledgerFor(`${nova.endpoint.replace('http://', 'HTTP://')}/`, 'p1');
    const created = await new QuotaGuard(clientFor(nova), { ...FAST, ledger }).createServer(body('ok-1'));
    expect(created.status).toBe('ACTIVE');
    const r = new Redis(server.url);
    afterThisTest(async () => void (await r.quit()));
    expect(await r.exists(ledgerKeys('nova-guard:', nova.endpoint, 'p1').limits)).toBe(1);
  });

  it('liveClaimIds: the claims of every holder of the scope, neither released nor past their lease', async () => {
    const a = ledgerFor('http://nova.example/v2.1', 'live');
    const b = ledgerFor('http://nova.example/v2.1', 'live');
    const needs = { cores: 1, ramMiB: 1, instances: 1 };
    const held = await a.claimAnyway(needs, 60_000);
    const released = await b.claimAnyway(needs, 60_000);
    const short = await b.claimAnyway(needs, 50);
    await b.release(released, 'counted');
    await new Promise((r) => setTimeout(r, 120));
    expect(await b.liveClaimIds()).toEqual([held.id]);
    expect(await a.liveClaimIds()).toEqual([held.id]);
    expect(short.id).not.toBe(held.id);
  });
});
