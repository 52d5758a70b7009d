/**
 * `/limits` bodies seen in the field, and flavors without numbers: unknown headroom (or an unknown
 * need) never blocks, never throws and never turns into NaN; the guard warns once and lets Nova's
 * own check decide (the POST, then the quota 403 path). Fake timers, scripted Nova.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { QuotaExceededError } from '../../src/errors/index.js';
import { QuotaGuard, type QuotaGuardOptions } from '../../src/guard/quotaGuard.js';
import { FAST, body } from './fixtures.js';
import { ScriptedNova, onFakeTimers, quota403Reply, type Reply } from './scripted.js';
import { rejection } from '../helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

const MSG = 'Quota exceeded for cores: Requested 2, but already used 20 of 20 cores';

function withLog(nova: ScriptedNova, options: QuotaGuardOptions = {}): { guard: QuotaGuard; warnings: () => string[] } {
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
  const guard = new QuotaGuard(nova.client(), { ...FAST, jitter: 0, baseDelayMs: 100, minDelayMs: 10, maxDelayMs: 1000, waitForActive: false, logger, ...options });
  return { guard, warnings: () => lines.map((l) => (JSON.parse(l) as { msg: string }).msg) };
}

describe('/limits bodies seen in the field', () => {
  it('numeric strings are numbers: "20" used of "20" is headroom 0, never unknown', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    const strings: Reply = { status: 200, body: { limits: { rate: [], absolute: { maxTotalCores: '20', totalCoresUsed: '20', maxTotalInstances: '10', totalInstancesUsed: '0' } } } };
    nova.reply('GET /limits', strings);
    const { guard } = withLog(nova);
    const headroom = await guard.headroom();
    expect(headroom.cores).toEqual({ max: 20, used: 20, inFlight: 0, headroom: 0 });
    expect(headroom.instances.headroom).toBe(10);
  });

  for (const [what, limitsBody] of [
    ['without the limits envelope', { absolute: { maxTotalCores: 20, totalCoresUsed: 0 } }],
    ['an empty object', {}],
    ['limits without absolute', { limits: { rate: [] } }],
    ['an empty absolute block', { limits: { rate: [], absolute: {} } }],
  ] as const) {
    it(`a body ${what}: headroom unknown, one warning, the create is POSTed at once`, async () => {
      vi.useFakeTimers();
      const nova = new ScriptedNova();
      nova.reply('GET /limits', { status: 200, body: limitsBody }, { status: 200, body: limitsBody });
      const { guard, warnings } = withLog(nova);
      const h = await guard.headroom();
      expect([h.cores.headroom, h.ram.headroom, h.instances.headroom]).toEqual([undefined, undefined, undefined]);
      const server = await onFakeTimers(guard.createServer(body('x')));
      expect(server.id).toBe('00000001-0000-4000-8000-000000000000');
      expect(nova.schedule()).toEqual([
        ['GET /limits', 0],
        ['GET /limits', 0],
        ['POST /servers', 0],
      ]);
      expect(warnings().filter((m) => /headroom unknown/.test(m))).toHaveLength(1);
      // waitForActive false: the claim lasts until a later read sees the server out of BUILD.
      expect(guard.inFlightClaims).toBe(1);
    });
  }

  it('unknown headroom and Nova says no: the quota 403 path decides (backoff, bounded by maxAttempts)', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    for (let i = 0; i < 3; i++) nova.reply('GET /limits', { status: 200, body: {} });
    for (let i = 0; i < 3; i++) nova.reply('POST /servers', quota403Reply(MSG));
    const { guard, warnings } = withLog(nova, { maxAttempts: 3 });
    const err = await rejection(onFakeTimers(guard.createServer(body('x'))));
    expect(err).toBeInstanceOf(QuotaExceededError);
    expect(nova.schedule()).toEqual([
      ['GET /limits', 0],
      ['POST /servers', 0],
      ['GET /limits', 100],
      ['POST /servers', 100],
      ['GET /limits', 300],
      ['POST /servers', 300],
    ]);
    expect(warnings().filter((m) => /headroom unknown/.test(m))).toHaveLength(1);
  });
});

describe('a flavor without vcpus', () => {
  it('the cores need is unknown (0, one warning), never NaN in the totals; RAM and instances still count', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('GET /flavors/9', { status: 200, body: { flavor: { id: '9', ram: 512 } } });
    const { guard, warnings } = withLog(nova);
    await onFakeTimers(Promise.all([guard.createServer(body('a', '9')), guard.createServer(body('b', '9'))]));
    expect(nova.posts().map((p) => p.status)).toEqual([202, 202]);
    for (const id of ['00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000']) nova.reply(`GET /servers/${id}`, { status: 200, body: { server: { id, status: 'BUILD' } } });
    const h = await guard.headroom();
    // Two claims held (waitForActive false; both servers still in BUILD): cores 0, RAM 2 × 512.
    expect(h.cores).toEqual({ max: 20, used: 0, inFlight: 0, headroom: 20 });
    expect(h.ram.inFlight).toBe(1024);
    expect(h.instances.inFlight).toBe(2);
    expect(warnings().filter((m) => /flavor 9 has no usable vcpus/.test(m))).toHaveLength(1);
  });

  it('with Nova refusing every POST: exactly maxAttempts POSTs per create, no NaN-driven burst', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.absolute = { maxTotalCores: 4, totalCoresUsed: 4, maxTotalInstances: 10, totalInstancesUsed: 0 };
    nova.reply('GET /flavors/9', { status: 200, body: { flavor: { id: '9', vcpus: 'n/a', ram: 512 } } });
    for (let i = 0; i < 8; i++) nova.reply('POST /servers', quota403Reply(MSG));
    const { guard } = withLog(nova, { maxAttempts: 2 });
    const results = await onFakeTimers(Promise.allSettled([0, 1, 2, 3].map((i) => guard.createServer(body(`w${i}`, '9')))));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expect(nova.posts()).toHaveLength(8);
    expect(guard.stats).toMatchObject({ attempts: 8, quota403s: 8 });
    expect(guard.inFlightClaims).toBe(0);
  });
});
