/**
 * Bad ids and options: a ValidationError before any request, never a DELETE followed by an error,
 * never a misclassified network error that is retried.
 */
import { describe, expect, it } from 'vitest';
import { KeystoneAuth, NovaClient, ValidationError, waitForDelete } from '../../src/index.js';
import { clientFor, startNova, rejection } from '../helpers.js';

describe('dot-segment ids', () => {
  it.each(['.', '..'])("deleteServer(%j) is refused: it would DELETE another URL and read its 404 as 'already-gone'", async (id) => {
    const nova = await startNova();
    const client = clientFor(nova);
    const e = await rejection(client.deleteServer(id));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(`server id must be a non-empty string without '/', '?' or '#' (and not '.' or '..'), got ${JSON.stringify(id)}`);
    await expect(client.getServer(id)).rejects.toThrow(ValidationError);
    await expect(client.requestDelete(id)).rejects.toThrow(ValidationError);
    await expect(client.forceDeleteServer(id)).rejects.toThrow(ValidationError);
    await expect(client.getFlavor(id)).rejects.toThrow(ValidationError);
    await expect(waitForDelete(client, id)).rejects.toThrow(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });
});

describe('a name where a server id belongs', () => {
  it.each(['my-server', 'a..b', '...', 'ünï-çødé', 'x'.repeat(1000), '12345'])(
    'every call that takes a server id refuses %j before any request, naming the lookup by name (Nova would answer 404: never "already-gone")',
    async (id) => {
      const nova = await startNova();
      const client = clientFor(nova);
      // A server of that very name exists: a 404 for the name must not read as "it is gone".
      const named = await client.createServer({ name: id.slice(0, 255), flavorRef: '1', imageRef: 'i', networks: 'none' });
      nova.requests.length = 0;
      for (const call of [
        client.deleteServer(id, { wait: true }),
        client.deleteServers([named.id, id]),
        client.requestDelete(id),
        client.forceDeleteServer(id),
        client.getServer(id),
        waitForDelete(client, id),
      ]) {
        const e = await rejection(call);
        expect(e).toBeInstanceOf(ValidationError);
        expect(e.message).toContain(`server id must be a UUID (Nova's server ids are; Nova answers 404 for anything else), got ${JSON.stringify(id)}`);
        expect(e.message).toContain('client.listServers({ name: ');
      }
      expect(nova.requests).toHaveLength(0);
      expect(nova.getServerState(named.id)?.status).toBe('ACTIVE');
    },
  );

  it("a UUID in upper case or without dashes is taken, and sent in Nova's canonical form (lower case, dashed)", async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    for (const id of ['4B9D2C1E-0A6F-4D7B-9C3E-2F1A0B9C8D7E', '4b9d2c1e0a6f4d7b9c3e2f1a0b9c8d7e']) {
      expect(await client.deleteServer(id)).toMatchObject({ outcome: 'already-gone', deleteAttempts: 1, serverId: '4b9d2c1e-0a6f-4d7b-9c3e-2f1a0b9c8d7e' });
    }
    expect(nova.requests.filter((r) => r.method === 'DELETE').map((r) => r.path)).toEqual(['/servers/4b9d2c1e-0a6f-4d7b-9c3e-2f1a0b9c8d7e', '/servers/4b9d2c1e-0a6f-4d7b-9c3e-2f1a0b9c8d7e']);
  });
});

