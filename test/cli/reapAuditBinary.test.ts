// `server reap` and `quota audit` with `openstack` habits through the built binary against FakeNova
// over HTTP: -f json|value|yaml, -c, --noindent, --json as -f json, units in every duration flag,
// and the refusal of a bare number (--older-than 2 would have reaped almost every server).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova } from '../helpers.js';
import { ensureBuilt, runPiped } from './binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

const envOf = (nova: FakeNova): Record<string, string> => ({ OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` });
const HOUR = 3_600_000;

/** Two leaked fleet servers (3 h old), one young fleet server, one server of another fleet. */
function seed(nova: FakeNova): { old: string[]; young: string } {
  const created = Date.now() - 3 * HOUR;
  const old = [nova.addServer({ name: 'adt-1', createdMs: created }).id, nova.addServer({ name: 'adt-2', createdMs: created }).id];
  const young = nova.addServer({ name: 'adt-new' }).id;
  nova.addServer({ name: 'db', createdMs: created });
  return { old, young };
}

describe('server reap: output formats', () => {
  it('-f json is the whole result (as --json); --pass-interval, --interval, --delete-timeout, --timeout with units', async () => {
    const nova = await startNova({ deleteDelayMs: 0 });
    const { old } = seed(nova);
    const r = await runPiped(
      ['server', 'reap', '--prefix', 'adt-', '--older-than', '2h', '--pass-interval', '10ms', '--interval', '20ms', '--delete-timeout', '30s', '--timeout', '1m', '-f', 'json'],
      envOf(nova),
    );
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout) as { dryRun: boolean; deleted: Array<{ serverId: string; ageMs: number }>; failed: unknown[]; skipped: Array<{ reason: string }> };
    expect(json.dryRun).toBe(false);
    expect(json.deleted.map((d) => d.serverId).sort()).toEqual([...old].sort());
    expect(json.deleted[0]!.ageMs).toBeGreaterThanOrEqual(3 * HOUR);
    expect(json.failed).toEqual([]);
    expect(json.skipped.map((s) => s.reason)).toEqual(['too-young']);
    expect(r.stdout).toContain('\n  "dryRun": false');
    expect(nova.requestsTo('DELETE', /^\/servers\//).map((q) => q.serverId).sort()).toEqual([...old].sort());
  });

  it('--dry-run -f value -c ID -c Result: one line per server; -f yaml -c; -f json --noindent -c', async () => {
    const nova = await startNova();
    const { old, young } = seed(nova);
    const base = ['server', 'reap', '--prefix', 'adt-', '--older-than', '2h', '--pass-interval', '10ms', '--dry-run'];
    const value = await runPiped([...base, '-f', 'value', '-c', 'ID', '-c', 'Result'], envOf(nova));
    expect(value.code).toBe(0);
    expect(value.stdout.trimEnd().split('\n').sort()).toEqual([...old.map((id) => `${id} would-delete`), `${young} skipped`].sort());
    const yaml = await runPiped([...base, '-f', 'yaml', '-c', 'Name', '-c', 'Reason'], envOf(nova));
    expect(yaml.stdout.trimEnd().split('\n').sort()).toEqual(['- Name: adt-1', '- Name: adt-2', '- Name: adt-new', '  Reason: dry-run', '  Reason: dry-run', '  Reason: too-young'].sort());
    // The flat view's Reason of a would-delete is the result's reason (`-f json`: "reason": "dry-run").
    const reasons = await runPiped([...base, '-f', 'value', '-c', 'Result', '-c', 'Reason'], envOf(nova));
    expect(reasons.stdout.trimEnd().split('\n').sort()).toEqual(['skipped too-young', 'would-delete dry-run', 'would-delete dry-run']);
    const json = await runPiped([...base, '-f', 'json', '--noindent', '-c', 'Name', '-c', 'Age'], envOf(nova));
    expect(json.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(JSON.parse(json.stdout)).toContainEqual({ Name: 'adt-1', Age: '3h' });
    const table = await runPiped([...base, '-c', 'Name', '-c', 'Result'], envOf(nova));
    expect(table.stdout.split('\n')[1]).toMatch(/^\| Name +\| Result +\|$/);
    expect(table.stdout).toMatch(/^\| adt-1 +\| would-delete \|$/m);
    expect(nova.requests.filter((q) => q.method !== 'GET')).toHaveLength(0);
  });

  it('-c naming no column exits 1 naming the columns', async () => {
    const nova = await startNova();
    const r = await runPiped(['server', 'reap', '--prefix', 'adt-', '--older-than', '2h', '--pass-interval', '10ms', '--dry-run', '-c', 'Nope'], envOf(nova));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("nova-guard: No recognized column names in ['Nope']. Recognized columns are ('ID', 'Name', 'Result', 'Reason', 'Age', 'Detail').");
  });
});

describe('server reap: the --older-than safety', () => {
  it.each(['2', '999', '0', '10900000'])('a bare --older-than %s is refused before any request (exit 2), suggesting a unit', async (value) => {
    const nova = await startNova();
    seed(nova);
    const r = await runPiped(['server', 'reap', '--prefix', 'adt-', '--older-than', value], envOf(nova));
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr.trimEnd()).toBe(`nova-guard: --older-than ${value}: a duration needs a unit: --older-than ${value}s (seconds) or --older-than ${value}ms (units: 500ms, 5s, 2m, 1h)`);
    expect(nova.requests).toHaveLength(0);
  });

  it('--older-than 10900s (3 h 1 m 40 s) keeps the 3 h old servers', async () => {
    const nova = await startNova();
    seed(nova);
    const r = await runPiped(['server', 'reap', '--prefix', 'adt-', '--older-than', '10900s', '--pass-interval', '10ms', '--dry-run', '-f', 'value', '-c', 'Result'], envOf(nova));
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split('\n')).toEqual(['skipped', 'skipped', 'skipped']);
  });
});

describe('quota audit: output formats and durations', () => {
  it('-f yaml: one mapping per resource, keys sorted, unlimited as -1', async () => {
    const nova = await startNova({ maxTotalInstances: -1 });
    nova.addServer({ flavorId: '2' });
    const r = await runPiped(['quota', 'audit', '-f', 'yaml', '--no-ghosts'], envOf(nova));
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd()).toBe(
      [
        '- Counted: 2',
        '  Drift: 0',
        '  Limit: 20',
        '  Reported After: 2',
        '  Reported Before: 2',
        '  Resource: cores',
        '  Verdict: consistent',
        '- Counted: 2048',
        '  Drift: 0',
        '  Limit: 51200',
        '  Reported After: 2048',
        '  Reported Before: 2048',
        '  Resource: ramMiB',
        '  Verdict: consistent',
        '- Counted: 1',
        '  Drift: 0',
        '  Limit: -1',
        '  Reported After: 1',
        '  Reported Before: 1',
        '  Resource: instances',
        '  Verdict: consistent',
      ].join('\n'),
    );
  });

  it('-f value -c Resource -c Drift -c Verdict: a line per resource; usage no server holds exits 5', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.setUsageDrift({ cores: 4 });
    const r = await runPiped(['quota', 'audit', '-f', 'value', '-c', 'Resource', '-c', 'Drift', '-c', 'Verdict', '--no-ghosts'], envOf(nova));
    expect(r.code).toBe(5);
    expect(r.stdout.trimEnd()).toBe('cores 4 over-reported\nramMiB 0 consistent\ninstances 0 consistent');
  });

  it('-f json is --json (the whole audit); --noindent prints it on one line', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const viaFormat = await runPiped(['quota', 'audit', '-f', 'json', '--no-ghosts'], envOf(nova));
    const viaJson = await runPiped(['quota', 'audit', '--json', '--no-ghosts'], envOf(nova));
    const strip = (s: string): unknown => {
      const j = JSON.parse(s) as Record<string, unknown>;
      // What differs between two runs: times and request ids.
      for (const k of ['readings', 'servers', 'elapsedMs', 'startedAtMs']) delete j[k];
      return j;
    };
    expect(viaFormat.code).toBe(0);
    expect(strip(viaFormat.stdout)).toEqual(strip(viaJson.stdout));
    expect((JSON.parse(viaFormat.stdout) as { verdict: string }).verdict).toBe('consistent');
    const one = await runPiped(['quota', 'audit', '-f', 'json', '--noindent', '--no-ghosts'], envOf(nova));
    expect(one.stdout.trimEnd().split('\n')).toHaveLength(1);
  });

  it('durations with units: --retry-delay 1ms --timeout 1m; --watch --interval 10ms keeps its JSON lines', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const r = await runPiped(['quota', 'audit', '--retry-delay', '1ms', '--timeout', '1m', '--no-ghosts'], envOf(nova));
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\nVerdict: consistent\./);
    const w = await runPiped(['quota', 'audit', '--watch', '--interval', '10ms', '--samples', '2', '--no-ghosts'], envOf(nova));
    expect(w.code).toBe(0);
    const lines = w.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { type: string });
    expect(lines.map((l) => l.type)).toEqual(['sample', 'sample', 'summary']);
  });

  it.each(['30', '999', '0', '30000'])('a bare --watch --interval %s is refused before any request (exit 2), suggesting a unit', async (value) => {
    const nova = await startNova();
    const r = await runPiped(['quota', 'audit', '--watch', '--interval', value, '--samples', '2', '--no-ghosts'], envOf(nova));
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr.trimEnd()).toBe(`nova-guard: --interval ${value}: a duration needs a unit: --interval ${value}s (seconds) or --interval ${value}ms (units: 500ms, 5s, 2m, 1h)`);
    expect(nova.requests).toHaveLength(0);
  });

  it('--watch with -f yaml or -c is bad usage (exit 2) before any request', async () => {
    const nova = await startNova();
    const r = await runPiped(['quota', 'audit', '--watch', '-f', 'yaml'], envOf(nova));
    expect(r).toMatchObject({ code: 2, stdout: '', stderr: 'nova-guard: --watch prints JSON lines: -c and -f table|value|yaml|csv do not apply to it\n' });
    expect(nova.requests).toHaveLength(0);
  });
});

describe('server reap: signals', () => {
  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGHUP', 129],
    ['SIGINT', 130],
  ] as const) {
    it(`${signal} while deletions are waited for names the servers asked to delete and not confirmed gone (exit ${code})`, async () => {
      const nova = await startNova({ deleteDelayMs: 60_000 });
      const { old } = seed(nova);
      const r = await runPiped(['server', 'reap', '--prefix', 'adt-', '--older-than', '2h', '--pass-interval', '10ms', '--interval', '50ms'], envOf(nova), (pid) => {
        const tick = setInterval(() => {
          // Both DELETEs sent (Nova accepted them): stop it a little later, while it waits.
          if (nova.requestsTo('DELETE', /^\/servers\//).length >= 2) {
            clearInterval(tick);
            setTimeout(() => process.kill(pid, signal), 300);
          }
        }, 20);
      });
      expect(r.code).toBe(code);
      for (const id of old) expect(r.stderr).toContain(id);
      expect(r.stderr).toMatch(/Asked to delete and NOT confirmed gone \(Nova goes on deleting them\): /);
      expect(r.stderr).toMatch(new RegExp(`Wait for them with\\n  nova-guard server delete --wait (${old[0]} ${old[1]}|${old[1]} ${old[0]})`));
      for (const id of old) expect(nova.getServerState(id)).toBeDefined();
    }, 60_000);
  }
});
