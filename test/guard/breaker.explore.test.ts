import { it, expect } from 'vitest';
import { settle, useFakeClock } from '../helpers.js';
import { body, guardFor, startNova } from './fixtures.js';

useFakeClock();

it('unwatched refresh amplification', async () => {
  const nova = await startNova({ maxTotalCores: 4, buildDelayMs: 5000 });
  const guard = guardFor(nova, { waitForActive: false, maxWaitMs: 2000, activeIntervalMs: 100 });
  for (let i = 0; i < 4; i++) await settle(guard.createServer(body(`u${i}`, '1')));
  nova.clearRequests();
  const calls = Array.from({ length: 20 }, (_, i) => guard.createServer(body(`w${i}`, '1')).then(() => 'ok', (e: Error) => e.name));
  const r = await settle(Promise.all(calls));
  const gets = nova.requests.filter((q) => q.method === 'GET' && /^\/servers\/[^/]+$/.test(q.path)).length;
  console.log('RESULT', JSON.stringify(r.reduce<Record<string, number>>((m, x) => ((m[x] = (m[x] ?? 0) + 1), m), {})), 'limits', nova.requestsTo('GET', '/limits').length, 'server GETs', gets);
  await guard.close();
  expect(1).toBe(1);
}, 30000);
