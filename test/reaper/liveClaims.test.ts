/**
 * The reaper and the guard's claims: a tagged server whose claim has ended is reaped under the usual
 * rules, a server that carries a live claim's mark (a create still in flight, a claim tag still
 * watched) is never reaped, whatever its age. FakeNova on fake timers.
 */
import { describe, expect, it, vi } from 'vitest';
import { Reaper, type ReaperOptions } from '../../src/index.js';
import { CLAIM_ID_KEY, CLAIM_TAG_KEY, InProcessQuotaLedger, QuotaGuard } from '../../src/guard/index.js';
import { planPass, emptyReaperState } from '../../src/reaper/plan.js';
import { clientFor, runUntil, settle, startNova, useFakeClock, rejection } from '../helpers.js';
import { body } from '../guard/fixtures.js';

useFakeClock();

const HOUR = 3_600_000;
const FAST: Partial<ReaperOptions> = { deleteIntervalMs: 5, deleteTimeoutMs: 2000, deleteOptions: { jitter: 0, redeleteAfterMs: 0 } };

describe('Reaper liveClaims', () => {
  it('(d) reaps a tagged orphan whose claim ended and leaves the server of a create still in flight (its claim held)', async () => {
    // The guard's server stays in scheduling for a minute: its claim stays held.
    const nova = await startNova({ buildDelayMs: 60_000, schedulingDelayMs: 60_000, deleteDelayMs: 5 });
    const guard = new QuotaGuard(clientFor(nova), { activeIntervalMs: 1000, maxWaitMs: 10_000 });
    const ac = new AbortController();
    const pending = rejection(guard.createServer(body('ci-live'), { signal: ac.signal }));
    await runUntil(() => nova.listServerStates().some((s) => s.name === 'ci-live'));
    const live = nova.listServerStates().find((s) => s.name === 'ci-live')!;
    expect(guard.inFlightClaims).toBe(1);
    const orphan = nova.addServer({ name: 'ci-orphan', createdMs: Date.now() - 2 * HOUR, metadata: { [CLAIM_TAG_KEY]: 'ended-tag', [CLAIM_ID_KEY]: 'ended-claim' } }).id;

    const reaper = new Reaper(clientFor(nova), { metadataKey: CLAIM_TAG_KEY, olderThanMs: 0, liveClaims: () => guard.liveClaims(), ...FAST });
    const first = await settle(reaper.pass());
    expect(first.skipped.find((s) => s.serverId === live.id)?.reason).toBe('claim-live');
    expect(first.candidates.map((c) => c.serverId)).toEqual([orphan]);
    const second = await settle(reaper.pass());
    expect(second.deleted.map((d) => d.serverId)).toEqual([orphan]);
    expect(second.skipped.find((s) => s.serverId === live.id)?.reason).toBe('claim-live');
    expect(nova.requests.filter((r) => r.method === 'DELETE').map((r) => r.serverId)).toEqual([orphan]);

    ac.abort();
    await settle(pending);
  });

  it('planPass: a fleet server carrying a live mark is skipped as claim-live, not a candidate; without the mark it is one', () => {
    const server = { id: 's1', name: 'ci-1', status: 'ACTIVE', created: new Date(Date.now() - HOUR).toISOString(), metadata: { [CLAIM_TAG_KEY]: 'watched' } };
    const plan = (values: string[]) =>
      planPass({ servers: [server], previous: emptyReaperState(), selector: { metadataKey: CLAIM_TAG_KEY }, olderThanMs: 0, dryRun: false, nowMs: Date.now(), live: [{ key: CLAIM_TAG_KEY, values }] });
    expect(plan(['watched']).skipped).toMatchObject([{ serverId: 's1', reason: 'claim-live' }]);
    expect(plan(['watched']).candidates).toEqual([]);
    expect(plan([]).candidates.map((c) => c.serverId)).toEqual(['s1']);
  });

  it('a claim older than its lease is no longer live in the ledger: its server becomes a candidate', async () => {
    const ledger = new InProcessQuotaLedger();
    const claim = await ledger.claimAnyway({ cores: 1, ramMiB: 1, instances: 1 }, 1000);
    const server = { id: 's1', name: 'ci-1', status: 'BUILD', created: new Date(Date.now() - HOUR).toISOString(), metadata: { [CLAIM_ID_KEY]: claim.id } };
    const plan = () =>
      planPass({ servers: [server], previous: emptyReaperState(), selector: { metadataKey: CLAIM_ID_KEY }, olderThanMs: 0, dryRun: false, nowMs: Date.now(), live: [{ key: CLAIM_ID_KEY, values: ledger.liveClaimIds() }] });
    expect(plan().skipped).toMatchObject([{ serverId: 's1', reason: 'claim-live' }]);
    await vi.advanceTimersByTimeAsync(1001);
    expect(ledger.liveClaimIds()).toEqual([]);
    expect(plan().candidates.map((c) => c.serverId)).toEqual(['s1']);
  });
});
