/**
 * Findings that need an operator (`needsOperator`), whatever the verdict, and the `stuck-build`
 * finding: a server in BUILD for longer than `stuckBuildAfterMs` since its creation is stuck, not
 * under way.
 */
import { describe, expect, it } from 'vitest';
import { auditQuota, ValidationError } from '../../src/index.js';
import { clientFor, startNova } from '../helpers.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const HOUR = 3_600_000;

describe('audit findings that need an operator', () => {
  it('a BUILD server older than the default stuckBuildAfterMs (1 h) is stuck-build, needs an operator, holds its quota; the verdict stays consistent', async () => {
    const nova = await startNova();
    const stuck = nova.addServer({ flavorId: '2', status: 'BUILD', taskState: 'spawning', createdMs: T0 }).id;
    const young = nova.addServer({ flavorId: '1', status: 'BUILD', taskState: 'scheduling', createdMs: T0 + HOUR + 1 }).id;
    const a = await auditQuota(clientFor(nova), { now: () => T0 + HOUR, checkGhosts: false });
    expect(a.verdict).toBe('consistent');
    expect(a.findings.map((f) => [f.kind, f.serverIds, f.transient, f.needsOperator])).toEqual([
      ['build-in-flight', [young], true, false],
      ['stuck-build', [stuck], false, true],
    ]);
    const f = a.findings.find((x) => x.kind === 'stuck-build')!;
    expect(f.evidence).toContain('in BUILD for longer than 3600 s');
    expect(f.evidence).toContain(`${stuck} spawning`);
    expect(f.operatorCan).toContain('instance_build_timeout');
    expect(a.needsOperator).toBe(true);
    expect(a.summary).toContain(`An operator must act: stuck-build (${stuck}).`);
  });

  it('stuck-build holds what Nova counts: a BUILD server past scheduling counts its flavor (cores, RAM, instance), under either counting model', async () => {
    const nova = await startNova();
    // m1.small: 2 vCPUs, 2048 MiB. Past scheduling (spawning, on a host): its cell row and its allocation exist.
    const stuck = nova.addServer({ flavorId: '2', status: 'BUILD', taskState: 'spawning', createdMs: T0 }).id;
    for (const countingModel of ['legacy', 'placement'] as const) {
      const a = await auditQuota(clientFor(nova), { now: () => T0 + 2 * HOUR, checkGhosts: false, countingModel });
      const f = a.findings.find((x) => x.kind === 'stuck-build')!;
      expect(f.serverIds).toEqual([stuck]);
      // It used to say 0/0/0 (legacy) or 0/0/1 (placement): the lower end of "anything up to its flavor".
      expect(f.holds).toEqual({ cores: 2, ramMiB: 2048, instances: 1 });
      expect(a.servers.find((s) => s.id === stuck)?.holds).toEqual({ cores: 2, ramMiB: 2048, instances: 1 });
      expect(a.verdict).toBe('consistent');
    }
  });

  it('stuckBuildAfterMs moves the bound: 2 h keeps a 1 h build in flight; Infinity never calls a build stuck', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '2', status: 'BUILD', taskState: 'spawning', createdMs: T0 });
    for (const stuckBuildAfterMs of [2 * HOUR, Number.POSITIVE_INFINITY]) {
      const a = await auditQuota(clientFor(nova), { now: () => T0 + HOUR, checkGhosts: false, stuckBuildAfterMs });
      expect(a.findings.map((f) => f.kind)).toEqual(['build-in-flight']);
      expect(a.needsOperator).toBe(false);
    }
    const short = await auditQuota(clientFor(nova), { now: () => T0 + HOUR, checkGhosts: false, stuckBuildAfterMs: 60_000 });
    expect(short.findings.map((f) => f.kind)).toEqual(['stuck-build']);
  });

  it('an orphaned mapping in a project whose numbers match: verdict consistent, needsOperator true', async () => {
    const nova = await startNova();
    const orphan = nova.addServer({ flavorId: '1' }).id;
    nova.makeGhost(orphan);
    const a = await auditQuota(clientFor(nova));
    expect(a.verdict).toBe('consistent');
    expect(a.findings).toEqual([expect.objectContaining({ kind: 'orphan-mapping', needsOperator: true, serverIds: [orphan] })]);
    expect(a.needsOperator).toBe(true);
  });

  it('a project of plain ACTIVE servers needs no operator', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const a = await auditQuota(clientFor(nova));
    expect(a.findings).toEqual([]);
    expect(a.needsOperator).toBe(false);
  });

  it('a bad or misspelt stuckBuildAfterMs is refused before any request', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    await expect(auditQuota(client, { stuckBuildAfterMs: -1 })).rejects.toThrow(/stuckBuildAfterMs must be a positive number of milliseconds/);
    await expect(auditQuota(client, { stuckBuildAfterMS: HOUR } as never)).rejects.toThrow(ValidationError);
    await expect(auditQuota(client, { stuckBuildAfterMS: HOUR } as never)).rejects.toThrow(/did you mean stuckBuildAfterMs\?/);
    expect(nova.requests).toHaveLength(0);
  });
});
