import { join } from 'node:path';
import { makeTestCert } from '../tlsCert.js';
// The habits people bring from `openstack`, through the built binary (dist/cli/main.js) against
// FakeNova over HTTP: output formats, --os-* options, names in `server delete`, exit codes,
// durations, the first line when Nova is slow, the progress line, Ctrl-C and --debug; piped and
// in a pseudo-terminal.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova } from '../helpers.js';
import { createServer, type Socket } from 'node:net';
import { ensureBuilt, runPiped, runUntilStderr } from './binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

const envOf = (nova: FakeNova): Record<string, string> => ({ OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` });

describe('output formats (cliff)', () => {
  it('limits show --absolute: a bordered Name/Value table, numbers right-aligned, unlimited as -1', async () => {
    const nova = await startNova({ maxTotalCores: 20, maxTotalInstances: -1 });
    const r = await runPiped(['limits', 'show', '--absolute'], envOf(nova));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^\+-+\+-+\+$/);
    expect(lines[1]).toMatch(/^\| Name +\| Value \|$/);
    expect(lines).toContainEqual(expect.stringMatching(/^\| maxTotalCores +\| +20 \|$/));
    expect(lines).toContainEqual(expect.stringMatching(/^\| maxTotalInstances +\| +-1 \|$/));
    expect(lines.at(-1)).toBe(lines[0]);
  });

  it('-f json (indent 2), --noindent (one line, Python separators), -f value, -f yaml and -c', async () => {
    const nova = await startNova({ maxTotalCores: 20 });
    const env = envOf(nova);
    const json = await runPiped(['limits', 'show', '--absolute', '-f', 'json'], env);
    const rows = JSON.parse(json.stdout) as Array<{ Name: string; Value: number }>;
    expect(rows).toContainEqual({ Name: 'maxTotalCores', Value: 20 });
    expect(json.stdout).toContain('\n  {\n    "Name": ');
    const one = await runPiped(['limits', 'show', '--absolute', '-f', 'json', '--noindent', '-c', 'Name', '-c', 'Value'], env);
    expect(one.stdout).toMatch(/^\[\{"Name": "\w+", "Value": -?\d+\}, \{"Name": /);
    expect(one.stdout).toContain('{"Name": "maxTotalCores", "Value": 20}');
    expect(one.stdout.trimEnd().split('\n')).toHaveLength(1);
    const value = await runPiped(['limits', 'show', '--absolute', '-f', 'value'], env);
    expect(value.stdout.split('\n')).toContain('maxTotalCores 20');
    const onlyValue = await runPiped(['limits', 'show', '--absolute', '-f', 'value', '-c', 'Value'], env);
    expect(onlyValue.stdout.split('\n')).toContain('20');
    expect(onlyValue.stdout).not.toContain('maxTotalCores');
    const yaml = await runPiped(['limits', 'show', '--absolute', '-f', 'yaml'], env);
    expect(yaml.stdout).toMatch(/^- Name: \w+\n {2}Value: -?\d+\n/);
    expect(yaml.stdout).toContain('- Name: maxTotalCores\n  Value: 20\n');
  });

  it('-c naming no column exits 1 naming the columns; -f bogus is bad usage, exit 2', async () => {
    const nova = await startNova();
    const r = await runPiped(['limits', 'show', '--absolute', '-c', 'Nope'], envOf(nova));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("nova-guard: No recognized column names in ['Nope']. Recognized columns are ('Name', 'Value').\n");
    const f = await runPiped(['limits', 'show', '--absolute', '-f', 'bogus'], envOf(nova));
    expect(f.code).toBe(2);
    expect(f.stderr).toContain("'bogus' is invalid");
  });

  it('--max-width wraps the widest column of the table', async () => {
    const nova = await startNova();
    const r = await runPiped(['limits', 'show', '--absolute', '--max-width', '24'], envOf(nova));
    expect(r.code).toBe(0);
    for (const line of r.stdout.trimEnd().split('\n')) expect(line.length).toBeLessThanOrEqual(24);
  });

  it('quota show --usage: Resource, Limit, In Use, Reserved under openstack names', async () => {
    const nova = await startNova({ maxTotalCores: 20 });
    nova.addServer({ status: 'ACTIVE' });
    const r = await runPiped(['quota', 'show', '--usage', '-f', 'json'], envOf(nova));
    expect(r.stderr).toBe('');
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    const cores = rows.find((x) => x['Resource'] === 'cores');
    expect(Object.keys(cores!)).toEqual(['Resource', 'Limit', 'In Use', 'Reserved']);
    expect(cores).toMatchObject({ Limit: 20, Reserved: 0 });
    expect(cores!['In Use']).toBeGreaterThan(0);
    expect(rows.map((x) => x['Resource'])).toContain('key-pairs');
    const table = await runPiped(['quota', 'show', '--usage'], envOf(nova));
    expect(table.stdout.split('\n')[1]).toMatch(/^\| Resource +\| Limit \| In Use \| Reserved \|$/);
  });
});

describe('--os-* options and exit codes', () => {
  it('--os-token with --os-endpoint, and the old NOVA_* variables, reach Nova without Keystone', async () => {
    const nova = await startNova();
    const flags = await runPiped(['--os-endpoint', nova.endpoint, '--os-token', `admin:${nova.projectId}`, 'limits', 'show', '--absolute', '-f', 'value', '-c', 'Name'], {});
    expect(flags.code).toBe(0);
    expect(flags.stdout).toContain('maxTotalCores');
    const old = await runPiped(['limits', '--json'], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: `admin:${nova.projectId}` });
    expect(old.code).toBe(0);
    // --os-compute-api-version reaches Nova: a version it does not offer is refused.
    const mv = await runPiped(['--os-compute-api-version', '2.999', 'limits', 'show', '--absolute'], envOf(nova));
    expect(mv.code).toBe(1);
    expect(mv.stderr).toMatch(/2\.999/);
  });

  it('--os-auth-url and --os-username/--os-password/--os-project-name go to Keystone (exit 1 when it refuses the connection)', async () => {
    const r = await runPiped(['--os-auth-url', 'http://127.0.0.1:1/v3', '--os-username', 'u', '--os-password', 'pw-secret', '--os-project-name', 'p', 'limits'], {});
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^nova-guard: Keystone POST http:\/\/127\.0\.0\.1:1\/v3\/auth\/tokens failed without a response/);
    expect(r.stderr).not.toContain('pw-secret');
  });

  it('a Keystone that never answers: "waiting for keystone at URL ..." within about a second', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((s) => void sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const url = `http://127.0.0.1:${port}/v3`;
      const r = await runUntilStderr(['--os-auth-url', url, '--os-username', 'u', '--os-password', 'pw-secret', '--os-project-name', 'p', 'limits'], {}, /waiting for keystone/);
      expect(r.stderr).toBe(`waiting for keystone at ${url} ...\n`);
      // About a second after the start (the process's own start-up included), long before any time limit.
      expect(r.matchedMs).toBeGreaterThan(900);
      expect(r.matchedMs).toBeLessThan(8000);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('nothing configured is a configuration error (exit 1); an unknown option is bad usage (exit 2, as argparse)', async () => {
    const none = await runPiped(['limits'], {});
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^nova-guard: no cloud given/);
    const bad = await runPiped(['limits', '--bogus'], {});
    expect(bad.code).toBe(2);
  });

  it('an endpoint without a token, or a token without an endpoint, says which half is missing (exit 1)', async () => {
    const noToken = await runPiped(['limits'], { OS_ENDPOINT: 'http://127.0.0.1:44353/v2.1' });
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toBe(
      'nova-guard: the compute endpoint is set (http://127.0.0.1:44353/v2.1) but no token: pass --os-token (or OS_TOKEN) with it, or use --os-cloud / OS_CLOUD\n',
    );
    const flag = await runPiped(['--os-endpoint', 'http://127.0.0.1:44353/v2.1', 'limits'], {});
    expect(flag).toMatchObject({ code: 1, stderr: noToken.stderr });
    const noEndpoint = await runPiped(['limits'], { OS_TOKEN: 'x' });
    expect(noEndpoint.code).toBe(1);
    expect(noEndpoint.stderr).toMatch(/^nova-guard: a token is set but no endpoint: pass --os-endpoint \(or OS_ENDPOINT\)/);
  });

  it('quota show with a token that names no project is a configuration error (exit 1), before any request', async () => {
    const nova = await startNova();
    const r = await runPiped(['quota', 'show'], { OS_ENDPOINT: nova.endpoint, OS_TOKEN: 'opaque-token' });
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toBe(
      'nova-guard: the token names no project, so there is no project to show: pass one (nova-guard quota show PROJECT_ID), or authenticate with a project-scoped cloud (--os-project-name / OS_PROJECT_NAME)\n',
    );
    expect(nova.requests).toHaveLength(0);
  });

  it('--os-cert/--os-key load the client certificate: a file that cannot be read exits 1 naming it, a key without a cert too', async () => {
    const nova = await startNova();
    const missing = await runPiped(['--os-cert', '/nonexistent/x.pem', 'limits'], envOf(nova));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('cannot read the client certificate file /nonexistent/x.pem (cert)');
    const keyOnly = await runPiped(['--os-key', '/nonexistent/k.pem', 'limits'], envOf(nova));
    expect(keyOnly.code).toBe(1);
    expect(keyOnly.stderr).toContain('--os-key (OS_KEY) needs --os-cert (OS_CERT)');
    const pair = makeTestCert('ng-cli-cert-');
    try {
      const ok = await runPiped(['--os-cert', pair.certPath, '--os-key', join(pair.dir, 'key.pem'), 'limits'], envOf(nova));
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stderr).not.toContain('Warning');
    } finally {
      pair.remove();
    }
  });
});

