/**
 * A Redis ledger URL never reached (a host name that does not resolve, a closed port) through the
 * library: degraded mode, never a lost job (the create goes on alone), and what it says is true:
 * one warning, naming the URL without its password, the real wait (3000 ms, which the waits add up
 * to: before, the backoff's two steps made it 5-7 s while the warning said 3000), and for ENOTFOUND
 * where to check the host name (the `ledger` option or NOVA_GUARD_LEDGER). No redis-server is
 * needed: nothing answers. Real clock (ioredis), generous bounds.
 */
import { inspect } from 'node:util';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { QuotaGuard, type QuotaGuardOptions, type QuotaWaitInfo } from '../../src/guard/index.js';
import { FAST, body, clientFor, startNova } from '../guard/fixtures.js';
import { closedPort } from '../helpers.js';

const PASSWORD = 's3cr3t-pw-4d2e';
/** The defaults' backoff: 2 s, then 4 s (FAST's short steps would hide an overshoot). */
const DEFAULT_BACKOFF = { minDelayMs: 1000, baseDelayMs: 2000, maxDelayMs: 60_000, maxWaitMs: 60_000 };
const ALONE = "admit with the in-process ledger (this process alone; Nova's quota check decides the rest) until it is back";
const envBefore = process.env['NOVA_GUARD_LEDGER'];

afterEach(() => {
  if (envBefore === undefined) delete process.env['NOVA_GUARD_LEDGER'];
  else process.env['NOVA_GUARD_LEDGER'] = envBefore;
});

/** One create through a guard on `ledger` (undefined: NOVA_GUARD_LEDGER), with what it said. */
async function createOn(ledger: string | undefined) {
  const nova = await startNova({ maxTotalCores: 10 });
  const lines: string[] = [];
  const warned: string[] = [];
  const waits: QuotaWaitInfo[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push((JSON.parse(l) as { msg: string }).msg) });
  const options: QuotaGuardOptions = { ...FAST, ...DEFAULT_BACKOFF, logger, onWarning: (m) => warned.push(m), onWait: (w) => void waits.push(w) };
  if (ledger !== undefined) options.ledger = ledger;
  const guard = new QuotaGuard(clientFor(nova), options);
  const server = await guard.createServer(body('never-reached'));
  const shown = inspect(guard, { depth: 6 });
  await guard.close();
  return { server, lines, warned, waits, shown, stats: guard.stats };
}

/** `lines` as they are, with the time left of the never-reached wait as `N` (on the real clock it is counted from the ledger's first failure, a few ms before the warning); and the largest N. */
function withWaitLeft(lines: readonly string[]): { lines: string[]; leftMs: number } {
  let leftMs = 0;
  const out = lines.map((l) =>
    l.replace(/creates wait up to (\d+) ms more/, (_all, n: string) => {
      leftMs = Math.max(leftMs, Number(n));
      return 'creates wait up to N ms more';
    }),
  );
  return { lines: out, leftMs };
}

function expectNoPassword(texts: readonly string[]): void {
  for (const text of texts) for (let i = 0; i + 4 <= PASSWORD.length; i++) expect(text).not.toContain(PASSWORD.slice(i, i + 4));
}

describe('a Redis ledger URL never reached: degraded, and every message true', () => {
  it('ENOTFOUND (`ledger` option, a password in the URL): the create goes on after the 3000 ms the one warning says; it names the redacted URL and the option to check', async () => {
    const r = await createOn(`redis://:${PASSWORD}@nosuchhost.invalid:6379`);
    expect(r.server.id).toBeDefined();
    expect(r.stats.ledgerOutages).toBe(1);
    // the waits end at the 3000 ms the warning says (before: 2 s + 4 s of backoff, jittered)
    const said = withWaitLeft([...r.lines, ...r.warned]);
    expect(said.leftMs).toBeGreaterThan(2000);
    expect(said.leftMs).toBeLessThanOrEqual(3000);
    expect(r.waits.length).toBeGreaterThan(0);
    expect(r.waits.reduce((sum, w) => sum + w.delayMs, 0)).toBeLessThanOrEqual(said.leftMs);
    const cause = 'Redis ledger at redis://[REDACTED]@nosuchhost.invalid:6379: Redis cannot be reached (getaddrinfo ENOTFOUND nosuchhost.invalid)';
    const hint = '; its host name does not resolve: check it in the `ledger` option';
    expect(said.lines).toEqual([
      `quota ledger (redis) is down: ${cause}${hint}; skipping it and probing it from 1000 ms to every 5000 ms; it was never reached: creates wait up to N ms more for it (it may be starting), then ${ALONE}`,
      `quota ledger (redis) failed (${cause}${hint}): creates wait up to N ms more for it (it may be starting), then ${ALONE}`,
    ]);
    expectNoPassword([...r.lines, ...r.warned, JSON.stringify(r.waits), r.shown]);
  }, 30_000);

  it('ENOTFOUND from NOVA_GUARD_LEDGER: the warning names NOVA_GUARD_LEDGER as the place to check', async () => {
    process.env['NOVA_GUARD_LEDGER'] = `redis://:${PASSWORD}@nosuchhost.invalid:6379`;
    const r = await createOn(undefined);
    expect(r.server.id).toBeDefined();
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toContain('(getaddrinfo ENOTFOUND nosuchhost.invalid); its host name does not resolve: check it in NOVA_GUARD_LEDGER; skipping it');
    expectNoPassword([...r.lines, ...r.warned]);
  }, 30_000);

  it('ECONNREFUSED (a closed port, a password in the URL): the same wait and words, no host-name hint, no password', async () => {
    const port = await closedPort();
    const r = await createOn(`redis://:${PASSWORD}@127.0.0.1:${port}`);
    expect(r.server.id).toBeDefined();
    const said = withWaitLeft(r.lines);
    expect(said.leftMs).toBeGreaterThan(2000);
    expect(r.waits.reduce((sum, w) => sum + w.delayMs, 0)).toBeLessThanOrEqual(said.leftMs);
    const cause = `Redis ledger at redis://[REDACTED]@127.0.0.1:${port}: Redis cannot be reached (connect ECONNREFUSED 127.0.0.1:${port})`;
    expect(said.lines).toEqual([
      `quota ledger (redis) is down: ${cause}; skipping it and probing it from 1000 ms to every 5000 ms; it was never reached: creates wait up to N ms more for it (it may be starting), then ${ALONE}`,
    ]);
    expectNoPassword([...r.lines, ...r.warned, JSON.stringify(r.waits), r.shown]);
  }, 30_000);
});
