/**
 * `server delete` asks for microversion 2.1 unless the user names one, as `openstack server delete`
 * does: its DELETE and its wait need nothing newer, so a short-lived CLI process (a shell job) sends
 * no read of Nova's version document. A microversion the user names still wins.
 */
import { Command } from 'commander';
import { describe, expect, it, vi } from 'vitest';
import { clientFromOptions, type GlobalOptions } from '../../src/cli/common.js';
import { DELETE_MICROVERSION, registerServerDeleteCommand } from '../../src/cli/serverDelete.js';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova } from '../helpers.js';

async function deleteWith(nova: FakeNova, ids: string[], opts: Partial<GlobalOptions> = {}): Promise<number> {
  const program = new Command('nova-guard').exitOverride();
  const global: GlobalOptions = { osEndpoint: nova.endpoint, osToken: `admin:${nova.projectId}`, ...opts } as GlobalOptions;
  registerServerDeleteCommand(program.command('server'), (defaults) => clientFromOptions(global, {}, defaults));
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  try {
    await program.parseAsync(['server', 'delete', '--wait', '--timeout', '30s', '--interval', '1s', ...ids], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } finally {
    process.exitCode = undefined;
    log.mockRestore();
    error.mockRestore();
  }
}

describe('server delete and the microversion', () => {
  it('asks for 2.1 by default: no GET of the version document, the servers deleted', async () => {
    const nova = await startNova();
    const ids = [nova.addServer({ status: 'ACTIVE' }).id, nova.addServer({ status: 'ACTIVE' }).id];
    expect(await deleteWith(nova, ids)).toBe(0);
    expect(DELETE_MICROVERSION).toBe('2.1');
    expect(nova.requestsTo('GET', '/')).toHaveLength(0);
    for (const id of ids) expect(nova.getServerState(id)).toBeUndefined();
  });

  it('a microversion the user names wins (one this Nova does not have: its 406, nothing deleted)', async () => {
    const nova = await startNova();
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    expect(await deleteWith(nova, [id], { osComputeApiVersion: '2.999' })).not.toBe(0);
    expect(nova.requestsTo('GET', '/')).toHaveLength(0);
    expect(nova.getServerState(id)).toBeDefined();
  });
});
