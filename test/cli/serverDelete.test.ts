/** `nova-guard server delete` on an orphaned mapping (FakeNova `causes.breakMapping`): exit 1 and a clear message, never `already-gone`. Fake timers. */
import { describe, expect, it } from 'vitest';
import { registerServerDeleteCommand } from '../../src/cli/serverDelete.js';
import { clientFor, settle, startNova, useFakeClock } from '../helpers.js';
import { runCli } from './run.js';

useFakeClock();

describe('server delete on an orphaned mapping', () => {
  it.each([[[]], [['--wait']]])('%j: exit 1, the orphan named with what an operator must do; the other server deleted', async (extra) => {
    const nova = await startNova();
    const client = clientFor(nova);
    const ok = nova.addServer({ status: 'ACTIVE' }).id;
    const orphan = nova.addServer({ status: 'ACTIVE' }).id;
    nova.causes.breakMapping(orphan);
    const r = await settle(runCli('server', registerServerDeleteCommand, client, ['delete', ok, orphan, ...extra]));
    expect(r.exitCode).toBe(1);
    expect(r.stdout).not.toContain(`${orphan}: already-gone`);
    expect(r.stdout).toContain(`${ok}: ${extra.length ? 'deleted' : 'delete-requested'}`);
    expect(r.stderr).toContain(`Failed to delete server with name or ID '${orphan}': Server ${orphan} cannot be deleted`);
    expect(r.stderr).toContain('orphaned mapping');
    expect(r.stderr).toContain('nova-manage cell_v2 verify_instance');
    expect(r.stderr).toContain('1 of 2 servers failed to delete.');
  });

  it('a UUID Nova does not know: openstack\'s "No server" message and exit 1, or exit 0 with --ignore-missing; never already-gone', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const missing = '6a1e4b0c-0d7e-4a53-9d55-0f4f1c1b2a90';
    const r = await settle(runCli('server', registerServerDeleteCommand, client, ['delete', missing]));
    expect(r.exitCode).toBe(1);
    expect(r.stdout).not.toContain('already-gone');
    expect(r.stderr).toContain(`Failed to delete server with name or ID '${missing}': No server with a name or ID of '${missing}' exists.`);
    const ignored = await settle(runCli('server', registerServerDeleteCommand, client, ['delete', missing, '--ignore-missing']));
    expect(ignored.exitCode ?? 0).toBe(0);
    expect(ignored.stderr).toBe('');
  });

  it.each([[[]], [['--ignore-missing']], [['--wait']]])(
    '%j: a server whose *name* looks like a UUID (no server has it as its id) is found by name and deleted, as openstack does',
    async (extra) => {
      const nova = await startNova();
      const client = clientFor(nova);
      const uuidName = '0b6f4d1e-8c2a-4f3b-9e7d-5a1c2b3d4e5f';
      const id = nova.addServer({ name: uuidName, status: 'ACTIVE' }).id;
      const r = await settle(runCli('server', registerServerDeleteCommand, client, ['delete', uuidName, ...extra]));
      expect(r.exitCode).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toContain(`${id}: ${extra[0] === '--wait' ? 'deleted' : 'delete-requested'}`);
      expect(nova.requestsTo('DELETE', `/servers/${id}`)).toHaveLength(1);
      if (extra[0] === '--wait') expect(nova.getServerState(id)).toBeUndefined();
    },
  );

  it('a name that is not a UUID is looked up by name only: no GET /servers/<name> (Nova would answer 404)', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ name: 'web.1', status: 'ACTIVE' }).id;
    const r = await settle(runCli('server', registerServerDeleteCommand, client, ['delete', 'web.1']));
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain(`${id}: delete-requested`);
    expect(nova.requests.map((q) => `${q.method} ${q.path}`).filter((x) => x.startsWith('GET /servers/web'))).toEqual([]);
  });
});
