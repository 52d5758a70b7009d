/**
 * A secret echoed in the `x-openstack-request-id` (or `x-compute-request-id`) response header, as a
 * misconfigured proxy or echo service may send it, never reaches an error (message, fields,
 * util.inspect, JSON), a log line or a result: a request id of OpenStack's form (`req-<uuid>`) is kept
 * verbatim, any other one is redacted of the caller's secrets. Nova (FakeNova) and Keystone.
 */
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { pino, type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { KeystoneAuth, NovaApiError } from '../../src/index.js';
import { clientFor, rejection, startNova } from '../helpers.js';
import { reply, scripted } from '../adversarial/scripted.js';

const TOKEN = 'gAAAAA-echoed-secret-token-0123456789';
const PASSWORD = 'pw-echoed-Secret-0123456789';

function capture(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino(
    { level: 'trace' },
    new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    }),
  );
  return { logger, lines };
}

/** Every text form of `e` a caller or a log may show. */
function texts(e: Error): string[] {
  const fields = Object.fromEntries(Object.getOwnPropertyNames(e).map((k) => [k, String((e as unknown as Record<string, unknown>)[k])]));
  return [e.message, String(e.stack), JSON.stringify(e), inspect(e, { depth: 10, showHidden: true }), JSON.stringify(fields), String(e)];
}

describe('a token echoed in the request id header of a Nova response', () => {
  it.each([
    ['the token', 500, TOKEN],
    ['text around the token', 500, `echo X-Auth-Token: ${TOKEN};`],
    ['the token', 404, TOKEN],
  ] as const)('%s as x-openstack-request-id on a %i: no trace of the token in the message, fields, inspect, JSON or pino log lines', async (_what, status, value) => {
    const nova = await startNova();
    const { logger, lines } = capture();
    const client = clientFor(nova, { token: TOKEN, logger, retry: false });
    const headers = { 'x-openstack-request-id': value };
    nova.inject({ method: 'GET', path: '/limits', status, headers });
    const e = await rejection(client.getLimits());
    expect(e).toBeInstanceOf(NovaApiError);
    expect((e as NovaApiError).requestId).toContain('[REDACTED]');
    for (const t of [...texts(e), ...lines]) expect(t).not.toContain(TOKEN);
    expect(lines.length).toBeGreaterThan(0);
  });

  it("a request id of OpenStack's form (req-<uuid>) is kept verbatim", async () => {
    const nova = await startNova();
    const client = clientFor(nova, { retry: false });
    nova.inject({ method: 'GET', path: '/limits', status: 500 });
    const e = (await rejection(client.getLimits())) as NovaApiError;
    expect(e.requestId).toMatch(/^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});

describe('a password echoed in the request id header of a Keystone error', () => {
  it('no trace of the password in the error or the log lines', async () => {
    const s = await scripted((_q, res) => reply(res, 500, { error: { code: 500, title: 'Internal Server Error', message: 'boom' } }, { 'x-openstack-request-id': PASSWORD }));
    const { logger, lines } = capture();
    const auth = new KeystoneAuth({ authUrl: s.url, username: 'ci', password: PASSWORD, userDomainName: 'Default', projectName: 'p', projectDomainName: 'Default', logger });
    const e = await rejection(auth.getToken());
    for (const t of [...texts(e), ...lines]) expect(t).not.toContain(PASSWORD);
  });
});
