/**
 * A ledger from a string: `openLedger` (the CLI's and the library's one syntax), `NOVA_GUARD_LEDGER`,
 * and QuotaGuard's `ledger: 'sqlite:…'` (resolved through the entry point, real SQLite file, FakeNova).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessQuotaLedger, LedgerConfigError, QuotaGuard, ValidationError } from '../../src/index.js';
import { openLedger, parseLedgerSpec } from '../../src/ledgers/index.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import type { QuotaLedger } from '../../src/guard/index.js';
import { clientFor, startNova } from '../helpers.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
const dirs: string[] = [];
const toClose: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const l of toClose.splice(0)) await l.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  delete process.env.NOVA_GUARD_LEDGER;
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'nova-guard-ledgers-'));
  dirs.push(d);
  return d;
}

describe('parseLedgerSpec: one syntax for the library and the CLI', () => {
  it('takes sqlite:, sqlite:PATH, sqlite:///abs, redis://, rediss:// and in-process', () => {
    expect(parseLedgerSpec('sqlite:')).toEqual({ kind: 'sqlite', path: undefined });
    expect(parseLedgerSpec('sqlite:/var/lib/ci/ledgers/')).toEqual({ kind: 'sqlite', path: '/var/lib/ci/ledgers/' });
    expect(parseLedgerSpec('sqlite:~/ci/ledgers/')).toEqual({ kind: 'sqlite', path: join(homedir(), 'ci/ledgers/') });
    expect(parseLedgerSpec('sqlite:~')).toEqual({ kind: 'sqlite', path: homedir() });
    expect(parseLedgerSpec('sqlite:///var/lib/ci/l.sqlite')).toEqual({ kind: 'sqlite', path: '/var/lib/ci/l.sqlite' });
    expect(parseLedgerSpec('redis://127.0.0.1:6379/2')).toEqual({ kind: 'redis', url: 'redis://127.0.0.1:6379/2' });
    expect(parseLedgerSpec('rediss://:pw@redis.example')).toMatchObject({ kind: 'redis' });
    expect(parseLedgerSpec('in-process')).toEqual({ kind: 'in-process' });
  });

  it('refuses anything else with a ValidationError naming the forms, a password redacted', () => {
    for (const bad of ['mysql://db', 'sqlite://host/x.sqlite', 'redis://', 'redis-cluster', '', '/tmp/l.sqlite']) {
      expect(() => parseLedgerSpec(bad), bad).toThrow(ValidationError);
    }
    let message = '';
    try {
      parseLedgerSpec('http://user:hunter2@example/');
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/sqlite:\[PATH\].*redis:\/\//);
    expect(message).not.toContain('hunter2');
  });
});

describe('sqlite: paths every process of the host resolves alike (issue 29 item 6)', () => {
  it('a relative path is refused with the absolute path to write instead: processes in other working directories would use other files', () => {
    for (const rel of ['sqlite:rel/', 'sqlite:./', 'sqlite:ledger.sqlite', 'sqlite:../x/']) {
      expect(() => parseLedgerSpec(rel), rel).toThrow(ValidationError);
    }
    expect(() => parseLedgerSpec('sqlite:rel/')).toThrow(`relative: it would resolve against each process's working directory`);
    expect(() => parseLedgerSpec('sqlite:rel/')).toThrow(`Give an absolute path (here: sqlite:${join(process.cwd(), 'rel')}/)`);
    expect(() => parseLedgerSpec('sqlite:./')).toThrow(`(here: sqlite:${process.cwd()}/)`);
  });

  it('~user, :memory: and file: URIs are refused; ~ and ~/ are this user\'s home directory', () => {
    expect(() => parseLedgerSpec('sqlite:~other/x/')).toThrow(/only ~ and ~\/ .* are expanded, not ~user/);
    expect(() => parseLedgerSpec('sqlite::memory:')).toThrow(/in-memory database .* private to one connection/);
    expect(() => parseLedgerSpec('sqlite:file:/tmp/x.sqlite?mode=memory')).toThrow(ValidationError);
    expect(parseLedgerSpec('sqlite:~/x/')).toEqual({ kind: 'sqlite', path: join(homedir(), 'x') + '/' });
  });

  it("QuotaGuard's ledger string and NOVA_GUARD_LEDGER with a relative path: a ValidationError at construction, before any request", async () => {
    const nova = await startNova();
    expect(() => new QuotaGuard(clientFor(nova), { ledger: 'sqlite:rel/' })).toThrow(/relative/);
    process.env.NOVA_GUARD_LEDGER = 'sqlite::memory:';
    expect(() => new QuotaGuard(clientFor(nova), {})).toThrow(/in-memory/);
    expect(nova.requests).toHaveLength(0);
  });

  it('SqliteQuotaLedger path: relative, ~user and :memory: refused before any file is made; ~/ expanded', () => {
    const common = { endpoint: ENDPOINT, projectId: 'p1' };
    expect(() => new SqliteQuotaLedger({ ...common, path: 'rel/dir/' })).toThrow(`SqliteQuotaLedger path "rel/dir/" is relative`);
    expect(() => new SqliteQuotaLedger({ ...common, path: './x.sqlite' })).toThrow(`(here: ${join(process.cwd(), 'x.sqlite')})`);
    expect(() => new SqliteQuotaLedger({ ...common, path: ':memory:' })).toThrow(/in-memory/);
    expect(() => new SqliteQuotaLedger({ ...common, path: '~nobody/x' })).toThrow(/not ~user/);
    const home = tempDir();
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      const l = new SqliteQuotaLedger({ ...common, path: '~/ledgers/' });
      toClose.push(l);
      expect(l.path, `HOME=${process.env.HOME} homedir()=${homedir()}`).toMatch(new RegExp(`^${join(home, "ledgers")}/`));
    } finally {
      process.env.HOME = saved;
    }
  });
});

describe('openLedger', () => {
  it('undefined: NOVA_GUARD_LEDGER of env when set, else undefined (the default in-process ledger)', async () => {
    expect(await openLedger(undefined, { env: {} })).toBeUndefined();
    const dir = tempDir();
    const l = await openLedger(undefined, { env: { NOVA_GUARD_LEDGER: `sqlite:${dir}/` }, endpoint: ENDPOINT, projectId: 'p1' });
    toClose.push(l!);
    expect(l).toBeInstanceOf(SqliteQuotaLedger);
    expect((l as SqliteQuotaLedger).path.startsWith(dir)).toBe(true);
    expect(await openLedger('in-process', { env: { NOVA_GUARD_LEDGER: 'sqlite:' } })).toBeUndefined();
  });

  it('a QuotaLedger object is returned as it is; sqlite: opens a SqliteQuotaLedger for the client endpoint and project', async () => {
    const mine: QuotaLedger = new InProcessQuotaLedger();
    expect(await openLedger(mine, {})).toBe(mine);
    const nova = await startNova();
    const dir = tempDir();
    const l = (await openLedger(`sqlite:${dir}`, { client: clientFor(nova) })) as SqliteQuotaLedger;
    toClose.push(l);
    expect(l.kind).toBe('sqlite');
    expect(l.scope.projectId).toBe(nova.projectId);
  });

  it('with a client, sqlite: opens through forClient: the fleet watcher is on by default (issue 31); without one, no watcher', async () => {
    const nova = await startNova();
    const dir = tempDir();
    const client = clientFor(nova);
    const l = (await openLedger(`sqlite:${dir}`, { client })) as SqliteQuotaLedger;
    toClose.push(l);
    expect(l.fleetWatcher).toBeDefined();
    expect(client.deleteEngine.fleetAttached).toBe(true);
    const plain = (await openLedger(`sqlite:${dir}`, { endpoint: nova.endpoint, projectId: nova.projectId })) as SqliteQuotaLedger;
    toClose.push(plain);
    expect(plain.fleetWatcher).toBeUndefined();
  });

  it('bad input is refused before any file or connection: a bad URL, an unknown option (named), no project', async () => {
    await expect(openLedger('sqlite:/nonexistent-nova-guard-test/', { endpoint: ENDPOINT, projectId: 'p', bogusOptionName: 1 } as never)).rejects.toThrow(/bogusOptionName/);
    await expect(openLedger('redis:/nohost', { endpoint: ENDPOINT, projectId: 'p' })).rejects.toThrow(ValidationError);
    await expect(openLedger('sqlite:', { endpoint: ENDPOINT, projectID: 'p' } as never)).rejects.toThrow(/projectID.*projectId/);
    await expect(openLedger('sqlite:/nonexistent-nova-guard/x.sqlite', { endpoint: ENDPOINT })).rejects.toThrow(/projectId/);
  });
});

describe("QuotaGuard's ledger as a string", () => {
  it("ledger: 'sqlite:DIR' opens the host's SQLite ledger before the first request, creates through it, and close() closes it", async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    const dir = tempDir();
    const guard = new QuotaGuard(clientFor(nova), { ledger: `sqlite:${dir}`, waitForActive: false });
    const server = await guard.createServer({ name: 'a', flavorRef: '2', imageRef: 'img', networks: 'none' });
    expect(nova.getServerState(server.id)?.metadata?.['nova-guard-token']).toBeDefined();
    expect(guard.options.ledger?.kind).toBe('sqlite');
    expect(readdirSync(dir).filter((f) => f.endsWith('.sqlite'))).toHaveLength(1);
    // A second guard (another client, as another process would) on the same file sees the claim or its count.
    const other = (await openLedger(`sqlite:${dir}`, { client: clientFor(nova) })) as SqliteQuotaLedger;
    toClose.push(other);
    expect(other.path).toBe(join(dir, readdirSync(dir).find((f) => f.endsWith('.sqlite'))!));
    await guard.close();
    await expect(guard.options.ledger!.peek(async () => ({ absolute: {}, requestId: undefined }), undefined)).rejects.toThrow(/closed/);
  });

  it("ledger: 'sqlite:DIR' and NOVA_GUARD_LEDGER join the fleet watcher with the guard's client by default (issue 31): its delete waits read the fleet", async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    const client = clientFor(nova);
    const guard = new QuotaGuard(client, { ledger: `sqlite:${tempDir()}`, waitForActive: false });
    toClose.push(guard);
    expect(client.deleteEngine.fleetAttached).toBe(false);
    await guard.createServer({ name: 'a', flavorRef: '2', imageRef: 'img', networks: 'none' });
    expect(client.deleteEngine.fleetAttached).toBe(true);
    process.env.NOVA_GUARD_LEDGER = `sqlite:${tempDir()}`;
    const fromEnv = clientFor(nova);
    const guard2 = new QuotaGuard(fromEnv, { waitForActive: false });
    toClose.push(guard2);
    await guard2.createServer({ name: 'b', flavorRef: '2', imageRef: 'img', networks: 'none' });
    expect(fromEnv.deleteEngine.fleetAttached).toBe(true);
    await guard.close();
    expect(client.deleteEngine.fleetAttached).toBe(false);
  });

  it("a ledger opened from a string answers everReached as the opened ledger: false before it opens, true once a SQLite file is open (the guard then waits for it through an outage)", async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    const guard = new QuotaGuard(clientFor(nova), { ledger: `sqlite:${tempDir()}`, waitForActive: false });
    const ledger = guard.options.ledger!;
    expect(ledger.everReached()).toBe(false);
    await guard.createServer({ name: 'a', flavorRef: '2', imageRef: 'img', networks: 'none' });
    expect(ledger.everReached()).toBe(true);
    await guard.close();
  });

  it('a sqlite: path that cannot be created (under a file) is a setup error, not a ledger down: the create rejects at once with a LedgerConfigError (test/ledgers/ledgerConfig.test.ts has the rest)', async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'not a directory');
    const guard = new QuotaGuard(clientFor(nova), { ledger: `sqlite:${file}/x/`, waitForActive: false, maxWaitMs: 60_000 });
    const started = Date.now();
    await expect(guard.createServer({ name: 'a', flavorRef: '2', imageRef: 'img', networks: 'none' })).rejects.toBeInstanceOf(LedgerConfigError);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(guard.stats.ledgerOutages).toBe(0);
    await guard.close();
  });

  it('NOVA_GUARD_LEDGER is read when no ledger is given; a bad one is a ValidationError at construction, before any request', async () => {
    const nova = await startNova();
    process.env.NOVA_GUARD_LEDGER = 'mysql://db';
    expect(() => new QuotaGuard(clientFor(nova))).toThrow(/NOVA_GUARD_LEDGER: a ledger must be/);
    expect(() => new QuotaGuard(clientFor(nova), { ledger: 'redis://:s3cret@' })).toThrow(ValidationError);
    expect(nova.requests).toEqual([]);
    process.env.NOVA_GUARD_LEDGER = `sqlite:${tempDir()}`;
    const guard = new QuotaGuard(clientFor(nova));
    toClose.push(guard);
    expect(guard.options.ledger?.kind).toBe('sqlite');
    expect(inspect(guard.options.ledger)).not.toContain('sqlite:');
  });
});

/** The password and each piece of it of 4 characters or more. */
function secretPieces(secret: string): string[] {
  const out = [secret];
  for (let i = 0; i + 4 <= secret.length; i++) out.push(secret.slice(i, i + 4));
  return out;
}

