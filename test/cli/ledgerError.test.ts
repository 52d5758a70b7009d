// The CLI's words for a ledger's fix: `--ledger in-process` when the command line named the ledger,
// `NOVA_GUARD_LEDGER=in-process (or unset it)` when the environment did (unsetting it cannot help a
// ledger named by the flag).
import { describe, expect, it } from 'vitest';
import { LedgerConfigError } from '../../src/errors/index.js';
import { cliLedgerFix, cliMessage, ledgerSource } from '../../src/cli/ledgerError.js';

const FIX = "npm install ioredis@^5, or use ledger: 'in-process'";

describe('a ledger fix in the CLI words', () => {
  it('names the flag when --ledger was given (also beside NOVA_GUARD_LEDGER), the variable when only it was', () => {
    expect(ledgerSource(['node', 'nova-guard', 'server', 'create', '--ledger', 'redis://x'], { NOVA_GUARD_LEDGER: 'sqlite:' })).toBe('flag');
    expect(ledgerSource(['node', 'nova-guard', '--ledger=sqlite:'], {})).toBe('flag');
    expect(ledgerSource(['node', 'nova-guard', 'server', 'create'], { NOVA_GUARD_LEDGER: 'sqlite:' })).toBe('env');
    expect(ledgerSource(['node', 'nova-guard', 'server', 'create'], { NOVA_GUARD_LEDGER: '  ' })).toBe('flag');
    expect(cliLedgerFix(FIX, 'flag')).toBe('npm install ioredis@^5, or use --ledger in-process');
    expect(cliLedgerFix(FIX, 'env')).toBe('npm install ioredis@^5, or use NOVA_GUARD_LEDGER=in-process (or unset it)');
  });

  it('rewrites only the fix of a LedgerConfigError', () => {
    const e = new LedgerConfigError('the Redis ledger needs ioredis', { kind: 'redis', reason: 'module-missing', fix: FIX });
    expect(cliMessage(e, 'flag')).toBe('the Redis ledger needs ioredis. Fix: npm install ioredis@^5, or use --ledger in-process');
    expect(cliMessage(new Error("use ledger: 'in-process'"), 'flag')).toBe("use ledger: 'in-process'");
  });
});
