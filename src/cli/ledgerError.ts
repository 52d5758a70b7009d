/**
 * A {@link LedgerConfigError} as the CLI prints it: the same cause, its fix phrased for the command
 * line (`--ledger in-process`, `--os-project-id`) instead of the library's option syntax
 * (`ledger: 'in-process'`, `projectId` in `NovaClient`'s options).
 *
 * @module
 */
import { LedgerConfigError } from '../errors/index.js';

/** Where the command's ledger string came from: its `--ledger` flag, or `NOVA_GUARD_LEDGER`. */
export type LedgerSource = 'flag' | 'env';

/**
 * Where the ledger string of this command line came from: `'flag'` when `argv` has `--ledger`
 * (it wins over the environment), else `'env'` when `NOVA_GUARD_LEDGER` is set (not blank), else
 * `'flag'` (nothing else can name a ledger).
 */
export function ledgerSource(argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): LedgerSource {
  if (argv.some((a) => a === '--ledger' || a.startsWith('--ledger='))) return 'flag';
  return (env['NOVA_GUARD_LEDGER'] ?? '').trim() !== '' ? 'env' : 'flag';
}

/** The library's words in a ledger fix or warning, and the CLI's for them. */
function cliWords(source: LedgerSource): ReadonlyArray<readonly [string, string]> {
  return [
    ["ledger: 'in-process'", source === 'env' ? 'NOVA_GUARD_LEDGER=in-process (or unset it)' : '--ledger in-process'],
    // A guard's warning naming where its ledger string came from (the CLI gives it as the option).
    ['the `ledger` option', source === 'env' ? 'NOVA_GUARD_LEDGER' : '--ledger'],
    ["projectId in NovaClient's options / clouds.yaml's auth.project_id", '--os-project-id, or auth.project_id in clouds.yaml'],
  ];
}

/** `fix` (a {@link LedgerConfigError}'s) in the CLI's words, for a ledger named by `source`. */
export function cliLedgerFix(fix: string, source: LedgerSource = ledgerSource()): string {
  let out = fix;
  for (const [library, cli] of cliWords(source)) out = out.split(library).join(cli);
  return out;
}

/**
 * The message of `error` as the CLI prints it: a {@link LedgerConfigError}'s with its fix in the
 * CLI's words ({@link cliLedgerFix}, for the ledger's `source`); any other error's message as it is.
 */
export function cliMessage(error: Error, source: LedgerSource = ledgerSource()): string {
  if (!(error instanceof LedgerConfigError) || !error.message.endsWith(error.fix)) return error.message;
  return `${error.message.slice(0, error.message.length - error.fix.length)}${cliLedgerFix(error.fix, source)}`;
}
