/**
 * Redaction in one place (the transport): secrets leave a body before it is cut to an excerpt,
 * before HTML tags are stripped, before Nova's message and fault key are read, and before a 2xx
 * body of the wrong shape is quoted.
 */
import { describe, expect, it } from 'vitest';
import { KeystoneAuth, NovaApiError, NovaClient } from '../../src/index.js';
import { scriptedAdapter, type ScriptedReply } from './scriptedAdapter.js';

const TOKEN = 'gAAAAA-0123456789-secret-token-value';

function client(reply: ScriptedReply): NovaClient {
  const { adapter } = scriptedAdapter(() => reply);
  return new NovaClient({ endpoint: 'http://nova.test/v2.1', token: TOKEN, adapter, retry: { retries: 0 } });
}

async function messageOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(NovaApiError);
  return (e as Error).message;
}

/** No 8-character piece of `secret` in `text`. */
function expectNoPieceOf(text: string, secret: string): void {
  for (let i = 0; i + 8 <= secret.length; i++) expect(text, `piece ${secret.slice(i, i + 8)}`).not.toContain(secret.slice(i, i + 8));
}

describe('redaction before an excerpt is cut', () => {
  it('a secret across the 200-character cut of an excerpt does not show in part', async () => {
    const body = `${'x'.repeat(180)} token=${TOKEN} and more`;
    const m = await messageOf(client({ status: 400, body, headers: { 'content-type': 'text/plain' } }).getLimits());
    expect(m).toContain('token=[REDACTED]');
    expectNoPieceOf(m, TOKEN);
  });

  it('a secret with an HTML-like part is removed before tags are stripped', async () => {
    const password = 'pw<b>secret-4242';
    const { adapter } = scriptedAdapter(() => ({ status: 400, body: `<html><body>bad password ${password}</body></html>`, headers: { 'content-type': 'text/html' } }));
    const auth = new KeystoneAuth({ authUrl: 'http://keystone.test', username: 'u', password, projectName: 'p', adapter });
    const e = (await auth.getToken().catch((x: unknown) => x)) as Error;
    expect(e.message).toContain('bad password [REDACTED]');
    expect(e.message).not.toContain('secret-4242');
  });

  it('Nova\'s message and fault key are read from the redacted body', async () => {
    const m = await messageOf(client({ status: 409, body: { conflictingRequest: { code: 409, message: `echo: X-Auth-Token: ${TOKEN}` } } }).getLimits());
    expect(m).toBe('echo: X-Auth-Token: [REDACTED]');
  });

  it('a 2xx body of the wrong shape that echoes the token is quoted without it', async () => {
    const m = await messageOf(client({ status: 200, body: { headers: { 'X-Auth-Token': TOKEN } } }).getLimits());
    expect(m).toContain('with an unexpected body: expected a JSON object with a "limits" object');
    expect(m).toContain('[REDACTED]');
    expectNoPieceOf(m, TOKEN);
  });
});
