import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerQuotaAuditCommand } from '../../src/cli/quotaAudit.js';
import { ValidationError } from '../../src/index.js';
import { clientFor, startNova } from '../helpers.js';
import { runCli } from './run.js';

const audit = (client: Parameters<typeof runCli>[2], argv: string[]): ReturnType<typeof runCli> => runCli('quota', registerQuotaAuditCommand, client, ['audit', ...argv]);

describe('nova-guard quota audit', () => {
  it('consistent: prints the readings and the count as a table, the verdict, and exits 0', async () => {
    const nova = await startNova();
    nova.addServer({ name: 'ci-1', flavorId: '2' });
    nova.addServer({ name: 'ci-2', flavorId: '1', status: 'BUILD', taskState: 'spawning' });
    const r = await audit(clientFor(nova), []);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe('Quota audit: 2 servers listed (1 page), readings stable');
    expect(lines.slice(2, 6)).toEqual([
      'resource   reported before  counted  reported after  limit  drift  verdict',
      'cores      3                3        3               20     0      consistent',
      'ramMiB     2560             2560     2560            51200  0      consistent',
      'instances  2                2        2               10     0      consistent',
    ]);
    expect(r.stdout).toContain('Servers by status: ACTIVE 1, BUILD 1');
    expect(r.stdout).toContain('Suspects (not ACTIVE or ERROR, or a task in progress): 1');
    expect(r.stdout).toMatch(/ {2}[0-9a-f-]{36} {2}ci-2 {2}BUILD {3}spawning {4}\S+ +yes {6}status BUILD, task_state spawning/);
    expect(r.stdout).toContain('Ghosts (listed, but GET answers 404): none');
    expect(lines[lines.length - 1]).toBe('Verdict: consistent. Reported usage matches the 2 listed servers: 3 cores, 2560 MiB RAM and 2 instances.');
  });

  it('drift with a ghost and usage no server holds: says over-reported, lists the ghost, and exits 5 (an operator must act)', async () => {
    const nova = await startNova();
    const ghost = nova.addServer({ name: 'lost', flavorId: '1' }).id;
    nova.makeGhost(ghost);
    nova.setUsageDrift({ cores: 4 });
    const r = await audit(clientFor(nova), []);
    expect(r.exitCode).toBe(5);
    expect(r.stdout).toContain('cores      5                1        5               20     +4     over-reported');
    expect(r.stdout).toContain('Ghosts (listed, but GET answers 404): 1');
    expect(r.stdout).toContain(`  ${ghost}  lost  ACTIVE  1      512`);
    expect(r.stdout).toMatch(/\nVerdict: over-reported\. Nova reports 4 cores more than the 1 listed server holds \(5 cores reported, 1 counted\)/);
  });

  it('under-reported also exits 3', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '2' });
    nova.setUsageDrift({ instances: -1 });
    const r = await audit(clientFor(nova), ['--no-ghosts']);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toContain('Ghosts (listed, but GET answers 404): not checked');
    expect(r.stdout).toContain('instances  0                1        0               10     -1     under-reported');
  });

  it('--json prints the audit as JSON, unlimited as -1', async () => {
    const nova = await startNova({ maxTotalCores: -1 });
    nova.addServer({ flavorId: '3' });
    const r = await audit(clientFor(nova), ['--json']);
    expect(r.exitCode).toBe(0);
    const json = JSON.parse(r.stdout) as { verdict: string; stable: boolean; resources: Record<string, Record<string, unknown>>; ghosts: unknown[] };
    expect(json.verdict).toBe('consistent');
    expect(json.stable).toBe(true);
    expect(json.resources['cores']).toEqual({ reportedBefore: 4, counted: 4, countedInBuild: 0, countedInGhosts: 0, reportedAfter: 4, limit: -1, drift: 0, verdict: 'consistent' });
    expect(json.ghosts).toEqual([]);
  });

  it('unstable readings: audits again (up to --attempts); still unstable exits 4', async () => {
    const nova = await startNova();
    const a = nova.addServer({ flavorId: '1' }).id;
    nova.addServer({ flavorId: '1' });
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 30 });
    const client = clientFor(nova);
    const running = audit(client, ['--attempts', '1', '--no-ghosts']);
    while (nova.requestsTo('GET', '/servers/detail').length === 0) await new Promise((r) => setTimeout(r, 1));
    nova.destroyServer(a);
    const r = await running;
    expect(r.exitCode).toBe(4);
    expect(r.stdout).toContain('readings CHANGED during the audit');
    expect(r.stdout).toContain('cores      2                1        1               20     ?      inconclusive');
    expect(r.stdout).toMatch(/\nVerdict: inconclusive\. Reported usage changed while the servers were listed \(cores 2 → 1, ramMiB 1024 → 512, instances 2 → 1\)/);
  });

  it('unstable on the first attempt, stable on the second: exits 0', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 30 });
    const running = audit(clientFor(nova), ['--attempts', '2', '--retry-delay', '1ms', '--no-ghosts']);
    while (nova.requestsTo('GET', '/servers/detail').length === 0) await new Promise((r) => setTimeout(r, 1));
    nova.addServer({ flavorId: '1' });
    const r = await running;
    expect(r.stderr).toBe('Reported usage changed during attempt 1 of 2; auditing again in 1ms.');
    expect(r.exitCode).toBe(0);
    expect(nova.requestsTo('GET', '/servers/detail')).toHaveLength(2);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(4);
  });

  it('--retry-delay 1ms waits 1 ms (a bare --retry-delay 1 is refused: a duration needs a unit)', async () => {
    const nova = await startNova();
    await expect(audit(clientFor(nova), ['--attempts', '2', '--retry-delay', '1', '--no-ghosts'])).rejects.toThrow('--retry-delay 1: a duration needs a unit: --retry-delay 1s (seconds) or --retry-delay 1ms');
    nova.addServer({ flavorId: '1' });
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 30 });
    const running = audit(clientFor(nova), ['--attempts', '2', '--retry-delay', '1ms', '--no-ghosts']);
    while (nova.requestsTo('GET', '/servers/detail').length === 0) await new Promise((r) => setTimeout(r, 1));
    nova.addServer({ flavorId: '1' });
    const r = await running;
    expect(r.stderr).toBe('Reported usage changed during attempt 1 of 2; auditing again in 1ms.');
    expect(r.exitCode).toBe(0);
  });

  it('-f value, -f yaml and -c: one row per resource; -f json --noindent: the whole audit on one line', async () => {
    const nova = await startNova({ maxTotalInstances: -1 });
    nova.addServer({ flavorId: '2' });
    nova.setUsageDrift({ cores: 4 });
    const client = clientFor(nova);
    const value = await audit(client, ['-f', 'value', '--no-ghosts']);
    expect(value.exitCode).toBe(5);
    expect(value.stdout).toBe('cores 6 2 6 20 4 over-reported\nramMiB 2048 2048 2048 51200 0 consistent\ninstances 1 1 1 -1 0 consistent');
    const csv = await audit(client, ['-f', 'csv', '--no-ghosts']);
    expect(csv.stdout.split('\n')).toEqual([
      '"Resource","Reported Before","Counted","Reported After","Limit","Drift","Verdict"',
      '"cores",6,2,6,20,4,"over-reported"',
      '"ramMiB",2048,2048,2048,51200,0,"consistent"',
      '"instances",1,1,1,-1,0,"consistent"',
    ]);
    const yaml = await audit(client, ['-f', 'yaml', '-c', 'Resource', '-c', 'Drift', '--no-ghosts']);
    expect(yaml.stdout).toBe('- Drift: 4\n  Resource: cores\n- Drift: 0\n  Resource: ramMiB\n- Drift: 0\n  Resource: instances');
    const json = await audit(client, ['-f', 'json', '--noindent', '--no-ghosts']);
    expect(json.stdout.split('\n')).toHaveLength(1);
    expect((JSON.parse(json.stdout) as { verdict: string; resources: { instances: { limit: number } } })).toMatchObject({ verdict: 'over-reported', resources: { instances: { limit: -1 } } });
    await expect(audit(client, ['-c', 'Nope', '--no-ghosts'])).rejects.toThrow("No recognized column names in ['Nope']");
  });

  it('an error exits 1 with the message on stderr', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/limits', status: 401, body: { error: { code: 401, message: 'The request you have made requires authentication.' } }, times: Infinity });
    const r = await audit(clientFor(nova), []);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^nova-guard quota audit: AuthError: The request you have made requires authentication\. \(GET http:\/\/127\.0\.0\.1:\d+\/v2\.1\/limits, request req-[0-9a-f-]+\)$/,
    );
  });

  it('bad usage throws ValidationError before any request', async () => {
    const nova = await startNova();
    await expect(audit(clientFor(nova), ['--attempts', '0'])).rejects.toThrow(ValidationError);
    await expect(audit(clientFor(nova), ['--retry-delay', '5s5'])).rejects.toThrow('--retry-delay must be a duration with a unit (500ms, 5s, 2m, 1h), got "5s5"');
    await expect(audit(clientFor(nova), ['--timeout', '1e3'])).rejects.toThrow('--timeout must be a positive duration with a unit (500ms, 5s, 2m, 1h), got "1e3"');
    await expect(audit(clientFor(nova), ['--watch', '--interval', '-5'])).rejects.toThrow(/--interval must be a duration/);
    await expect(audit(clientFor(nova), ['--watch', '--interval', '30'])).rejects.toThrow('--interval 30: a duration needs a unit: --interval 30s (seconds) or --interval 30ms (units: 500ms, 5s, 2m, 1h)');
    await expect(audit(clientFor(nova), ['--watch', '-f', 'yaml'])).rejects.toThrow('--watch prints JSON lines: -c and -f table|value|yaml|csv do not apply to it');
    await expect(audit(clientFor(nova), ['--watch', '-c', 'Drift'])).rejects.toThrow(ValidationError);
    await expect(audit(clientFor(nova), ['--ghost-concurrency', 'x'])).rejects.toThrow(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });

  it('an orphaned mapping with consistent numbers: the verdict says consistent, but the exit code is 5 (an operator must act), and the help says so', async () => {
    const nova = await startNova();
    nova.addServer({ name: 'ok', flavorId: '1' });
    const orphan = nova.addServer({ name: 'orphan', flavorId: '2' }).id;
    nova.makeGhost(orphan);
    const r = await audit(clientFor(nova), []);
    expect(r.stdout).toMatch(/\nVerdict: consistent\. /);
    expect(r.stdout).toContain(`An operator must act: orphan-mapping (${orphan}).`);
    expect(r.exitCode).toBe(5);
    const json = await audit(clientFor(nova), ['--json']);
    expect(json.exitCode).toBe(5);
    expect(JSON.parse(json.stdout)).toMatchObject({ verdict: 'consistent', needsOperator: true, findings: [{ kind: 'orphan-mapping', needsOperator: true, serverIds: [orphan] }] });
    const quota = new Command('quota');
    registerQuotaAuditCommand(quota, () => Promise.resolve(clientFor(nova)));
    expect(quota.commands.find((c) => c.name() === 'audit')!.helpInformation()).toMatch(/exit 5 an operator must act \(orphaned mapping, stuck delete or build/);
  });

  it('a server in BUILD past stuckBuildAfterMs (1 h) since its creation is stuck-build: exit 5; a younger one is build-in-flight: exit 0', async () => {
    const nova = await startNova();
    nova.addServer({ name: 'ok', flavorId: '1' });
    const young = nova.addServer({ name: 'young', flavorId: '1', status: 'BUILD', taskState: 'spawning', createdMs: Date.now() - 50 * 60_000 }).id;
    const first = await audit(clientFor(nova), ['--json', '--no-ghosts']);
    expect(JSON.parse(first.stdout)).toMatchObject({ verdict: 'consistent', needsOperator: false, findings: [{ kind: 'build-in-flight', serverIds: [young], transient: true }] });
    expect(first.exitCode).toBe(0);
    const stuck = nova.addServer({ name: 'stuck', flavorId: '1', status: 'BUILD', taskState: 'spawning', createdMs: Date.now() - 2 * 3600_000 }).id;
    const r = await audit(clientFor(nova), ['--json', '--no-ghosts']);
    const a = JSON.parse(r.stdout) as { verdict: string; findings: Array<{ kind: string; serverIds: string[]; needsOperator: boolean; transient: boolean }> };
    expect(a.verdict).toBe('consistent');
    expect(a.findings.map((f) => [f.kind, f.serverIds, f.transient, f.needsOperator])).toEqual([
      ['build-in-flight', [young], true, false],
      ['stuck-build', [stuck], false, true],
    ]);
    expect(r.exitCode).toBe(5);
    // --stuck-build-after moves the bound: a 3 h one keeps both builds in flight.
    const later = await audit(clientFor(nova), ['--json', '--no-ghosts', '--stuck-build-after', '3h']);
    expect((JSON.parse(later.stdout) as { findings: Array<{ kind: string }> }).findings.map((f) => f.kind)).toEqual(['build-in-flight']);
    expect(later.exitCode).toBe(0);
    await expect(audit(clientFor(nova), ['--stuck-build-after', 'soon'])).rejects.toThrow(/--stuck-build-after must be a positive duration/);
  });
});
