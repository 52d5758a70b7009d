#!/usr/bin/env node
/**
 * The `nova-guard` command line. Subcommands:
 * - `server create NAME --flavor F --image I [--network ID | --nic none] [--wait] [--ledger URL] [-f ...] [-c ...]`
 *   (through the quota guard; see `serverCreate.ts`)
 * - `server list [--name REGEX] [--status S] [-f ...] [-c ...]` and `server show SERVER [-f ...] [-c ...]`
 * - `server delete <id...> [--wait] [--timeout 5m] [--interval 5s] [--force]`
 * - `server reap --prefix P --older-than 2h [--dry-run] [-f table|json|value|yaml] [-c COLUMN]...`
 * - `limits show --absolute [-f table|json|value|yaml] [-c COLUMN]...` (and `limits [--json]`)
 * - `quota show [--usage] [PROJECT_ID] [-f ...]`
 * - `quota audit [-f table|json|value|yaml] [-c COLUMN]... [--watch]`
 *
 * Every format flag works as the `openstack` command's (`-f`, `-c`, `--noindent`, `--max-width`); for
 * `server reap` and `quota audit` `-f table` is their report and `-f json` (or `--json`) the whole
 * result, while `-c`, `-f value` and `-f yaml` show their list (one row per server, one per resource).
 * Every duration flag (`--timeout`, `--interval`, `--max-wait`, `--older-than`, `--request-timeout`,
 * ...) takes a number with a unit, `500ms`/`30s`/`5m`/`2h` (and `1d`, `1w`); a bare number is refused
 * with one message naming the flag (exit 2). The old spellings (`server delete --timeout-ms` and
 * `--interval-ms`, `server create --max-wait-ms`, `server reap --poll-interval`, `--request-timeout-ms`,
 * `fake-nova --build-delay-ms` and `--delete-delay-ms`) still work and print one deprecation line
 * each on stderr (`addDurationOption` in `common.ts`).
 * - `fake-nova [--port 0] [--cores 20] [--build-delay 500ms] [--delete-delay 3s]` (a free port by default; prints the URL, and one
 *   line of what it served when stopped)
 *
 * Connection like the `openstack` command: `--os-cloud`/`OS_CLOUD`, `--os-auth-url` and the other
 * `--os-*` options with their `OS_*` variables, or `--os-token` with `--os-endpoint` (the older
 * `--token`/`--endpoint` and `NOVA_TOKEN`/`NOVA_ENDPOINT` still work). Exit codes as `openstack`'s:
 * 0 success; 1 failure, including configuration errors (no or an unknown cloud, a broken
 * clouds.yaml, an unreadable CA file) and a `-c` naming no column; 2 bad arguments, as argparse
 * (an unknown option, a bad flag value, a string that cannot be a server id); and for
 * `quota audit` 5 an operator must act (a finding that needs one), 3 drift found and 4 inconclusive; 130, 143 and 129 when SIGINT (Ctrl-C), SIGTERM or SIGHUP stops `server create` (it names a created
 * server, kept, or the name to look for when its POST never answered), `server delete` or
 * `server reap` (they name the servers asked to delete and not confirmed gone); a second signal
 * ends the process at once (`interrupt.ts`, docs/cli-signals.md).
 *
 * @module
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import type { NovaClient } from '../nova/client.js';
import { ConfigError, ValidationError } from '../errors/index.js';
import { addGlobalOptions, clientFromOptions, describeFailure, type GlobalOptions } from './common.js';
import { cliMessage } from './ledgerError.js';
import { registerFakeNovaCommand } from './fakeNova.js';
import { registerLimitsCommand } from './limits.js';
import { registerQuotaAuditCommand } from './quotaAudit.js';
import { registerReapCommand } from './reap.js';
import { registerServerDeleteCommand } from './serverDelete.js';
import { registerServerCreateCommand } from './serverCreate.js';
import { registerServerListCommand } from './serverList.js';
import { registerServerShowCommand } from './serverShow.js';
import { terminalSafe } from '../core/table.js';
import { VERSION } from '../core/version.js';
import { ColumnError } from './format.js';
import { registerQuotaShowCommand } from './quotaShow.js';

/** What a run of the program built: its client, once a command asked for one (for the failure line's hints). */
export interface ProgramRun {
  client?: NovaClient;
}

/** Build the program (exported for tests); `run.client` is set when a command builds its client. */
export function buildProgram(run: ProgramRun = {}): Command {
  const program = addGlobalOptions(new Command('nova-guard'))
    .description('Delete-and-wait, quota headroom and quota audit for OpenStack Nova')
    .version(VERSION)
    .exitOverride();
  const getClient = async (defaults?: { microversion?: string }): Promise<NovaClient> => (run.client = await clientFromOptions(program.opts<GlobalOptions>(), process.env, defaults));
  const server = program.command('server').description('server commands');
  registerServerCreateCommand(server, getClient);
  registerServerListCommand(server, getClient);
  registerServerShowCommand(server, getClient);
  registerServerDeleteCommand(server, getClient);
  registerReapCommand(server, getClient);
  registerLimitsCommand(program, getClient);
  const quota = program.command('quota').description('quota commands');
  registerQuotaShowCommand(quota, getClient);
  registerQuotaAuditCommand(quota, getClient);
  registerFakeNovaCommand(program);
  return program;
}

/**
 * Run the CLI with `argv` (without node and script). Resolves the exit code; `process.exitCode` is
 * left as it was (the commands set it while they run), so a second call never inherits the first's.
 */
export async function main(argv: string[]): Promise<number> {
  const run: ProgramRun = {};
  const program = buildProgram(run);
  const before = process.exitCode;
  process.exitCode = undefined;
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    if (e instanceof ValidationError) {
      // Bad arguments (argparse's exit 2 in `openstack`): the message says what to change.
      console.error(`nova-guard: ${e.message}`);
      return 2;
    }
    if (e instanceof ConfigError || e instanceof ColumnError) {
      // Configuration errors and a -c naming no column exit 1 in `openstack`; a ledger's fix in the CLI's words.
      console.error(`nova-guard: ${cliMessage(e)}`);
      return 1;
    }
    console.error(terminalSafe(`nova-guard: ${describeFailure(e, run.client)}`, true));
    return 1;
  } finally {
    process.exitCode = before;
  }
}

const invokedDirectly = ((): boolean => {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
})();
if (invokedDirectly) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
