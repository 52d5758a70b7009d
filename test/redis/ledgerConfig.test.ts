/**
 * A Redis ledger whose credentials Redis refuses is a setup error (issue 32 item 1): a real
 * redis-server with `requirepass`; a guard on `ledger: 'redis://:WRONG@…'` (or no password) rejects
 * its first create with a LedgerConfigError naming the fix, at once and before any POST, with no
 * password anywhere and no "connection lost" warning; the CLI prints that one line and exits 1. A
 * Redis that refuses the connection (down, never reached) stays an outage: today's degraded mode.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LedgerConfigError } from '../../src/errors/index.js';
import { QuotaGuard, type QuotaGuardOptions } from '../../src/guard/index.js';
import { DEFAULT_IMAGES } from '../../src/testing/index.js';
import { ensureBuilt, runPiped } from '../cli/binary.js';
import { FAST, body, clientFor, posts, startNova } from '../guard/fixtures.js';
import { closedPort } from '../helpers.js';
import { haveRedis, RedisServer, skipReason } from './support.js';

const CHILD = fileURLToPath(new URL('../ledgers/guardChild.mjs', import.meta.url));
const PASSWORD = 'right-pw-7f3a';
const WRONG = 'wrong-pw-9c1e';

/** A guard on `ledger` and the messages of its logger (warn and above). */
function guardOn(nova: Awaited<ReturnType<typeof startNova>>, ledger: string, options: QuotaGuardOptions = {}): { guard: QuotaGuard; lines: string[] } {
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push((JSON.parse(l) as { msg: string }).msg) });
  return { guard: new QuotaGuard(clientFor(nova), { ...FAST, ledger, logger, maxWaitMs: 60_000, ...options }), lines };
}

describe.skipIf(!haveRedis)(`a Redis ledger that cannot work${haveRedis ? '' : ` (${skipReason})`}`, () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start(['--requirepass', PASSWORD]);
    await ensureBuilt();
  }, 180_000);
  afterAll(async () => {
    await server?.kill();
  });
  const url = (password: string | undefined): string => `redis://${password === undefined ? '' : `:${password}@`}127.0.0.1:${server.port}`;

  it.each([
    ['a wrong password (WRONGPASS)', WRONG, /WRONGPASS/],
    ['no password where Redis asks for one (NOAUTH)', undefined, /NOAUTH/],
  ])('%s: the first create and headroom reject at once with a LedgerConfigError naming the fix; no POST, no outage, no password, no "connection lost"', async (_name, password, code) => {
    const nova = await startNova({ maxTotalCores: 10 });
    const { guard, lines } = guardOn(nova, url(password));
    const started = performance.now();
    const e = await guard.createServer(body('a')).then(
      () => undefined,
      (err: unknown) => err as LedgerConfigError,
    );
    const ms = performance.now() - started;
    expect(e).toBeInstanceOf(LedgerConfigError);
    expect(e).toMatchObject({ kind: 'redis', reason: 'credentials-refused' });
    expect(e!.message).toMatch(code);
    expect(e!.message).toMatch(/^the Redis ledger cannot work: Redis refused its credentials .*Fix: check the password in the ledger URL/);
    // before: "connection lost (ioredis reconnects)", then the create went ahead after about 10 s
    expect(ms).toBeLessThan(2500);
    await expect(guard.headroom()).rejects.toBeInstanceOf(LedgerConfigError);
    expect(posts(nova)).toHaveLength(0);
    expect(guard.stats).toMatchObject({ ledgerFallbacks: 0, ledgerOutages: 0 });
    for (const text of [e!.message, inspect(e, { depth: 5 }), JSON.stringify(e), inspect(guard, { depth: 5 }), ...lines]) {
      expect(text).not.toContain(WRONG);
      expect(text).not.toContain(PASSWORD);
    }
    expect(lines).toEqual([]);
    await guard.close();
  }, 30_000);

  it("the right password: the ledger works (the control); ledgerFallback: 'in-process' with the wrong one goes on at once with one warning", async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const ok = guardOn(nova, url(PASSWORD));
    await ok.guard.createServer(body('right'));
    expect(ok.guard.stats).toMatchObject({ succeeded: 1, ledgerFallbacks: 0, ledgerOutages: 0 });
    expect(ok.guard.options.ledger?.everReached()).toBe(true);
    await ok.guard.close();
    const warned: string[] = [];
    const soft = guardOn(nova, url(WRONG), { ledgerFallback: 'in-process', onWarning: (m) => warned.push(m) });
    const started = performance.now();
    await soft.guard.createServer(body('soft'));
    expect(performance.now() - started).toBeLessThan(2500);
    expect(soft.guard.stats).toMatchObject({ succeeded: 1, ledgerFallbacks: 1, ledgerOutages: 0 });
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/Redis refused its credentials \(WRONGPASS/);
    expect(warned[0]).not.toContain(WRONG);
    await soft.guard.close();
  }, 30_000);

  it('a Redis that refuses the connection (down, never reached) stays an outage: the create goes on alone after the never-reached wait, as before', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const { guard } = guardOn(nova, `redis://127.0.0.1:${await closedPort()}`);
    const s = await guard.createServer(body('down'));
    expect(s.id).toBeDefined();
    expect(guard.stats.ledgerOutages).toBe(1);
    expect(guard.stats.ledgerFallbacks).toBeGreaterThanOrEqual(1);
    await guard.close();
  }, 30_000);

  it('the CLI: `server create` with NOVA_GUARD_LEDGER holding a wrong password prints one line, the error, and exits 1; no POST', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const r = await runPiped(['server', 'create', 'x', '--flavor', 'm1.tiny', '--image', DEFAULT_IMAGES[0]!.name, '--nic', 'none'], {
      OS_ENDPOINT: nova.endpoint,
      OS_TOKEN: `admin:${nova.projectId}`,
      NOVA_GUARD_LEDGER: url(WRONG),
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^nova-guard: the Redis ledger cannot work: Redis refused its credentials \(WRONGPASS.*Fix: check the password/);
    expect(r.stderr).not.toContain(WRONG);
    expect(nova.requestsTo('POST', /^\/servers$/)).toHaveLength(0);
  }, 60_000);

  it('a worker pool: concurrent creates all reject with the LedgerConfigError; a caller that leaves the guard unclosed after it still sees its process end (no connection left retrying the password)', async () => {
    const started = performance.now();
    const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn(process.execPath, [CHILD, JSON.stringify({ ledger: url(WRONG), op: 'two-creates', concurrent: true, noClose: true })]);
      let text = '';
      p.stdout.on('data', (d: Buffer) => (text += d.toString()));
      const kill = setTimeout(() => p.kill('SIGKILL'), 20_000);
      p.on('close', (c) => {
        clearTimeout(kill);
        resolve({ code: c, out: text });
      });
    });
    // before, the create went ahead after about 10 s, and the process never ended without close()
    expect(code).toBe(0);
    expect(performance.now() - started).toBeLessThan(15_000);
    const r = JSON.parse(out) as { calls: Array<{ name?: string; reason?: string; message?: string }>; posts: number };
    expect(r.calls).toHaveLength(2);
    for (const c of r.calls) expect(c).toMatchObject({ name: 'LedgerConfigError', reason: 'credentials-refused' });
    expect(r.posts).toBe(0);
    expect(out).not.toContain(WRONG);
  }, 30_000);
});
