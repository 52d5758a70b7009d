/**
 * Auth against a real Keystone 22 (Zed, fernet tokens) in front of the real Nova: token issue with a
 * password and an application credential, the compute endpoint from the catalog, 401s, a revoked
 * token renewed once by the client, and Keystone-only policy answers.
 *
 * Runs when the stack was started with REALNOVA_KEYSTONE=real (`REALNOVA_AUTH=keystone` in its env
 * file); under noauth2 vitest reports them as skipped, under a name that says why.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { AuthError, BadRequestError, ForbiddenError, NovaClient } from '../../src/index.js';
import { KeystoneAuth } from '../../src/auth/keystone.js';
import { project, waitForGone } from './support/realNova.js';

const keystone = process.env['REALNOVA_AUTH'] === 'keystone';
const UNAUTHORIZED = 'The request you have made requires authentication.';

interface CloudEntry {
  auth: Record<string, string>;
  region_name?: string;
}

/** A cloud of the clouds.yaml start.sh wrote (OS_CLIENT_CONFIG_FILE). */
function cloud(name: string): CloudEntry {
  const file = process.env['OS_CLIENT_CONFIG_FILE'];
  if (!file) throw new Error('OS_CLIENT_CONFIG_FILE is not set: source .real-nova/env of a Keystone-mode stack');
  const entry = (parse(readFileSync(file, 'utf8')) as { clouds: Record<string, CloudEntry> }).clouds[name];
  if (!entry) throw new Error(`cloud ${name} is not in ${file}`);
  return entry;
}

function passwordAuth(password = cloud('realnova').auth['password']!): KeystoneAuth {
  const a = cloud('realnova').auth;
  return new KeystoneAuth({
    authUrl: a['auth_url']!,
    username: a['username']!,
    password,
    projectName: a['project_name']!,
    userDomainName: 'Default',
    projectDomainName: 'Default',
    regionName: 'RegionOne',
  });
}

/** POST /v3/auth/tokens with ci-bot's password; the token and its id. */
async function issueToken(): Promise<string> {
  return passwordAuth().getToken();
}

describe.runIf(keystone)('real Keystone in front of the real Nova (needs a stack started with REALNOVA_KEYSTONE=real)', () => {
  const p = keystone ? project('keystone') : undefined;

  it('a password token and the compute endpoint from the catalog', async () => {
    const client = new NovaClient({ auth: passwordAuth(), microversion: '2.79' });

    expect(await client.endpoint()).toBe(process.env['NOVA_ENDPOINT']);
    const { absolute } = await client.getLimits();
    expect(absolute.maxTotalCores).toBe(20);
    const detail = await client.getQuotaSetDetail(process.env['NOVA_PROJECT']);
    expect(detail.id).toBe(process.env['NOVA_PROJECT']);
  });

  it('an application credential token (pre-scoped to project ci) creates and deletes a server', async () => {
    const a = cloud('realnova-appcred').auth;
    const auth = new KeystoneAuth({
      authUrl: a['auth_url']!,
      applicationCredentialId: a['application_credential_id']!,
      applicationCredentialSecret: a['application_credential_secret']!,
    });
    const client = new NovaClient({ auth, microversion: '2.79', projectId: process.env['NOVA_PROJECT'] });
    const server = await client.createServer({ name: 'ng-it-appcred', flavorRef: p!.nova.flavors.vcpus1, imageRef: p!.nova.imageId, networks: 'none' });
    p!.created.add(server.id);

    const result = await client.deleteServer(server.id, { wait: true, intervalMs: 50 });

    expect(result.outcome).toBe('deleted');
    await waitForGone(client, server.id);
    expect((await client.getServer(server.id).catch((e: unknown) => e)) as Error).toHaveProperty('status', 404);
  });

  it('NovaClient.fromCloud reads the clouds.yaml start.sh wrote', async () => {
    const client = await NovaClient.fromCloud('realnova-appcred');
    expect(client.projectId).toBe(process.env['NOVA_PROJECT']);
    expect((await client.getLimits()).absolute.maxTotalInstances).toBe(10);
  });

  it('an invalid token: 401 from keystonemiddleware, as AuthError, never retried', async () => {
    // Pinned: an unpinned client reads Nova's version document first (no token, a request of its own).
    const client = new NovaClient({ endpoint: process.env['NOVA_ENDPOINT']!, token: 'not-a-valid-token', microversion: '2.79' });

    const error = await client.getLimits().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(AuthError);
    expect((error as AuthError).status).toBe(401);
    expect((error as AuthError).message).toBe(UNAUTHORIZED);
    expect(client.stats.requests).toBe(1);
  });

  it('a revoked token Nova never saw: 401, then the client renews the token once and succeeds', async () => {
    const auth = passwordAuth();
    const client = new NovaClient({ auth, microversion: '2.79' });
    const endpoint = await client.endpoint();
    const stale = await auth.getToken();
    // Revoke it with a token of its own (a user may revoke its own tokens).
    const revoke = await fetch(`${cloud('realnova').auth['auth_url']}/auth/tokens`, {
      method: 'DELETE',
      headers: { 'X-Auth-Token': await issueToken(), 'X-Subject-Token': stale },
    });
    expect(revoke.status).toBe(204);
    const direct = await new NovaClient({ endpoint, token: stale }).getLimits().catch((e: unknown) => e);
    expect(direct).toBeInstanceOf(AuthError);

    const { absolute } = await client.getLimits();

    expect(absolute.maxTotalCores).toBe(20);
    expect(client.stats.requests).toBe(2);
    expect(await auth.getToken()).not.toBe(stale);
  });

  it('a wrong password: AuthError from Keystone, without the password in it', async () => {
    const wrong = 'definitely-not-the-password';
    const client = new NovaClient({ auth: passwordAuth(wrong) });

    const error = await client.getLimits().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(AuthError);
    expect((error as AuthError).status).toBe(401);
    expect(`${String(error)} ${JSON.stringify(error)} ${(error as Error).stack ?? ''}`).not.toContain(wrong);
  });

  it("a member may not read another project's quota (403); an admin gets 400 for a project Keystone does not know", async () => {
    const member = new NovaClient({ auth: passwordAuth(), microversion: '2.79' });
    const denied = await member.getQuotaSetDetail(process.env['NOVA_ADMIN_PROJECT']).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(ForbiddenError);
    expect((denied as ForbiddenError).message).toBe("Policy doesn't allow os_compute_api:os-quota-sets:detail to be performed.");

    const unknown = await p!.admin.getQuotaSetDetail('no-such-project').catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(BadRequestError);
    expect((unknown as BadRequestError).message).toBe('Project ID no-such-project is not a valid project.');
  });
});
