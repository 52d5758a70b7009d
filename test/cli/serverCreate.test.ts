// `nova-guard server create` in process, against FakeNova (its in-process adapter, real clock):
// the guarded create printed as openstack prints it, -f/-c, quota 403 retries, bad usage before
// any request, and the ledger URL.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger, registerServerCreateCommand, waitLine } from '../../src/cli/serverCreate.js';
import { toLogger } from '../../src/core/logger.js';
import { pino } from 'pino';
import { main } from '../../src/cli/main.js';
import { DEFAULT_IMAGES } from '../../src/testing/index.js';
import { clientFor, startNova } from '../helpers.js';
import { runCli } from './run.js';

const CIRROS = DEFAULT_IMAGES[0]!;
const posts = (nova: { requests: ReadonlyArray<{ method: string; path: string }> }): number => nova.requests.filter((r) => r.method === 'POST' && r.path === '/servers').length;

/** `main` (the whole CLI: exit codes) with stdout and stderr captured. */
async function runMain(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    err.push(String(chunk));
    return true;
  });
  try {
    const code = await main(argv);
    return { code, stdout: out.join('\n'), stderr: err.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
    write.mockRestore();
  }
}

afterEach(() => {
  delete process.env['NOVA_GUARD_LEDGER'];
});

describe('server create: the guarded create, printed as openstack server create', () => {
  it('flavor and image by name; --wait: a Field/Value table of the ACTIVE server with its properties and the claim tag', async () => {
    const nova = await startNova({ buildDelayMs: 20 });
    const r = await runCli('server', registerServerCreateCommand, clientFor(nova), ['create', 'ci-1', '--flavor', 'm1.tiny', '--image', CIRROS.name, '--nic', 'none', '--property', 'owner=ci', '--wait']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[1]).toMatch(/^\| Field +\| Value +\|$/);
    expect(lines).toContainEqual(expect.stringMatching(/^\| status +\| ACTIVE +\|$/));
    expect(lines).toContainEqual(expect.stringMatching(/^\| name +\| ci-1 +\|$/));
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^\\| image +\\| ${CIRROS.name.replace(/\./g, '\\.')} \\(${CIRROS.id}\\) +\\|$`)));
    expect(r.stdout).toMatch(/\| properties +\| .*nova-guard-claim='[^']+'.*owner='ci'/);
    const [server] = nova.listServerStates();
    expect(server?.status).toBe('ACTIVE');
    expect(server?.metadata?.['owner']).toBe('ci');
    expect(posts(nova)).toBe(1);
  });

  it('one flavor request a create, by name or by id: the listing with details gives the needs too (no GET /flavors/{id})', async () => {
    for (const flavor of ['m1.tiny', '1']) {
      const nova = await startNova({ buildDelayMs: 20 });
      const r = await runCli('server', registerServerCreateCommand, clientFor(nova), ['create', 'ci-1', '--flavor', flavor, '--image', CIRROS.id, '--nic', 'none']);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(nova.requests.filter((q) => q.method === 'GET' && q.path.startsWith('/flavors')).map((q) => q.path)).toEqual(['/flavors/detail']);
      expect(posts(nova)).toBe(1);
    }
  });

  it('--flavor NAME on the second page of GET /flavors/detail (flavors_links next) is found, not "No Flavor found"', async () => {
    const nova = await startNova({ buildDelayMs: 20 });
    const next = [{ rel: 'next', href: `${nova.endpoint}/flavors/detail?marker=1` }];
    nova.inject({ method: 'GET', path: '/flavors/detail', status: 200, body: { flavors: [{ id: '1', name: 'm1.tiny', vcpus: 1, ram: 512 }], flavors_links: next } });
    const r = await runCli('server', registerServerCreateCommand, clientFor(nova), ['create', 'ci-1', '--flavor', 'm1.small', '--image', CIRROS.id, '--nic', 'none']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(nova.listServerStates()[0]?.flavorId).toBe('2');
  });

  it('--flavor ID of a flavor the listing does not show (a private flavor an admin lists only with is_public): found by GET /flavors/{id}, as openstack does', async () => {
    const nova = await startNova({ buildDelayMs: 20 });
    nova.inject({ method: 'GET', path: '/flavors/detail', status: 200, body: { flavors: [{ id: '1', name: 'm1.tiny', vcpus: 1, ram: 512 }] } });
    const r = await runCli('server', registerServerCreateCommand, clientFor(nova), ['create', 'ci-1', '--flavor', '3', '--image', CIRROS.id, '--nic', 'none']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(nova.listServerStates()[0]?.flavorId).toBe('3');
    // A name that is no flavor still fails as openstack fails (its GET /flavors/m9.huge answered 404).
    await expect(runCli('server', registerServerCreateCommand, clientFor(nova), ['create', 'ci-2', '--flavor', 'm9.huge', '--image', CIRROS.id, '--nic', 'none'])).rejects.toThrow('No Flavor found for m9.huge');
    expect(posts(nova)).toBe(1);
  });

  it('--flavor NAME of a private flavor an admin uses: found (an admin\'s listing shows only public flavors unless asked with is_public=None, as openstack asks); a member that may not use it gets "No Flavor found"', async () => {
    const flavors = [
      { id: '1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1 },
      { id: 'ci-private', name: 'ci.private', vcpus: 2, ram: 1024, disk: 1, isPublic: false },
    ];
    const nova = await startNova({ buildDelayMs: 20, flavors });
    const r = await runCli('server', registerServerCreateCommand, clientFor(nova), ['create', 'ci-1', '--flavor', 'ci.private', '--image', CIRROS.id, '--nic', 'none']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(nova.listServerStates()[0]?.flavorId).toBe('ci-private');
    const member = clientFor(nova, { token: `member:${nova.projectId}` });
    await expect(runCli('server', registerServerCreateCommand, member, ['create', 'ci-2', '--flavor', 'ci.private', '--image', CIRROS.id, '--nic', 'none'])).rejects.toThrow('No Flavor found for ci.private');
  });

  it("never prints the server's adminPass (a secret), with or without --wait, in any format", async () => {
    const nova = await startNova({ buildDelayMs: 20 });
    for (const extra of [[], ['--wait'], ['-f', 'json'], ['-f', 'yaml', '--wait']]) {
      const r = await runCli('server', registerServerCreateCommand, clientFor(nova), ['create', `pw-${extra.join('')}`, '--flavor', 'm1.tiny', '--image', CIRROS.name, '--nic', 'none', ...extra]);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(/\bid\b/);
      expect(r.stdout).not.toMatch(/adminPass/);
    }
    // Nova did hand out passwords: they are in the POST answers the client received, not in the output.
    expect(posts(nova)).toBe(4);
  });

  it('a -c that names no column of the server fails and leaves no server behind (it was created before the columns could be checked)', async () => {
    const nova = await startNova({ buildDelayMs: 20, deleteDelayMs: 10 });
    const r = await runMain(['--os-endpoint', nova.endpoint, '--os-token', `admin:${nova.projectId}`, 'server', 'create', 'a', '--flavor', '1', '--image', CIRROS.id, '-c', 'nosuchcol']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("No recognized column names in ['nosuchcol']");
    expect(r.stderr).toMatch(/Deleting server [0-9a-f-]{36}/);
    expect(posts(nova)).toBe(1);
    expect(nova.listServerStates()).toEqual([]);
  });

  it('-f json -c id prints only the id; -f value -c id only the id line', async () => {
    const nova = await startNova({ buildDelayMs: 20 });
    const json = await runCli('server', registerServerCreateCommand, clientFor(nova), ['create', 'a', '--flavor', '1', '--image', CIRROS.id, '-f', 'json', '-c', 'id']);
    expect(json.exitCode).toBe(0);
    const parsed = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(['id']);
    const value = await runCli('server', registerServerCreateCommand, clientFor(nova), ['create', 'b', '--flavor', '1', '--image', CIRROS.id, '--wait', '-f', 'value', '-c', 'id']);
    expect(value.exitCode).toBe(0);
    expect(value.stdout).toMatch(/^[0-9a-f-]{36}$/);
    expect(nova.listServerStates().map((s) => s.id)).toContain(value.stdout);
  });

  it('a quota 403 during the create is retried after backoff as the guard does: one server, two POSTs', async () => {
    const nova = await startNova({ buildDelayMs: 20 });
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: { forbidden: { code: 403, message: 'Quota exceeded for cores: Requested 1, but already used 20 of 20 cores' } } });
    const r = await runCli('server', registerServerCreateCommand, clientFor(nova), ['create', 'q', '--flavor', 'm1.tiny', '--image', CIRROS.id, '-f', 'value', '-c', 'id']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(/retrying the create in [\d.]+ s \(quota: Quota exceeded for cores/);
    expect(posts(nova)).toBe(2);
    expect(nova.listServerStates()).toHaveLength(1);
  }, 20_000);

  it('an unknown flavor or image name is a failure naming it (exit 1), with no POST', async () => {
    const nova = await startNova();
    const env = ['--os-endpoint', nova.endpoint, '--os-token', `admin:${nova.projectId}`];
    const f = await runMain([...env, 'server', 'create', 'x', '--flavor', 'm9.huge', '--image', CIRROS.id]);
    expect(f.code).toBe(1);
    expect(f.stderr).toContain('No Flavor found for m9.huge');
    const i = await runMain([...env, 'server', 'create', 'x', '--flavor', '1', '--image', 'no-such-image']);
    expect(i.code).toBe(1);
    expect(i.stderr).toContain('No Image found for no-such-image');
    expect(posts(nova)).toBe(0);
  });
});

describe('server create: bad usage is exit 2 before any request', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['an unknown flag', ['--flavor', '1', '--image', 'i', '--bogus'], /unknown option '--bogus'/],
    ['--nic none with --network', ['--flavor', '1', '--image', 'i', '--nic', 'none', '--network', 'n1'], /--nic none cannot be combined with --network/],
    ['a missing --flavor', ['--image', 'i'], /the following arguments are required: --flavor$/m],
    // a misspelt flag is named as such, not reported as a missing --flavor (commander checks required options first)
    ['a misspelt --flavour', ['--flavour', '1', '--image', 'i'], /unknown option '--flavour'[\s\S]*Did you mean --flavor\?/],
    ['a missing --image', ['--flavor', '1'], /required: --image/],
    ['a --property without =', ['--flavor', '1', '--image', 'i', '--property', 'novalue'], /--property "novalue": give key=value/],
    ['a bad --max-wait-ms', ['--flavor', '1', '--image', 'i', '--max-wait-ms', '10 s'], /--max-wait-ms must be a positive duration/],
    ['a bare --max-wait', ['--flavor', '1', '--image', 'i', '--max-wait', '600'], /--max-wait 600: a duration needs a unit: --max-wait 600s \(seconds\) or --max-wait 600ms/],
    ['an unsupported --ledger URL', ['--flavor', '1', '--image', 'i', '--ledger', 'ftp://x'], /a ledger must be .*got "ftp:\/\/x"/],
  ];
  for (const [what, args, message] of cases) {
    it(`${what}: exit 2, nothing sent`, async () => {
      const nova = await startNova();
      const r = await runMain(['--os-endpoint', nova.endpoint, '--os-token', `admin:${nova.projectId}`, 'server', 'create', 'x', ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(nova.requests).toHaveLength(0);
    });
  }

  it('NOVA_GUARD_LEDGER is read like --ledger (an unsupported one is exit 2, nothing sent)', async () => {
    const nova = await startNova();
    process.env['NOVA_GUARD_LEDGER'] = 'memcached://x';
    const r = await runMain(['--os-endpoint', nova.endpoint, '--os-token', `admin:${nova.projectId}`, 'server', 'create', 'x', '--flavor', '1', '--image', 'i']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('got "memcached://x"');
    expect(nova.requests).toHaveLength(0);
  });
});

describe('server create: the line printed for each wait', () => {
  const short = [{ resource: 'cores' as const, needed: 4, max: 20, used: 20, inFlight: 0, headroom: 0 }];
  it('a wait for quota headroom says how long it waits, then what is short', () => {
    expect(waitLine({ delayMs: 2049, reason: 'short', shortfalls: short, ledgerOutOfReach: false })).toBe('waiting 2 s for quota headroom: cores needs 4, 0 free');
  });
  it("on a wait where the guard checked why it is short, the line says what it found (before: the check's listing was sent and its answer dropped)", () => {
    expect(waitLine({ delayMs: 29_100, reason: 'short', shortfalls: short, ledgerOutOfReach: false, shortfallCause: 'busy-fleet' })).toBe(
      "waiting 29.1 s for quota headroom: cores needs 4, 0 free; the project's servers hold this quota (a busy fleet)",
    );
    const finding = {
      kind: 'stale-usage' as const,
      transient: false,
      needsOperator: true,
      serverIds: [],
      holds: { cores: 4, ramMiB: 0, instances: 0 },
      evidence: 'Nova reports 20 cores used, its servers account for 16',
      projectCan: 'nothing',
      operatorCan: 'nova-manage placement heal_allocations',
    };
    expect(waitLine({ delayMs: 2000, reason: 'queued', shortfalls: short, ledgerOutOfReach: false, shortfallCause: 'wrong-books', finding })).toBe(
      "waiting 2 s for the creates queued ahead: cores needs 4 with theirs, 0 free; Nova's books are wrong (stale-usage): Nova reports 20 cores used, its servers account for 16 (an operator can: nova-manage placement heal_allocations)",
    );
    // the other waits: no check, nothing added
    expect(waitLine({ delayMs: 2000, reason: 'short', shortfalls: short, ledgerOutOfReach: false, shortfallCause: undefined })).toBe('waiting 2 s for quota headroom: cores needs 4, 0 free');
  });
  it('a wait for a ledger out of reach names the ledger (password redacted) and does not claim the quota is full', () => {
    const line = waitLine({ delayMs: 4400, reason: 'ledger-out-of-reach', shortfalls: short, ledgerOutOfReach: true }, 'redis://:s3cret@127.0.0.1:6379');
    expect(line).toBe(
      'waiting 4.4 s for the quota ledger redis://[REDACTED]@127.0.0.1:6379, out of reach: no create is admitted without it for now (the warning above says until when)',
    );
    expect(line).not.toMatch(/s3cret|free/);
  });
  it('a wait while the ledger settles (restartGraceMs, after a Redis restart) says so, not an empty list after the colon', () => {
    const line = waitLine({ delayMs: 2000, reason: 'ledger-settling', shortfalls: [], ledgerOutOfReach: false }, 'redis://:s3cret@127.0.0.1:6379');
    expect(line).toBe('waiting 2 s for the quota ledger redis://[REDACTED]@127.0.0.1:6379 to admit: the quota has room, but the ledger admits nothing yet (it settles after Redis started or restarted)');
    expect(line).not.toMatch(/: $/);
  });
  it('a wait behind the creates queued ahead says so, with the needs counted together with theirs', () => {
    const queued = [{ resource: 'cores' as const, needed: 6, max: 20, used: 16, inFlight: 0, headroom: 4 }];
    expect(waitLine({ delayMs: 1000, reason: 'queued', shortfalls: queued, ledgerOutOfReach: false })).toBe('waiting 1 s for the creates queued ahead: cores needs 6 with theirs, 4 free');
  });
});

describe('server create: the warnings it prints without --debug', () => {
  it("prints the shared ledger's warnings (outage, SQLite fallback) as Warning: lines, and nothing else of the guard's", () => {
    const printed: string[] = [];
    const log = toLogger(createLogger({ logger: pino({ level: 'silent' }) }, (l) => printed.push(l)));
    const guardLog = log.child({ component: 'quota-guard' });
    guardLog.warn({ ledger: 'redis', err: 'ECONNREFUSED' }, 'quota ledger (redis) is down');
    log.child({ component: 'ledger' }).warn({}, 'better-sqlite3 cannot be loaded; falling back to the in-process ledger');
    log.child({ component: 'redis-ledger' }).warn({}, 'Redis ledger: connection lost (ioredis reconnects)');
    guardLog.warn({ serverId: 'x' }, 'aborted: the created server is kept (keepOnAbort)'); // the command says so itself
    guardLog.info({ ledger: 'redis' }, 'quota ledger out of reach: waiting for it'); // onWait's line says so
    // with --debug (the client's logger at debug), every line of the guard, on a logger of its own
    expect(toLogger(createLogger({ logger: pino({ level: 'debug' }) }, (l) => printed.push(l))).isLevelEnabled('debug')).toBe(true);
    expect(printed).toEqual([
      'Warning: quota ledger (redis) is down',
      'Warning: better-sqlite3 cannot be loaded; falling back to the in-process ledger',
      'Warning: Redis ledger: connection lost (ioredis reconnects)',
    ]);
  });

  it('names where the ledger came from in the CLI\'s words: --ledger, or NOVA_GUARD_LEDGER, not the library\'s `ledger` option', () => {
    const message = 'quota ledger (redis) is down: Redis ledger at redis://[REDACTED]@nosuchhost:6379: Redis cannot be reached (getaddrinfo ENOTFOUND nosuchhost); its host name does not resolve: check it in the `ledger` option; skipping it';
    for (const [source, where] of [['flag', '--ledger'], ['env', 'NOVA_GUARD_LEDGER']] as const) {
      const printed: string[] = [];
      toLogger(createLogger({ logger: pino({ level: 'silent' }) }, (l) => printed.push(l), source)).child({ component: 'quota-guard' }).warn({ ledger: 'redis' }, message);
      expect(printed).toEqual([`Warning: ${message.replace('the `ledger` option', where)}`]);
    }
  });
});