/** Every way an error may be shown: message, stack, inspected (all of it), JSON. */
function everyView(error: unknown): string {
  const e = error as Error;
  return [e.message, e.stack ?? '', inspect(e, { depth: Infinity, showHidden: true }), JSON.stringify(e), JSON.stringify(Object.getOwnPropertyDescriptors(e))].join('\n');
}

/** What parseLedgerSpec(spec) throws (fails the test when it throws nothing). */
function thrownBy(spec: string): unknown {
  try {
    parseLedgerSpec(spec);
  } catch (error) {
    return error;
  }
  throw new Error(`parseLedgerSpec(${JSON.stringify(spec)}) threw nothing`);
}

describe('a Redis ledger URL: its user info never shown, a URL that can never work refused before any connection', () => {
  // (no piece of these is a word of the messages: 'pass' would be found in 'password')
  const PASSWORDS = ['my secret pw', 'quo"te"p4ss', "single'quote", 'angle<br>acket', 'new\nline\np4ss'];
  it('no host: the password with a space, a quote, <, > or a newline is not in the ValidationError (message, stack, inspect, JSON)', () => {
    for (const pw of PASSWORDS) {
      for (const spec of [`redis://:${pw}@`, `rediss://user:${pw}@`, ` redis://:${pw}@ `]) {
        const e = thrownBy(spec);
        expect(e, spec).toBeInstanceOf(ValidationError);
        expect((e as Error).message).toMatch(/the Redis ledger URL "rediss?:\/\/\[REDACTED\]@" (has no host|has user info that does not percent-decode)/);
        const all = everyView(e);
        for (const p of secretPieces(pw)) expect(all, `${JSON.stringify(spec)}: ${JSON.stringify(p)}`).not.toContain(p);
      }
    }
  });

  it("an unencoded '/' and '@' in the password: a ValidationError naming the rule, the URL shown without its user info", () => {
    const pw = 's3cr3t@Pr0dPa55w0rdTail/2024';
    const e = thrownBy(`redis://:${pw}@127.0.0.1:6379`);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as Error).message).toContain('the Redis ledger URL "redis://[REDACTED]@127.0.0.1:6379"');
    expect((e as Error).message).toMatch(/a password with '\/', '@', '%'.* must be percent-encoded, e\.g\. encodeURIComponent/);
    for (const p of secretPieces(pw)) expect(everyView(e)).not.toContain(p);
    // encoded, the same password is taken
    expect(parseLedgerSpec(`redis://:${encodeURIComponent(pw)}@127.0.0.1:6379/2`)).toEqual({ kind: 'redis', url: `redis://:${encodeURIComponent(pw)}@127.0.0.1:6379/2` });
  });

  it("a raw '%', a '#' or '?' in the password, a control character: a ValidationError naming the rule", () => {
    for (const [spec, pw] of [
      ['redis://:100%sure@redis.example', '100%sure'],
      ['redis://:pa55#w0rd1@redis.example:6379', 'pa55#w0rd1'],
      ['redis://:pa55?w0rd1@redis.example:6379', 'pa55?w0rd1'],
      ['redis://:tab\tp4ss@redis.example', 'tab\tp4ss'],
      ['redis://:abc%zzdef@redis.example', 'abc%zzdef'],
    ] as const) {
      const e = thrownBy(spec);
      expect(e, spec).toBeInstanceOf(ValidationError);
      expect((e as Error).message, spec).toMatch(/must be percent-encoded, e\.g\. encodeURIComponent/);
      for (const p of secretPieces(pw)) expect(everyView(e), `${spec}: ${p}`).not.toContain(p);
    }
  });

  it('the path is empty, / or /DB; no fragment; no query other than ?family=4|6', () => {
    for (const ok of ['redis://h', 'redis://h/', 'redis://h:6379/15', 'rediss://u:p%2Fw@h:1/0', 'redis://[::1]:6379/1', 'redis://h/?family=6', 'redis://:a:b@h']) {
      expect(parseLedgerSpec(ok), ok).toMatchObject({ kind: 'redis', url: ok });
    }
    for (const [bad, rule] of [
      ['redis://h/db1', /path that is not \/DB/],
      ['redis://h/1/2', /path that is not \/DB/],
      ['redis://h:6379#frag', /fragment/],
      ['redis://h?password=x', /query parameter "password"/],
      ['redis://h?family=5', /family/],
      ['redis://h:0', /port/],
      ['redis://h:99999', /HOST\[:PORT\]/],
    ] as const) {
      expect(() => parseLedgerSpec(bad), bad).toThrow(ValidationError);
      expect(() => parseLedgerSpec(bad), bad).toThrow(rule);
    }
    // a password without its host: not shown either
    const e = thrownBy('redis://:Sup3rS3cr3tV4lu3');
    for (const p of secretPieces('Sup3rS3cr3tV4lu3')) expect(everyView(e)).not.toContain(p);
  });

  it('QuotaGuard and RedisQuotaLedger refuse it at construction: no request, nothing of the password in the error or the log lines', async () => {
    const { pino } = await import('pino');
    const { RedisQuotaLedger } = await import('../../src/redis/index.js');
    const lines: string[] = [];
    const logger = pino({ level: 'trace' }, { write: (l: string) => void lines.push(l) });
    const nova = await startNova();
    const pw = 's3cr3t@Pr0dPa55w0rdTail/2024';
    for (const url of [`redis://:${pw}@127.0.0.1:6379`, 'redis://:100%sure@127.0.0.1:6379', 'redis://:my secret pw@']) {
      let error: unknown;
      try {
        new QuotaGuard(clientFor(nova), { ledger: url, logger });
      } catch (e) {
        error = e;
      }
      expect(error, url).toBeInstanceOf(ValidationError);
      let direct: unknown;
      try {
        new RedisQuotaLedger({ url, endpoint: ENDPOINT, projectId: 'p', logger });
      } catch (e) {
        direct = e;
      }
      expect(direct, url).toBeInstanceOf(ValidationError);
      const all = `${everyView(error)}\n${everyView(direct)}\n${lines.join('\n')}`;
      for (const p of [...secretPieces(pw), ...secretPieces('100%sure'), ...secretPieces('my secret pw')]) expect(all).not.toContain(p);
    }
    expect(nova.requests).toEqual([]);
  });
});

