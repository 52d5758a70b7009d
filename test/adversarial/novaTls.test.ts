/**
 * NovaClient's caCert adds trust like OS_CACERT does (a path or PEM, on top of Node's CAs): it used
 * to replace Node's CAs (a public-CA Nova failed) and to take a path for PEM text.
 */
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeTestCert, type TestCert } from '../tlsCert.js';
import { ConfigError, NovaClient, NovaNetworkError } from '../../src/index.js';

let certPath: string;
let cert: string;
let key: string;
const servers: https.Server[] = [];

let made: TestCert;
beforeAll(() => {
  made = makeTestCert('nova-guard-adv-tls-');
  ({ certPath, cert, key } = made);
});
afterAll(() => made.remove());
afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** An https "Nova" with the self-signed certificate answering /limits. */
async function httpsNova(): Promise<string> {
  const server = https.createServer({ key, cert }, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"limits": {"rate": [], "absolute": {"maxTotalCores": 7}}}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return `https://127.0.0.1:${(server.address() as { port: number }).port}/v2.1`;
}

describe('NovaClient caCert', () => {
  it('verification is on by default: the self-signed Nova is refused', async () => {
    const endpoint = await httpsNova();
    const e = await new NovaClient({ endpoint, token: 'admin:demo', retry: { retries: 0 } }).getLimits().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(NovaNetworkError);
    expect((e as NovaNetworkError).code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
  });

  it.each([['a path', () => certPath], ['PEM text', () => cert], ['a Buffer', () => Buffer.from(cert)]])('caCert as %s is trusted', async (_what, ca) => {
    const endpoint = await httpsNova();
    const limits = await new NovaClient({ endpoint, token: 'admin:demo', caCert: ca() }).getLimits();
    expect(limits.absolute.maxTotalCores).toBe(7);
  });

  it('caCert is the only CA bundle (openstacksdk verify=<path>), not added to Node\'s CAs', () => {
    const agent = vi.spyOn(https, 'Agent');
    new NovaClient({ endpoint: 'https://127.0.0.1:1/v2.1', token: 'admin:demo', caCert: cert });
    const ca = (agent.mock.calls[0]![0] as https.AgentOptions).ca as string[];
    expect(ca).toEqual([cert]);
    expect(ca).not.toContain(rootCertificates[0]);
  });

  it('a caCert file that cannot be read is a ConfigError naming it', () => {
    expect(() => new NovaClient({ endpoint: 'https://127.0.0.1:1/v2.1', token: 'admin:demo', caCert: '/nonexistent/ca.pem' })).toThrow(ConfigError);
  });
});
