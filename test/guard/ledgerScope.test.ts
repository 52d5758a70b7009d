/**
 * One ledger serves one endpoint and project: a ledger made for (or first used by) project A is
 * refused by a guard of project B with a ValidationError, before any request, instead of mixing
 * A's claims and readings into B's headroom (field case: 16 quota 403s, 2 of 4 creates failed).
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/index.js';
import { InProcessQuotaLedger, QuotaGuard } from '../../src/guard/index.js';
import { NovaClient } from '../../src/nova/client.js';
import type { FakeNova } from '../../src/testing/index.js';
import { FAST, body, clientFor, startNova } from './fixtures.js';
import { rejection } from '../helpers.js';

/** A client of `nova` whose endpoint is spelt `endpoint`. */
function clientAt(nova: FakeNova, endpoint: string): NovaClient {
  return new NovaClient({ endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: nova.adapter, retry: { retries: 0 } });
}

describe('InProcessQuotaLedger scope', () => {
  it('a ledger first used by a guard of project A refuses a guard of project B at its first call, before any request', async () => {
    const a = await startNova({ projectId: 'proj-a' });
    const b = await startNova({ projectId: 'proj-b' });
    const ledger = new InProcessQuotaLedger();
    const guardA = new QuotaGuard(clientFor(a), { ...FAST, ledger });
    const guardB = new QuotaGuard(clientFor(b), { ...FAST, ledger });
    await guardA.createServer(body('a-1'));
    expect(ledger.scope).toEqual({ endpoint: a.endpoint, projectId: 'proj-a' });
    const err = await rejection(guardB.createServer(body('b-1')));
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain('"proj-a"');
    expect((err as Error).message).toContain('"proj-b"');
    expect(b.requests).toEqual([]);
    // headroom() and withQuotaGuard are refused the same way, still without a request.
    await expect(guardB.headroom()).rejects.toBeInstanceOf(ValidationError);
    await expect(guardB.withQuotaGuard({ cores: 1, ramMiB: 1, instances: 1 }, async () => 1)).rejects.toBeInstanceOf(ValidationError);
    expect(b.requests).toEqual([]);
    // Once bound, a new guard of project B is refused at construction.
    expect(() => new QuotaGuard(clientFor(b), { ...FAST, ledger })).toThrow(ValidationError);
  });

  it('a ledger made for project A refuses a guard of project B at construction', async () => {
    const a = await startNova({ projectId: 'proj-a' });
    const b = await startNova({ projectId: 'proj-b' });
    const ledger = new InProcessQuotaLedger({ endpoint: a.endpoint, projectId: 'proj-a' });
    expect(() => new QuotaGuard(clientFor(b), { ...FAST, ledger })).toThrow(ValidationError);
    expect(() => new QuotaGuard(clientFor(b), { ...FAST, ledger })).toThrow(/serves project "proj-a" on .*, but the guard's client is for project "proj-b"/);
  });

  it('the same project on another endpoint is refused at the first call, before any request', async () => {
    const a = await startNova({ projectId: 'same' });
    const b = await startNova({ projectId: 'same' });
    const ledger = new InProcessQuotaLedger({ endpoint: a.endpoint, projectId: 'same' });
    const guard = new QuotaGuard(clientFor(b), { ...FAST, ledger });
    await expect(guard.createServer(body('b-1'))).rejects.toThrow(/on http:\/\/.*, but the guard's client is for project "same" on http/);
    expect(b.requests).toEqual([]);
  });

  it('another spelling of the same endpoint (host case, trailing slash, /<project> suffix) is accepted', async () => {
    const nova = await startNova({ projectId: 'p1' });
    const ledger = new InProcessQuotaLedger({ endpoint: `${nova.endpoint}/p1/`, projectId: 'p1' });
    const guard = new QuotaGuard(clientAt(nova, nova.endpoint.toUpperCase().replace('/V2.1', '/v2.1') + '/'), { ...FAST, ledger });
    const server = await guard.createServer(body('ok-1'));
    expect(server.status).toBe('ACTIVE');
  });

  it('endpoint and projectId: both (the scope, normalised) or neither', () => {
    expect(new InProcessQuotaLedger({ endpoint: 'HTTP://Nova.Example:80/v2.1/', projectId: 'p' }).scope).toEqual({ endpoint: 'http://nova.example/v2.1', projectId: 'p' });
    expect(new InProcessQuotaLedger().scope).toBeUndefined();
    expect(() => new InProcessQuotaLedger({ endpoint: 'http://nova.example/v2.1' })).toThrow(/both endpoint and projectId/);
    expect(() => new InProcessQuotaLedger({ projectId: 'p' })).toThrow(/both endpoint and projectId/);
  });
});
