// The CLI as a real child process: what in-process tests cannot see, such as an unref'd timer that
// lets Node exit (code 0, no output) in the middle of a wait. Uses the build in dist/ (rebuilt here
// when missing or older than src/).
import { spawn } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { startNova } from '../helpers.js';
import { CLI, ensureBuilt } from './binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('nova-guard as a process', () => {
  it('server delete --wait through a DELETED window prints its result and exits 0 (the 404 confirmation keeps Node alive)', async () => {
    const nova = await startNova({ deleteDelayMs: 20, deletedWindowMs: 300 });
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const r = await run(['server', 'delete', id, '--wait', '--interval', '10ms'], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'a:demo' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(new RegExp(`^${id}: deleted \\(\\d+ polls, \\d+ ms\\)\\n$`));
    expect(r.code).toBe(0);
    expect(nova.getServerState(id)).toBeUndefined();
  });

  it('a locked server exits 1 with openstack-style messages, the other is deleted', async () => {
    const nova = await startNova({ deleteDelayMs: 20, deletedWindowMs: 100 });
    const locked = nova.addServer({ status: 'ACTIVE' }).id;
    const free = nova.addServer({ status: 'ACTIVE' }).id;
    nova.lock(locked);
    const r = await run(['server', 'delete', locked, free, '--wait', '--interval', '10ms'], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'ci-bot:demo' });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^${free}: deleted`));
    expect(r.stderr).toContain(`Failed to delete server with name or ID '${locked}': `);
    expect(r.stderr).toContain('1 of 2 servers failed to delete.');
  });
});
