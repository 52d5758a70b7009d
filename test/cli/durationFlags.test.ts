/**
 * One spelling for durations across the CLI (issue 32, item 6): `--timeout`, `--interval`,
 * `--max-wait`, `--request-timeout`, `--build-delay`, `--delete-delay`, ... each take a unit; a
 * bare number is refused on every duration flag with one message naming the flag (exit 2, nothing
 * sent); the old spellings (`--timeout-ms`, `--interval-ms`, `--max-wait-ms`, `--poll-interval`,
 * `--request-timeout-ms`, `--build-delay-ms`, `--delete-delay-ms`) still work, print one
 * deprecation line each on stderr, and may not be given with the new flag.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { startNova } from '../helpers.js';
import { ensureBuilt, runPiped } from './binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

const savedEnv = { ...process.env };
afterEach(() => {
  for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
  Object.assign(process.env, savedEnv);
  process.exitCode = undefined;
});

/** Run the CLI in-process against `endpoint` (no clouds.yaml): exit code, stdout, stderr. */
async function run(argv: string[], endpoint: string): Promise<{ code: number; out: string; err: string }> {
  for (const k of Object.keys(process.env)) if (k.startsWith('OS_') || k.startsWith('NOVA_')) delete process.env[k];
  Object.assign(process.env, { XDG_CONFIG_HOME: '/nonexistent', XDG_CONFIG_DIRS: '/nonexistent', OS_ENDPOINT: endpoint, OS_TOKEN: 'admin:demo' });
  const out: string[] = [];
  const err: string[] = [];
  const spies = [
    vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' '))),
    vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' '))),
    vi.spyOn(process.stderr, 'write').mockImplementation((s: unknown) => (err.push(String(s).trimEnd()), true)),
    vi.spyOn(process.stdout, 'write').mockImplementation((s: unknown) => (out.push(String(s).trimEnd()), true)),
  ];
  try {
    const code = await main(argv);
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    for (const s of spies) s.mockRestore();
    process.exitCode = undefined;
  }
}

const ID = '8a2f6e1c-3b4d-4e5f-9a6b-7c8d9e0f1a2b';

/** Every duration flag of every command, old spellings included: the command line before the flag. */
const FLAGS: ReadonlyArray<readonly [string[], string]> = [
  [['server', 'delete', ID, '--wait'], '--timeout'],
  [['server', 'delete', ID, '--wait'], '--interval'],
  [['server', 'delete', ID, '--wait'], '--timeout-ms'],
  [['server', 'delete', ID, '--wait'], '--interval-ms'],
  [['server', 'create', 'x', '--flavor', '1', '--image', 'i'], '--max-wait'],
  [['server', 'create', 'x', '--flavor', '1', '--image', 'i'], '--max-wait-ms'],
  [['server', 'reap', '--prefix', 'ci-', '--older-than', '2h'], '--timeout'],
  [['server', 'reap', '--prefix', 'ci-', '--older-than', '2h'], '--interval'],
  [['server', 'reap', '--prefix', 'ci-', '--older-than', '2h'], '--poll-interval'],
  [['server', 'reap', '--prefix', 'ci-', '--older-than', '2h'], '--delete-timeout'],
  [['server', 'reap', '--prefix', 'ci-', '--older-than', '2h'], '--pass-interval'],
  [['server', 'reap', '--prefix', 'ci-'], '--older-than'],
  [['quota', 'audit'], '--timeout'],
  [['quota', 'audit'], '--retry-delay'],
  [['quota', 'audit'], '--stuck-build-after'],
  [['quota', 'audit', '--watch'], '--interval'],
  [['limits'], '--request-timeout'],
  [['limits'], '--request-timeout-ms'],
  [['fake-nova', '--port', '0'], '--build-delay'],
  [['fake-nova', '--port', '0'], '--build-delay-ms'],
  [['fake-nova', '--port', '0'], '--delete-delay'],
  [['fake-nova', '--port', '0'], '--delete-delay-ms'],
];

/** The current spelling of `flag`. */
const newFlag = (flag: string): string => (flag === '--poll-interval' ? '--interval' : flag.replace(/-ms$/, ''));
/** A bare number of the test table (ms for an old `-ms` flag) in the new spelling. */
const AS_MS: Record<string, string> = { '5': '5ms', '2': '2ms', '30000': '30s', '0': '0ms' };

/**
 * The one message of a bare number: for an old `-ms` flag, the milliseconds it meant in the new
 * spelling (`30000 ms is --timeout 30s`, not `--timeout-ms 30000s`: 1000 times too long); for any
 * other flag, seconds or milliseconds.
 */
function bareMessage(flag: string, value: string): string {
  const hint = /-ms$/.test(flag) ? `${value} ms is ${newFlag(flag)} ${AS_MS[value]}` : `${newFlag(flag)} ${value}s (seconds) or ${newFlag(flag)} ${value}ms`;
  return `${flag} ${value}: a duration needs a unit: ${hint} (units: 500ms, 5s, 2m, 1h)`;
}

