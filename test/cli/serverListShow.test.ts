// `nova-guard server list` and `server show` in process against FakeNova: openstack's columns and
// fields, names for flavors and images, Nova's --name regular expression, -f/-c, lookups by name.
import { describe, expect, it } from 'vitest';
import { registerServerListCommand } from '../../src/cli/serverList.js';
import { registerServerShowCommand } from '../../src/cli/serverShow.js';
import { DEFAULT_IMAGES } from '../../src/testing/index.js';
import { clientFor, startNova } from '../helpers.js';
import { runCli } from './run.js';

const CIRROS = DEFAULT_IMAGES[0]!;

describe('server list', () => {
  it('columns ID, Name, Status, Networks, Image, Flavor with image and flavor names (microversion 2.1: flavor by id)', async () => {
    const nova = await startNova();
    const client = clientFor(nova, { microversion: '2.1' });
    const a = await client.createServer({ name: 'ci-a', flavorRef: '2', imageRef: CIRROS.id });
    const r = await runCli('server', registerServerListCommand, client, ['list', '-f', 'json']);
    expect(r.exitCode).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(Object.keys(rows[0]!)).toEqual(['ID', 'Name', 'Status', 'Networks', 'Image', 'Flavor']);
    expect(rows[0]).toMatchObject({ ID: a.id, Name: 'ci-a', Image: CIRROS.name, Flavor: 'm1.small' });
    const table = await runCli('server', registerServerListCommand, clientFor(nova), ['list']);
    expect(table.stdout.split('\n')[1]).toMatch(/^\| ID +\| Name +\| Status +\| Networks +\| Image +\| Flavor +\|$/);
  });

  it('--name is a regular expression Nova matches (as openstack --name); -f value -c ID lists ids only', async () => {
    const nova = await startNova();
    const one = nova.addServer({ name: 'ci-1', status: 'ACTIVE' });
    const two = nova.addServer({ name: 'ci-22', status: 'ACTIVE' });
    nova.addServer({ name: 'other', status: 'ACTIVE' });
    const r = await runCli('server', registerServerListCommand, clientFor(nova), ['list', '--name', '^ci-\\d+$', '-f', 'value', '-c', 'ID']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n').sort()).toEqual([one.id, two.id].sort());
    expect(nova.requestsTo('GET', '/servers/detail')[0]?.query['name']).toBe('^ci-\\d+$');
  });
});

describe('server list --long and -f csv', () => {
  it('--long: the columns of openstack server list --long, with task and power state, image and flavor by name and id, zone, host, properties', async () => {
    const nova = await startNova();
    const client = clientFor(nova, { microversion: '2.1' });
    const a = await client.createServer({ name: 'ci-a', flavorRef: '2', imageRef: CIRROS.id, metadata: { pool: 'ci', job: '42' } });
    for (let i = 0; i < 500 && nova.getServerState(a.id)?.status !== 'ACTIVE'; i++) await new Promise((r) => setTimeout(r, 2));
    const r = await runCli('server', registerServerListCommand, client, ['list', '--long', '-f', 'json']);
    expect(r.exitCode).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(Object.keys(rows[0]!)).toEqual([
      'ID', 'Name', 'Status', 'Task State', 'Power State', 'Networks', 'Image Name', 'Image ID', 'Flavor Name', 'Flavor ID', 'Availability Zone', 'Host', 'Properties',
    ]);
    expect(rows[0]).toMatchObject({
      ID: a.id,
      Name: 'ci-a',
      Status: 'ACTIVE',
      'Task State': null,
      'Power State': 'Running',
      'Image Name': CIRROS.name,
      'Image ID': CIRROS.id,
      'Flavor Name': 'm1.small',
      'Flavor ID': '2',
      'Availability Zone': 'nova',
      Properties: "job='42', pool='ci'",
    });
    // The admin token of clientFor sees the host (OS-EXT-SRV-ATTR:host).
    expect(rows[0]!['Host']).toEqual(expect.any(String));
    const table = await runCli('server', registerServerListCommand, client, ['list', '--long']);
    expect(table.stdout.split('\n')[1]).toMatch(/^\| ID +\| Name +\| Status +\| Task State +\| Power State +\| Networks +\| Image Name +\| Image ID +\| Flavor Name +\| Flavor ID +\| Availability Zone +\| Host +\| Properties +\|$/);
  });

  it('-f csv: a header line and one line per server, RFC 4180 quoting (a comma and a quote in a name stay one field)', async () => {
    const nova = await startNova();
    const client = clientFor(nova, { microversion: '2.1' });
    const a = await client.createServer({ name: 'ci, "quoted"', flavorRef: '1', imageRef: CIRROS.id });
    const r = await runCli('server', registerServerListCommand, client, ['list', '-f', 'csv', '-c', 'ID', '-c', 'Name', '-c', 'Flavor']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe(`"ID","Name","Flavor"\n"${a.id}","ci, ""quoted""","m1.tiny"`);
    const minimal = await runCli('server', registerServerListCommand, client, ['list', '-f', 'csv', '--quote', 'minimal', '-c', 'ID', '-c', 'Name']);
    expect(minimal.stdout).toBe(`ID,Name\n${a.id},"ci, ""quoted"""`);
    const long = await runCli('server', registerServerListCommand, client, ['list', '--long', '-f', 'csv', '-c', 'Name', '-c', 'Host']);
    expect(long.stdout.split('\n')[0]).toBe('"Name","Host"');
    await expect(runCli('server', registerServerListCommand, client, ['list', '-f', 'csv', '--quote', 'some'])).rejects.toThrow(/Allowed choices are all, minimal, none, nonnumeric/);
  });
});

describe('server show', () => {
  it('by name or id: the Field/Value table; -f value -c status prints the status alone', async () => {
    const nova = await startNova();
    const s = nova.addServer({ name: 'shown', status: 'ACTIVE' });
    const byName = await runCli('server', registerServerShowCommand, clientFor(nova), ['show', 'shown']);
    expect(byName.exitCode).toBe(0);
    expect(byName.stdout).toMatch(new RegExp(`\\| id +\\| ${s.id} +\\|`));
    expect(byName.stdout).toMatch(/\| project_id +\| /);
    expect(byName.stdout).not.toMatch(/\| links /);
    const status = await runCli('server', registerServerShowCommand, clientFor(nova), ['show', s.id, '-f', 'value', '-c', 'status']);
    expect(status.stdout).toBe('ACTIVE');
  });

  it('no server with that name or id is a failure (rejects with openstack words)', async () => {
    const nova = await startNova();
    await expect(runCli('server', registerServerShowCommand, clientFor(nova), ['show', 'nope'])).rejects.toThrow("No server with a name or ID of 'nope' exists.");
    await expect(runCli('server', registerServerShowCommand, clientFor(nova), ['show', '11111111-2222-3333-4444-555555555555'])).rejects.toThrow(/No server with a name or ID of '11111111-2222-3333-4444-555555555555' exists/);
  });
});
