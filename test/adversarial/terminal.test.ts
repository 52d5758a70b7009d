/**
 * A server name is chosen by any member of the project: escape sequences in it must not reach the
 * operator's terminal through `server reap`, `quota audit` or an error line.
 */
import { describe, expect, it } from 'vitest';
import { registerQuotaAuditCommand } from '../../src/cli/quotaAudit.js';
import { registerReapCommand } from '../../src/cli/reap.js';
import { renderTable, terminalSafe } from '../../src/core/table.js';
import { runCli } from '../cli/run.js';
import { clientFor, startNova } from '../helpers.js';

const EVIL = 'ci-\u001b[2J\u001b[Hpwned\nfake line\u009b31m';
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe('control characters from Nova', () => {
  it('terminalSafe shows them as escapes; renderTable keeps its columns', () => {
    expect(terminalSafe('a\u001b[2Jb\nc\td', true)).toBe('a\\u001b[2Jb\\u000ac\\u0009d');
    expect(terminalSafe('a\u001bb\nc')).toBe('a\\u001bb\nc');
    expect(renderTable([['id', 'name'], ['1', 'x\ny']])).toBe('id  name\n1   x\\u000ay');
  });

  it('server reap --dry-run prints the name escaped', async () => {
    const nova = await startNova();
    const id = nova.addServer({ name: EVIL, createdMs: Date.now() - 7_200_000 }).id;
    const r = await runCli('server', registerReapCommand, clientFor(nova), ['reap', '--prefix', 'ci-', '--older-than', '1h', '--dry-run', '--pass-interval', '1ms']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain(id);
    expect(r.stdout).toContain('ci-\\u001b[2J\\u001b[Hpwned\\u000afake line\\u009b31m');
    expect(r.stdout).not.toMatch(CONTROL);
    expect(r.stderr).not.toMatch(CONTROL);
  });

  it('quota audit prints the name escaped', async () => {
    const nova = await startNova();
    nova.addServer({ name: EVIL, status: 'BUILD' });
    const r = await runCli('quota', registerQuotaAuditCommand, clientFor(nova), ['audit', '--attempts', '1']);
    expect(r.stdout).toContain('ci-\\u001b[2J');
    expect(r.stdout).not.toMatch(CONTROL);
  });
});