describe('a bare number is refused on every duration flag, with one message', () => {
  it.each(FLAGS.flatMap(([before, flag]) => ['5', '2', '30000', '0'].map((value) => [before, flag, value] as const)))(
    '%j %s %s: exit 2, the flag and an example with a unit, nothing sent',
    async (before, flag, value) => {
      const nova = await startNova();
      const r = await run([...before, flag, value], nova.endpoint);
      expect(r).toEqual({ code: 2, out: '', err: `nova-guard: ${bareMessage(flag, value)}` });
      expect(nova.requests).toHaveLength(0);
    },
  );

  it('the case of the issue: `server delete --wait --timeout-ms 5` sends no DELETE (it gave up after 5 ms with the DELETE sent)', async () => {
    const nova = await startNova({ deleteDelayMs: 60_000 });
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const r = await runPiped(['server', 'delete', '--wait', '--timeout-ms', '5', id], { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` });
    expect(r).toMatchObject({ code: 2, stdout: '', stderr: 'nova-guard: --timeout-ms 5: a duration needs a unit: 5 ms is --timeout 5ms (units: 500ms, 5s, 2m, 1h)\n' });
    expect(nova.requests).toHaveLength(0);
    expect(nova.getServerState(id)?.taskState ?? null).toBeNull();
  });

  it.each([
    [['server', 'delete', 'ci-2', '--wait', '--timeout-ms', '30000'], '--timeout-ms 30000: a duration needs a unit: 30000 ms is --timeout 30s'],
    [['server', 'delete', 'ci-2', '--wait', '--interval-ms', '1500'], '--interval-ms 1500: a duration needs a unit: 1500 ms is --interval 1.5s'],
    [['server', 'create', 'x', '--flavor', '1', '--image', 'i', '--max-wait-ms', '600000'], '--max-wait-ms 600000: a duration needs a unit: 600000 ms is --max-wait 10m'],
    [['limits', '--request-timeout-ms', '250'], '--request-timeout-ms 250: a duration needs a unit: 250 ms is --request-timeout 250ms'],
    [['fake-nova', '--port', '0', '--delete-delay-ms', '3000'], '--delete-delay-ms 3000: a duration needs a unit: 3000 ms is --delete-delay 3s'],
    [['server', 'delete', 'ci-2', '--wait', '--timeout', '30'], '--timeout 30: a duration needs a unit: --timeout 30s (seconds) or --timeout 30ms'],
  ])('%j: the suggestion is the same time in the new spelling (the user\'s case: not 1000 times longer)', async (argv, message) => {
    const nova = await startNova();
    const r = await run(argv, nova.endpoint);
    expect(r).toEqual({ code: 2, out: '', err: `nova-guard: ${message} (units: 500ms, 5s, 2m, 1h)` });
    expect(nova.requests).toHaveLength(0);
  });
});

describe('the old spellings', () => {
  it('work as the new flags and say once each, on stderr, which flag to use', async () => {
    const nova = await startNova({ deleteDelayMs: 20, deletedWindowMs: 50 });
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    // --interval-ms twice: still one line for it.
    const r = await runPiped(['server', 'delete', id, '--wait', '--timeout-ms', '30s', '--interval-ms', '40ms', '--interval-ms', '50ms'], {
      OS_ENDPOINT: nova.endpoint,
      OS_TOKEN: `admin:${nova.projectId}`,
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^${id}: deleted `));
    expect(r.stderr.trimEnd().split('\n').sort()).toEqual([
      'nova-guard: warning: --interval-ms is deprecated and will be removed: use --interval (the same duration with a unit, e.g. --interval 30s)',
      'nova-guard: warning: --timeout-ms is deprecated and will be removed: use --timeout (the same duration with a unit, e.g. --timeout 30s)',
    ]);
  });

  it('carry their value: --timeout-ms 300ms gives up as --timeout 300ms does', async () => {
    const nova = await startNova({ deleteDelayMs: 60_000 });
    const a = nova.addServer({ status: 'ACTIVE' }).id;
    const b = nova.addServer({ status: 'ACTIVE' }).id;
    const started = performance.now();
    const byNew = await run(['server', 'delete', a, '--wait', '--timeout', '300ms', '--interval', '50ms'], nova.endpoint);
    const byOld = await run(['server', 'delete', b, '--wait', '--timeout-ms', '300ms', '--interval-ms', '50ms'], nova.endpoint);
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(byNew.code).toBe(1);
    expect(byOld.code).toBe(1);
    // Each gave up after about 300 ms (not the default 5 minutes), the DELETE accepted and the server still deleting.
    for (const [r, id] of [[byNew, a], [byOld, b]] as const) {
      const m = /Failed to delete server with name or ID '(\S+)': Timed out after (\d+) ms waiting/.exec(r.err);
      expect(m?.[1], r.err).toBe(id);
      expect(Number(m![2])).toBeGreaterThanOrEqual(300);
      expect(Number(m![2])).toBeLessThan(10_000);
    }
  });

  it('with the new flag too: bad usage (exit 2), nothing sent', async () => {
    const nova = await startNova();
    const r = await run(['server', 'delete', ID, '--wait', '--interval', '1s', '--interval-ms', '2s'], nova.endpoint);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/option '--interval-ms <duration>' cannot be used with option '--interval <duration>'/);
    expect(nova.requests).toHaveLength(0);
  });

  it('the help names the new flags only, each with its units', async () => {
    const nova = await startNova();
    const r = await run(['server', 'delete', '--help'], nova.endpoint);
    expect(r.code).toBe(0);
    const help = (r.out + r.err).replace(/\s+/g, ' ');
    expect(help).toContain('--timeout <duration> with --wait: give up waiting for a server after this long: 500ms, 5s, 2m, 1h (default 5m)');
    expect(help).toContain('--interval <duration> with --wait: time between polls: 500ms, 5s, 2m, 1h (default 5s)');
    expect(help).not.toMatch(/--timeout-ms|--interval-ms/);
  });
});
