/**
 * One spelling of RAM in FakeNova's public shapes (issue 32, item 7): `usage()`, `limits()`,
 * `reportedUsage()` and `quotaRecord().limits` say `ramMiB`, as the guard's needs and claims and the
 * quota audit do; `ram` stays as a deprecated alias with the same number, and the setters take
 * either (both with different values is a ValidationError).
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/index.js';
import { startNova } from '../helpers.js';

describe('FakeNova RAM as ramMiB', () => {
  it('usage(), limits(), reportedUsage() and quotaRecord().limits read ramMiB (and ram, the same number)', async () => {
    const nova = await startNova({ maxTotalRAMSize: 4096 });
    nova.addServer({ flavorId: '2' }); // m1.small: 2 vcpus, 2048 MiB
    expect(nova.usage()).toMatchObject({ cores: 2, instances: 1, ramMiB: 2048 });
    expect(nova.usage().ram).toBe(nova.usage().ramMiB);
    expect(nova.limits()).toMatchObject({ ramMiB: 4096, ram: 4096 });
    nova.setUsageDrift({ ramMiB: 512 });
    expect(nova.reportedUsage()).toMatchObject({ ramMiB: 2560, ram: 2560 });
    expect(nova.quotaRecord().limits).toMatchObject({ ramMiB: 4096 });
    expect(JSON.parse(JSON.stringify(nova.usage()))).toEqual({ cores: 2, instances: 1, ramMiB: 2048, ram: 2048 });
  });

  it('setQuota, setUsageDrift and the causes take ramMiB, or ram (the old name); both differing is refused', async () => {
    const nova = await startNova();
    nova.setQuota({ ramMiB: 1024 });
    expect(nova.limits().ramMiB).toBe(1024);
    nova.setQuota({ ram: 2048 });
    expect(nova.limits().ramMiB).toBe(2048);
    nova.setQuota({ ramMiB: 3072, ram: 3072 });
    expect(nova.limits().ramMiB).toBe(3072);
    expect(() => nova.setQuota({ ramMiB: 1024, ram: 2048 })).toThrow(ValidationError);
    expect(() => nova.setQuota({ ramMiB: 1024, ram: 2048 })).toThrow('FakeNova.setQuota: ramMiB (1024) and its old name ram (2048) differ: give ramMiB only');
    expect(() => nova.setUsageDrift({ ramMiB: 1, ram: 2 })).toThrow(ValidationError);
    nova.causes.staleUsage({ ramMiB: 100 });
    expect(nova.reportedUsage().ramMiB).toBe(100);
    nova.causes.countUsageFromPlacement(true);
    nova.causes.leakAllocation({ ramMiB: 64 });
    expect(nova.causes.placementUsages().MEMORY_MB).toBe(64);
    expect(() => nova.setQuota({ ramMb: 1 } as never)).toThrow(/ramMb/);
  });
});

describe('FakeNova server views say ramMiB', () => {
  it('addServer(), getServerState() and listServerStates() carry ramMiB, and ram (deprecated) with the same number', async () => {
    const nova = await startNova();
    const added = nova.addServer({ flavorId: '2' }); // 2048 MiB
    expect(added).toMatchObject({ vcpus: 2, ramMiB: 2048, ram: 2048 });
    expect(nova.getServerState(added.id)).toMatchObject({ ramMiB: 2048 });
    expect(nova.listServerStates().map((s) => s.ramMiB)).toEqual([2048]);
  });
});
