/**
 * A redirect (an http endpoint that a proxy sends to https, a Keystone URL without /v3 behind a
 * proxy) is never followed with the token or password, and the error says where it pointed.
 */
import { describe, expect, it } from 'vitest';
import { KeystoneAuth, NovaApiError, NovaClient } from '../../src/index.js';
import { reply, scripted } from './scripted.js';

describe('redirects', () => {
  it('Nova: a 301 to https names the new URL, one request, not retried', async () => {
    const s = await scripted((q, res) => reply(res, 301, '<html>Moved</html>', { Location: `https://nova.example.org${q.url}`, 'Content-Type': 'text/html' }));
    const e = await new NovaClient({ microversion: '2.1', endpoint: s.endpoint, token: 'gAAAAA-secret-token' }).getLimits().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(NovaApiError);
    expect((e as NovaApiError).status).toBe(301);
    expect((e as Error).message).toBe(
      `HTTP 301 from GET ${s.endpoint}/limits: redirected to https://nova.example.org/v2.1/limits; nova-guard does not follow redirects (credentials would go along): use that URL`,
    );
    expect(s.seen).toHaveLength(1);
  });

  it('Keystone: a 307 is not followed with the password', async () => {
    const s = await scripted((_q, res) => reply(res, 307, '', { Location: 'https://evil.example/v3/auth/tokens' }));
    const auth = new KeystoneAuth({ authUrl: s.url, username: 'ci', password: 'pw-secret-1', projectName: 'p' });
    const e = await auth.getToken().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(NovaApiError);
    expect((e as Error).message).toContain('redirected to https://evil.example/v3/auth/tokens; nova-guard does not follow redirects');
    expect((e as Error).message).not.toContain('pw-secret-1');
    expect(s.seen).toHaveLength(1);
  });
});
