/**
 * A {@link LedgerConfigError} as the CLI prints it: the same cause, its fix phrased for the command
 * line (`--ledger in-process`, `--os-project-id`) instead of the library's option syntax
 * (`ledger: 'in-process'`, `projectId` in `NovaClient`'s options).
 *
 * @module
 */
import { LedgerConfigError } from '../errors/index.js';

/** The library's words in a ledger fix, and the CLI's for them. */
const CLI_WORDS: ReadonlyArray<readonly [string, string]> = [
  ["ledger: 'in-process'", '--ledger in-process (or unset NOVA_GUARD_LEDGER)'],
  ["projectId in NovaClient's options / clouds.yaml's auth.project_id", "--os-project-id, or auth.project_id in clouds.yaml"],
];

/** `fix` (a {@link LedgerConfigError}'s) in the CLI's words. */
export function cliLedgerFix(fix: string): string {
  let out = fix;
  for (const [library, cli] of CLI_WORDS) out = out.split(library).join(cli);
  return out;
}

/**
 * The message of `error` as the CLI prints it: a {@link LedgerConfigError}'s with its fix in the
 * CLI's words ({@link cliLedgerFix}); any other error's message as it is.
 */
export function cliMessage(error: Error): string {
  if (!(error instanceof LedgerConfigError) || !error.message.endsWith(error.fix)) return error.message;
  return `${error.message.slice(0, error.message.length - error.fix.length)}${cliLedgerFix(error.fix)}`;
}