describe('project ids', () => {
  it.each(['..', '.', 'a/b', 'a?b', 'p#1', '../detail'])("getQuotaSetDetail(%j) is refused before any request (it would read another URL)", async (projectId) => {
    const nova = await startNova();
    const e = await rejection(clientFor(nova).getQuotaSetDetail(projectId));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(`project id must be a non-empty string without '/', '?' or '#' (and not '.' or '..'), got ${JSON.stringify(projectId)}`);
    expect(nova.requests).toHaveLength(0);
  });

  it("a client whose projectId is '..' refuses getQuotaSetDetail() the same way", async () => {
    const nova = await startNova();
    await expect(clientFor(nova, { projectId: '..' }).getQuotaSetDetail()).rejects.toThrow(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });

  it('a good project id is still read, encoded', async () => {
    const nova = await startNova();
    const detail = await clientFor(nova).getQuotaSetDetail(nova.projectId);
    expect(detail['cores']).toMatchObject({ in_use: 0 });
    expect(nova.requests.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /os-quota-sets/${nova.projectId}/detail`]);
  });
});

describe('retry: false and misspelt retry options', () => {
  it('new NovaClient({ retry: false }) is accepted: one attempt per request', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: /^\/servers\//, status: 503, times: 5 });
    const client = clientFor(nova, { retry: false });
    const e = await rejection(client.getServer('abcabcab-0000-4000-8000-000000000abc'));
    expect(e).toMatchObject({ status: 503 });
    expect(nova.requestsTo('GET', /^\/servers\//)).toHaveLength(1);
  });

  it.each([
    [{ retries: 2, retires: 3 }, 'retry: unknown option "retires" (did you mean retries?); known options: retries, minDelayMs, maxDelayMs, maxRetryTimeMs'],
    [{ maxDelay: 5 }, 'retry: unknown option "maxDelay" (did you mean maxDelayMs?); known options: retries, minDelayMs, maxDelayMs, maxRetryTimeMs'],
    [true, 'retry must be an object (or false), got true'],
    [[], 'retry must be an object (or false), got '],
  ])('retry %j is refused by the client and by a request, naming what to write', async (retry, message) => {
    expect(() => new NovaClient({ endpoint: 'http://127.0.0.1:1/v2.1', token: 't', retry: retry as never })).toThrow(new ValidationError(message));
    const nova = await startNova();
    const e = await rejection(clientFor(nova).getServer('abcabcab-0000-4000-8000-000000000abc', { retry: retry as never }));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(message);
    expect(nova.requests).toHaveLength(0);
  });
});

describe('per-call request options', () => {
  it.each([
    [{ requestTimeoutMs: Number.NaN }, 'requestTimeoutMs must be a positive number of milliseconds, got NaN'],
    [{ requestTimeoutMs: -5 }, 'requestTimeoutMs must be a positive number of milliseconds, got -5'],
    [{ retry: { retries: -1 } }, 'retry.retries must be a non-negative integer, got -1'],
    [{ retry: { minDelayMs: Number.POSITIVE_INFINITY } }, 'retry.minDelayMs must be a non-negative, finite number of milliseconds, got Infinity'],
  ])('getServer(id, %j) rejects with ValidationError before any request', async (opts, message) => {
    const nova = await startNova();
    const e = await rejection(clientFor(nova).getServer('abcabcab-0000-4000-8000-000000000abc', opts as never));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(message);
    expect(nova.requests).toHaveLength(0);
  });

  it('the client refuses a retry policy whose first delay is infinite', () => {
    expect(() => new NovaClient({ endpoint: 'http://127.0.0.1:1/v2.1', token: 't', retry: { minDelayMs: Number.POSITIVE_INFINITY } })).toThrow(
      'retry.minDelayMs must be a non-negative, finite number of milliseconds, got Infinity',
    );
  });
});

describe('deleteServer checks the wait options before its DELETE', () => {
  it.each([
    [{ pollRetries: -1 }, 'pollRetries must be a non-negative integer, got -1'],
    [{ jitter: 5 }, 'jitter must be a number in [0, 1), got 5'],
    [{ intervalMs: Number.POSITIVE_INFINITY }, 'intervalMs must be a positive, finite number of milliseconds, got Infinity'],
    [{ requestTimeoutMs: -1 }, 'requestTimeoutMs must be a positive number of milliseconds, got -1'],
    [{ timeoutMs: 'abc' }, 'timeoutMs must be a positive number of milliseconds, got abc'],
  ])('deleteServer(id, { wait: true, ...%j }): ValidationError and no DELETE', async (opts, message) => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer().id;
    const e = await rejection(client.deleteServer(id, { wait: true, ...(opts as object) }));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(message);
    expect(nova.requests).toHaveLength(0);
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
    expect(client.unconfirmedDeletes()).toEqual([]);
  });

  it('deleteServers with one bad id deletes nothing', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer().id;
    await expect(client.deleteServers([id, 'a/b'])).rejects.toThrow(ValidationError);
    await expect(client.deleteServers([id, '..'])).rejects.toThrow(ValidationError);
    await expect(client.deleteServers([id], { timeoutMs: -1 })).rejects.toThrow('timeoutMs must be a positive number of milliseconds, got -1');
    expect(nova.requests).toHaveLength(0);
  });
});

describe('Keystone URLs', () => {
  it.each(['http://keystone:5000?x=1', 'http://keystone:5000/v3#top'])('authUrl %s is refused (a path appended after a query goes nowhere)', (authUrl) => {
    expect(() => new KeystoneAuth({ authUrl, username: 'u', password: 'pw-secret', projectName: 'p' })).toThrow(
      `authUrl must not have a query or fragment (/v3/auth/tokens is appended to it), got ${JSON.stringify(authUrl)}`,
    );
  });
});
