import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/core/duration.js';
import { reaperOptionsFromFlags, registerReapCommand } from '../../src/cli/reap.js';
import { ValidationError } from '../../src/index.js';
import type { FakeNova, RecordedRequest } from '../../src/testing/index.js';
import { clientFor, settle, startNova, useFakeClock } from '../helpers.js';
import { runCli } from './run.js';

/** The reaper's own listings (a waiting delete may poll with `changes-since`: not counted). */
const listings = (nova: FakeNova): RecordedRequest[] => nova.requestsTo('GET', '/servers/detail').filter((q) => q.query['changes-since'] === undefined);

// On fake timers through FakeNova's in-process adapter: pass intervals and delete timeouts cost no real time.
useFakeClock();

const HOUR = 3_600_000;
const reap = (nova: FakeNova, argv: string[]): ReturnType<typeof runCli> => settle(runCli('server', registerReapCommand, clientFor(nova), ['reap', ...argv]));
const FAST = ['--pass-interval', '10ms', '--interval', '5ms'];

function seed(nova: FakeNova): string[] {
  const old = Date.now() - 3 * HOUR;
  const ids = [nova.addServer({ name: 'adt-1', createdMs: old }).id, nova.addServer({ name: 'adt-2', createdMs: old - 1000 }).id];
  nova.addServer({ name: 'adt-new' });
  nova.addServer({ name: 'db', createdMs: old });
  return ids;
}

