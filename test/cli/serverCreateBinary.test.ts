// `nova-guard server create` through the built binary against FakeNova over HTTP: Ctrl-C during
// --wait names the created server (kept, for the caller to delete) and the process ends.
import { beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_IMAGES } from '../../src/testing/index.js';
import { startNova } from '../helpers.js';
import { ensureBuilt, runPiped } from './binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

describe('server create --wait, Ctrl-C', () => {
  it('SIGINT during the wait for ACTIVE prints the server id and the delete command on stderr, exit 130, the server kept', async () => {
    const nova = await startNova({ buildDelayMs: 600_000 });
    let pid: number | undefined;
    const run = runPiped(['server', 'create', 'ctrl-c', '--flavor', 'm1.tiny', '--image', DEFAULT_IMAGES[0]!.name, '--wait', '-f', 'value', '-c', 'id'], { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` }, (p) => (pid = p));
    // Wait until Nova has accepted the POST and the guard polls the building server.
    const started = performance.now();
    while (nova.requestsTo('GET', /^\/servers\/[0-9a-f-]{36}$/).length === 0 && performance.now() - started < 20_000) await sleep(50);
    const [server] = nova.listServerStates();
    expect(server?.status).toBe('BUILD');
    process.kill(pid!, 'SIGINT');
    const r = await run;
    expect(r.code).toBe(130);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`Server ${server!.id} was created and is NOT deleted`);
    expect(r.stderr).toContain(`nova-guard server delete --wait ${server!.id}`);
    // Kept: no DELETE was sent.
    expect(nova.requestsTo('DELETE', /^\/servers\//)).toHaveLength(0);
    expect(nova.getServerState(server!.id)?.status).toBe('BUILD');
  }, 60_000);
});
