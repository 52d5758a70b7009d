// The built binary in a pseudo-terminal (util-linux `script`) and piped: --debug and the progress line.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova } from '../helpers.js';
import { ensureBuilt, hasScript, runInTerminal, runPiped } from './binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

const envOf = (nova: FakeNova): Record<string, string> => ({ OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` });

describe.skipIf(!hasScript)('in a pseudo-terminal and piped', () => {
  it('--debug: pino-pretty lines on a terminal, JSON lines when piped', async () => {
    const nova = await startNova();
    const tty = await runInTerminal(['--debug', 'limits', 'show', '--absolute', '-f', 'value', '-c', 'Name'], envOf(nova));
    expect(tty.code).toBe(0);
    expect(tty.output).toContain('maxTotalCores');
    expect(tty.output).toMatch(/(DEBUG|INFO)/);
    expect(tty.output).not.toMatch(/^\{"level":/m);
    const piped = await runPiped(['--debug', 'limits', 'show', '--absolute', '-f', 'value', '-c', 'Name'], envOf(nova));
    const lines = piped.stderr.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(JSON.parse(line)).toHaveProperty('level');
  });

  it('server delete --wait on a terminal: the progress line with elapsed time', async () => {
    const nova = await startNova({ deleteDelayMs: 300, deletedWindowMs: 0 });
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const r = await runInTerminal(['server', 'delete', id, '--wait', '--interval', '50ms'], envOf(nova));
    expect(r.code).toBe(0);
    expect(r.output).toMatch(/Deleting .* \d+\/1 gone \| \d+s \| /);
    expect(r.output).toContain(`${id}: deleted`);
  });
});