describe('nova-guard server reap', () => {
  it('deletes the leaks seen on both passes; progress as plain lines on stderr; exit 0', async () => {
    const nova = await startNova();
    const [a, b] = seed(nova);
    const r = await reap(nova, ['--prefix', 'adt-', '--older-than', '2h', ...FAST]);
    expect(r.exitCode).toBe(0);
    const out = r.stdout.split('\n');
    expect(out[0]).toBe('2 deleted, 0 failed, 1 skipped, 2 candidates.');
    expect(out[1]).toMatch(/^result +id +name +age +detail$/);
    expect(r.stdout).toMatch(new RegExp(`deleted +${a} +adt-1 +3h +in `));
    expect(r.stdout).toMatch(new RegExp(`deleted +${b} +adt-2 +3h +in `));
    expect(r.stdout).toMatch(/skipped \(too-young\) +[0-9a-f-]{36} +adt-new +\d+ms +younger than 2h$/m);
    const err = r.stderr.split('\n');
    expect(err[0]).toBe('pass 1: 4 servers listed, 2 candidates, 0 to delete');
    expect(err[1]).toBe('waiting 10ms for the next pass (a server is deleted only when seen on two passes)');
    expect(err[2]).toBe('pass 2: 4 servers listed, 2 candidates, 2 to delete');
    expect(err.filter((l) => /^deleted [0-9a-f-]{36} \(adt-\d\) in /.test(l))).toHaveLength(2);
    expect(nova.requests.filter((q) => q.method === 'DELETE').map((q) => q.serverId).sort()).toEqual([a, b].sort());
  });

  it('--dry-run (table): the head counts what it would delete apart from what it skips', async () => {
    const nova = await startNova();
    seed(nova);
    const r = await reap(nova, ['--prefix', 'adt-', '--older-than', '2h', '--dry-run', ...FAST]);
    expect(r.stdout.split('\n')[0]).toBe('Dry run: would delete 2, 1 skipped, 2 candidates.');
    expect(r.stdout.match(/^would delete /gm)).toHaveLength(2);
    expect(nova.requests.filter((q) => q.method === 'DELETE')).toEqual([]);
  });

  it('--dry-run --json: lists what would be deleted, zero DELETEs', async () => {
    const nova = await startNova();
    const ids = seed(nova);
    const r = await reap(nova, ['--prefix', 'adt-', '--older-than', '2h', '--dry-run', '--json', ...FAST]);
    expect(r.exitCode).toBe(0);
    const json = JSON.parse(r.stdout) as { dryRun: boolean; deleted: unknown[]; failed: unknown[]; skipped: Array<{ serverId: string; reason: string }> };
    expect(json.dryRun).toBe(true);
    expect(json.deleted).toEqual([]);
    expect(json.failed).toEqual([]);
    expect(json.skipped.filter((s) => s.reason === 'dry-run').map((s) => s.serverId).sort()).toEqual([...ids].sort());
    expect(nova.requests.filter((q) => q.method !== 'GET')).toHaveLength(0);
    // The progress says what the dry run would delete, as its result does (not "0 to delete").
    const err = r.stderr.split('\n');
    expect(err[0]).toBe('pass 1: 4 servers listed, 2 candidates, would delete 0 (dry run)');
    expect(err[2]).toBe('pass 2: 4 servers listed, 2 candidates, would delete 2 (dry run)');
  });

  it('a stuck server: the others are deleted, exit 1 with "1 of 3 servers failed to delete."', async () => {
    const nova = await startNova();
    const ids = seed(nova);
    const stuck = nova.addServer({ name: 'adt-stuck', createdMs: Date.now() - 3 * HOUR }).id;
    nova.setServerBehavior(stuck, { onDelete: 'never' });
    const r = await reap(nova, ['--prefix', 'adt-', '--older-than', '2h', '--delete-timeout', '200ms', ...FAST, '--json']);
    expect(r.exitCode).toBe(1);
    const json = JSON.parse(r.stdout) as { deleted: Array<{ serverId: string }>; failed: Array<{ serverId: string; error: { name: string; serverId: string; lastTaskState: string } }> };
    expect(json.deleted.map((d) => d.serverId).sort()).toEqual([...ids].sort());
    expect(json.failed).toHaveLength(1);
    expect(json.failed[0]).toMatchObject({ serverId: stuck, error: { name: 'DeleteTimeoutError', serverId: stuck, lastTaskState: 'deleting' } });
    expect(r.stderr.split('\n').at(-1)).toBe('1 of 3 servers failed to delete.');
  });

  it('--state-file: one pass per run, the second run deletes; a dry run never writes the file', async () => {
    const nova = await startNova();
    const ids = seed(nova);
    const dir = await mkdtemp(join(tmpdir(), 'reap-cli-'));
    try {
      const file = join(dir, 'reaper.json');
      const args = ['--metadata', 'none', '--prefix', 'adt-', '--older-than', '2h', '--state-file', file, ...FAST];
      // --metadata none: no server carries key "none", so nothing is a candidate
      expect((await reap(nova, args)).stdout).toBe('0 deleted, 0 failed, 0 skipped, 0 candidates.');
      const argv = ['--prefix', 'adt-', '--older-than', '2h', '--state-file', file, ...FAST];
      const dry = await reap(nova, [...argv, '--dry-run']);
      expect(dry.stdout.split('\n')[0]).toBe('Dry run: would delete 0, 3 skipped, 2 candidates.');
      const first = await reap(nova, argv);
      expect(first.stdout.split('\n')[0]).toBe('0 deleted, 0 failed, 3 skipped, 2 candidates.');
      expect(first.stdout).toMatch(/skipped \(first-sighting\)/);
      // One listing a run (the deleting run's waits list the project as well: `test/delete/tick.test.ts`).
      expect(listings(nova)).toHaveLength(3);
      const second = await reap(nova, argv);
      expect(second.stdout.split('\n')[0]).toBe('2 deleted, 0 failed, 1 skipped, 2 candidates.');
      expect(nova.requests.filter((q) => q.method === 'DELETE').map((q) => q.serverId).sort()).toEqual([...ids].sort());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('--metadata key=value selects the fleet', async () => {
    const nova = await startNova();
    const old = Date.now() - 3 * HOUR;
    const mine = nova.addServer({ name: 'x', metadata: { pool: 'ci' }, createdMs: old }).id;
    nova.addServer({ name: 'y', metadata: { pool: 'prod' }, createdMs: old });
    const r = await reap(nova, ['--metadata', 'pool=ci', '--older-than', '1h', ...FAST, '--json']);
    expect((JSON.parse(r.stdout) as { deleted: Array<{ serverId: string }> }).deleted.map((d) => d.serverId)).toEqual([mine]);
  });

  it('a listing error exits 1 with the message on stderr', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/servers/detail', status: 403, body: { forbidden: { code: 403, message: 'Policy says no.' } }, times: Infinity });
    const r = await reap(nova, ['--prefix', 'adt-', '--older-than', '2h']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr.split('\n').at(-1)).toMatch(
      /^nova-guard server reap: ForbiddenError: Policy says no\. \(GET http:\/\/127\.0\.0\.1:\d+\/v2\.1\/servers\/detail, request req-[0-9a-f-]+\)$/,
    );
  });

  it('bad usage throws ValidationError before any request', async () => {
    const nova = await startNova();
    await expect(reap(nova, ['--prefix', 'adt-'])).rejects.toThrow(/--older-than is required/);
    // A bare number is refused (--older-than 2 would have been 2 ms: almost every server), naming a unit.
    await expect(reap(nova, ['--prefix', 'adt-', '--older-than', '2'])).rejects.toThrow('--older-than 2: a duration needs a unit: --older-than 2s (seconds) or --older-than 2ms (units: 500ms, 5s, 2m, 1h)');
    await expect(reap(nova, ['--prefix', 'adt-', '--older-than', '7200000'])).rejects.toThrow(/--older-than 7200000: a duration needs a unit/);
    await expect(reap(nova, ['--prefix', 'adt-', '--older-than', '0'])).rejects.toThrow(/--older-than 0: a duration needs a unit/);
    await expect(reap(nova, ['--prefix', 'adt-', '--older-than', '2y'])).rejects.toThrow('--older-than must be a duration with a unit (500ms, 5s, 2m, 1h), got "2y"');
    await expect(reap(nova, ['--prefix', 'adt-', '--older-than', '2h', '--pass-interval', '0x10'])).rejects.toThrow(/--pass-interval must be a duration/);
    await expect(reap(nova, ['--prefix', 'adt-', '--older-than', '2h', '--timeout', '0s'])).rejects.toThrow('--timeout must be a positive duration with a unit (500ms, 5s, 2m, 1h), got "0s"');
    await expect(reap(nova, ['--older-than', '2h'])).rejects.toThrow(/give the fleet/);
    await expect(reap(nova, ['--prefix', 'a', '--older-than', '2h', '--concurrency', '0'])).rejects.toThrow(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });
});

describe('reap durations', () => {
  it('the parsed flags (ms) become the reaper options; --pass-interval defaults to 60 s', () => {
    const o = reaperOptionsFromFlags({ prefix: 'ci-', olderThan: 7_200_000, passInterval: 10, deleteTimeout: 300_000, interval: 500, timeout: 900_000 });
    expect(o).toMatchObject({ olderThanMs: 7_200_000, passIntervalMs: 10, deleteTimeoutMs: 300_000, deleteIntervalMs: 500, timeoutMs: 900_000 });
    expect(reaperOptionsFromFlags({ prefix: 'ci-', olderThan: 0 })).toMatchObject({ olderThanMs: 0, passIntervalMs: 60_000 });
  });
});

describe('durations', () => {
  it('parses 90s, 30m, 2h, 1d, 1.5h, 250ms, 1w', () => {
    expect(['90s', '30m', '2h', '1d', '1.5h', '250ms', '1w', ' 2H '].map((t) => parseDuration(t, '--x'))).toEqual([
      90_000, 1_800_000, 7_200_000, 86_400_000, 5_400_000, 250, 604_800_000, 7_200_000,
    ]);
  });
  it('refuses a bare number, a negative or a unknown unit', () => {
    for (const t of ['2', '-1h', '2y', '', 'h']) expect(() => parseDuration(t, '--older-than')).toThrow(ValidationError);
  });
  it('formats', () => {
    expect([850, 42_000, 303_000, 7_500_000, 3 * 86_400_000 + 4 * HOUR, undefined].map(formatDuration)).toEqual(['850ms', '42s', '5m 3s', '2h 5m', '3d 4h', '-']);
  });
});
