/**
 * A refused Nova port through the built binary (issue 32, item 6): the command fails in about a
 * second (it took 5.6-6.8 s: the client's whole retry policy) with "is Nova running at URL?".
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, runPiped } from './binary.js';
import { closedPort } from '../helpers.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

describe('a refused Nova port', () => {
  it.each([
    [['limits'], '/limits'],
    [['server', 'list'], '/servers/detail'],
    [['quota', 'audit'], '/limits'],
  ])('%j fails in about a second, asking whether Nova runs at the endpoint', async (argv, path) => {
    const endpoint = `http://127.0.0.1:${await closedPort()}/v2.1`;
    const started = performance.now();
    const r = await runPiped(argv, { OS_ENDPOINT: endpoint, OS_TOKEN: 'secret-token-value' });
    const ms = performance.now() - started;
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(
      new RegExp(`GET ${endpoint.replace(/\./g, '\\.')}${path} failed without a response: ECONNREFUSED; is Nova running at ${endpoint.replace(/\./g, '\\.')}\\?$`),
    );
    expect(r.stderr).not.toContain('secret-token-value');
    // The notice counts the attempts really made, and promises no total: it said "(attempt 2 of 5)",
    // "(attempt 3 of 5)", then failed (refusedFirstContactMs cut the retries short).
    const waits = r.stderr.split('\n').filter((l) => l.startsWith('waiting for nova'));
    expect(waits).toEqual(waits.map((_, i) => `waiting for nova at ${endpoint} ... (attempt ${i + 2}, connection refused)`));
    expect(r.stderr).not.toMatch(/ of 5\)/);
    // The process's start included (about 0.3-1.5 s here); the old retries alone waited at least 3.75 s.
    expect(ms).toBeLessThan(3_500);
  });

  it('server delete: the failure line asks it too', async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}/v2.1`;
    const r = await runPiped(['server', 'delete', '--wait', 'some-server'], { OS_ENDPOINT: endpoint, OS_TOKEN: 't' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`Failed to delete server with name or ID 'some-server': GET ${endpoint}/servers/detail failed without a response: ECONNREFUSED; is Nova running at ${endpoint}?`);
  });
});

describe('a refused Nova port, server delete by id (no lookup: the DELETE is the first request)', () => {
  it('--wait: gives up in about a second (the deletion retried a refused DELETE until its 5 min timeout), exit 1, asking whether Nova runs', async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}/v2.1`;
    const id = '8a2f6e1c-3b4d-4e5f-9a6b-7c8d9e0f1a2b';
    const started = performance.now();
    const r = await runPiped(['server', 'delete', '--wait', id], { OS_ENDPOINT: endpoint, OS_TOKEN: 't' });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      `Failed to delete server with name or ID '${id}': DELETE ${endpoint}/servers/${id} failed without a response: ECONNREFUSED; is Nova running at ${endpoint}?`,
      '1 of 1 servers failed to delete.',
    ]);
  });
});
