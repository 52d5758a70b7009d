/** `quota audit --watch`: JSON lines per sample and a summary; exit 5 when a finding that needs an operator persists, 3 when drift does. */
import { describe, expect, it } from 'vitest';
import { registerQuotaAuditCommand } from '../../src/cli/quotaAudit.js';
import { ValidationError } from '../../src/index.js';
import { clientFor, startNova } from '../helpers.js';
import { runCli } from './run.js';

const audit = (client: Parameters<typeof runCli>[2], argv: string[]): ReturnType<typeof runCli> => runCli('quota', registerQuotaAuditCommand, client, ['audit', ...argv]);

describe('nova-guard quota audit --watch', () => {
  it('prints one JSON line per sample and a summary; persistent stale usage (an operator must act) exits 5', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.causes.staleUsage({ cores: 2 });
    const r = await audit(clientFor(nova), ['--watch', '--interval', '10ms', '--samples', '3', '--no-ghosts']);
    const lines = r.stdout.split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l['type'])).toEqual(['sample', 'sample', 'sample', 'summary']);
    expect(lines.slice(0, 3).map((l) => (l['drift'] as Record<string, number>)['cores'])).toEqual([2, 2, 2]);
    expect(lines[3]).toMatchObject({ trend: { cores: 'persistent', ramMiB: 'none', instances: 'none' }, persistent: [{ kind: 'stale-usage' }] });
    expect(r.exitCode).toBe(5);
  });

  it('no drift exits 0; --model is passed through; a bad --model is refused', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const r = await audit(clientFor(nova), ['--watch', '--interval', '10ms', '--samples', '2', '--model', 'placement']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout.split('\n')[2]!)).toMatchObject({ type: 'summary', trend: { cores: 'none', ramMiB: 'none', instances: 'none' } });
    const j = await audit(clientFor(nova), ['--json', '--model', 'placement']);
    expect((JSON.parse(j.stdout) as { countingModel: unknown }).countingModel).toEqual({ model: 'placement', basis: 'given', misfits: { legacy: 0, placement: 0 } });
    await expect(audit(clientFor(nova), ['--model', 'magic'])).rejects.toBeInstanceOf(ValidationError);
  });

  it('an orphaned mapping in every sample, numbers consistent: no drift, but exit 5 (an operator must act)', async () => {
    const nova = await startNova();
    const orphan = nova.addServer({ flavorId: '1' }).id;
    nova.makeGhost(orphan);
    const r = await audit(clientFor(nova), ['--watch', '--interval', '10ms', '--samples', '2']);
    const summary = JSON.parse(r.stdout.split('\n')[2]!) as Record<string, unknown>;
    expect(summary).toMatchObject({ type: 'summary', trend: { cores: 'none', ramMiB: 'none', instances: 'none' }, persistent: [{ kind: 'orphan-mapping', serverId: orphan }] });
    expect(r.exitCode).toBe(5);
  });
});