describe('sqlite: a path that is not a ledger file is a setup error, not an outage', () => {
  it("sqlite:/dev/null: openLedger throws a LedgerConfigError ('unusable-path', not a regular file) at once; nothing made next to it", async () => {
    const before = existsSync('/dev/null-journal');
    const started = Date.now();
    const e = await openLedger('sqlite:/dev/null', { endpoint: ENDPOINT, projectId: 'p1' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(LedgerConfigError);
    expect(e).toMatchObject({ kind: 'sqlite', reason: 'unusable-path' });
    expect((e as Error).message).toMatch(/\/dev\/null is not a regular file \(a character device\)/);
    expect(Date.now() - started).toBeLessThan(3000);
    if (!before) expect(existsSync('/dev/null-journal')).toBe(false);
  });

  it("a text file (as sqlite:/etc/passwd): a LedgerConfigError ('unusable-path') saying it is not a nova-guard ledger file; the first create rejects with it, no POST, no fallback, no file made", async () => {
    const dir = tempDir();
    const file = join(dir, 'passwd');
    writeFileSync(file, 'root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n');
    const e = await openLedger(`sqlite:${file}`, { endpoint: ENDPOINT, projectId: 'p1' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(LedgerConfigError);
    expect(e).toMatchObject({ kind: 'sqlite', reason: 'unusable-path' });
    expect((e as Error).message).toContain(`the SQLite ledger ${file} is not a nova-guard ledger file (not a SQLite database): name another path`);
    const nova = await startNova({ maxTotalCores: 4 });
    const guard = new QuotaGuard(clientFor(nova), { ledger: `sqlite:${file}`, waitForActive: false, maxWaitMs: 60_000 });
    toClose.push(guard);
    const started = Date.now();
    await expect(guard.createServer({ name: 'a', flavorRef: '2', imageRef: 'img', networks: 'none' })).rejects.toBeInstanceOf(LedgerConfigError);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(guard.stats.ledgerOutages).toBe(0);
    expect(nova.requestsTo('POST', /^\/servers$/)).toHaveLength(0);
    expect(readdirSync(dir)).toEqual(['passwd']);
  });
});
