/** `--timeout` of `quota audit` and `server reap`: passed through as `timeoutMs`. */
import { describe, expect, it } from 'vitest';
import { registerQuotaAuditCommand } from '../../src/cli/quotaAudit.js';
import { reaperOptionsFromFlags } from '../../src/cli/reap.js';
import { clientFor, startNova } from '../helpers.js';
import { runCli } from './run.js';

describe('--timeout', () => {
  it('server reap: --timeout 2m is a time box of 120000 ms per pass; absent, the reaper default applies', () => {
    expect(reaperOptionsFromFlags({ prefix: 'ci-', olderThan: 7_200_000, timeout: 120_000 }).timeoutMs).toBe(120_000);
    expect(reaperOptionsFromFlags({ prefix: 'ci-', olderThan: 7_200_000 })).not.toHaveProperty('timeoutMs');
  });

  it('quota audit: an audit that outlives --timeout fails with exit 1 and names timeoutMs', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 2_000 });
    const r = await runCli('quota', registerQuotaAuditCommand, clientFor(nova), ['audit', '--timeout', '50ms', '--attempts', '1']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/OperationTimeoutError: The quota audit did not finish within timeoutMs \(50 ms\)/);
  });
});
