/**
 * `nova-guard server reap --prefix P --older-than 2h [--dry-run] [--json]`: delete the fleet's leaked
 * servers (see `src/reaper.ts`).
 *
 * - Without `--state-file`: two passes `--pass-interval` apart (default 60s) in one run.
 * - With `--state-file F` (cron): one pass per run; what the pass saw is kept in F, so the next run
 *   deletes the servers that were candidates both times. A dry run never writes F.
 *
 * Progress goes to stderr: a progress bar on a TTY, plain lines otherwise. The result goes to stdout.
 * Exit codes: 0 when nothing failed, 1 when a deletion failed (`N of M servers failed to delete.`) or
 * on error, 2 on bad usage.
 *
 * @module
 */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import type { NovaClient } from '../nova/client.js';
import { ValidationError } from '../errors/index.js';
import { Reaper, reapServers, type ReapEvent, type ReapResult, type ReaperOptions } from '../reaper/reaper.js';
import { readReaperState, writeReaperState } from '../reaper/state.js';
import { formatDuration, parseDuration } from '../core/duration.js';
import { jsonReplacer, renderTable, terminalSafe } from '../core/table.js';
import { describeFailure, parseIntFlag } from './common.js';

interface ReapFlags {
  prefix?: string;
  metadata?: string;
  olderThan?: string;
  dryRun?: boolean;
  json?: boolean;
  passInterval?: string;
  stateFile?: string;
  deleteTimeout?: string;
  pollInterval?: string;
  concurrency?: string;
  timeout?: string;
}

/** Options of the reaper from the command's flags; throws {@link ValidationError}. */
export function reaperOptionsFromFlags(flags: ReapFlags): ReaperOptions & { passIntervalMs: number } {
  if (flags.olderThan === undefined) throw new ValidationError('--older-than is required, e.g. --older-than 2h');
  const options: ReaperOptions & { passIntervalMs: number } = {
    olderThanMs: parseDuration(flags.olderThan, '--older-than'),
    dryRun: Boolean(flags.dryRun),
    passIntervalMs: flags.passInterval === undefined ? 60000 : parseDuration(flags.passInterval, '--pass-interval'),
  };
  if (flags.prefix !== undefined) options.prefix = flags.prefix;
  if (flags.metadata !== undefined) {
    const eq = flags.metadata.indexOf('=');
    options.metadataKey = eq < 0 ? flags.metadata : flags.metadata.slice(0, eq);
    if (eq >= 0) options.metadataValue = flags.metadata.slice(eq + 1);
  }
  if (options.prefix === undefined && options.metadataKey === undefined) {
    throw new ValidationError('give the fleet: --prefix P and/or --metadata KEY[=VALUE] (the reaper never reaps every server)');
  }
  if (flags.deleteTimeout !== undefined) options.deleteTimeoutMs = parseDuration(flags.deleteTimeout, '--delete-timeout');
  if (flags.timeout !== undefined) options.timeoutMs = parseDuration(flags.timeout, '--timeout');
  if (flags.pollInterval !== undefined) options.deleteIntervalMs = parseDuration(flags.pollInterval, '--poll-interval');
  if (flags.concurrency !== undefined) {
    options.concurrency = parseIntFlag(flags.concurrency, '--concurrency');
  }
  return options;
}

/** Progress on stderr: a bar on a TTY, a line per step otherwise. */
function progressReporter(tty: boolean): { onEvent: (e: ReapEvent) => void; stop: () => void } {
  let bar: cliProgress.SingleBar | undefined;
  let done = 0;
  const stop = (): void => {
    bar?.stop();
    bar = undefined;
  };
  const line = (text: string): void => {
    if (!bar) console.error(terminalSafe(text, true));
  };
  const onEvent = (e: ReapEvent): void => {
    switch (e.type) {
      case 'listed':
        stop();
        console.error(`pass ${e.pass}: ${e.listed} servers listed, ${e.candidates} candidates, ${e.toDelete} to delete`);
        if (tty && e.toDelete > 0) {
          done = 0;
          bar = new cliProgress.SingleBar(
            { format: 'Reaping {bar} {value}/{total} | {last}', stream: process.stderr, hideCursor: true, clearOnComplete: false },
            cliProgress.Presets.shades_classic,
          );
          bar.start(e.toDelete, 0, { last: 'deleting' });
        }
        break;
      case 'delete-started':
        line(`deleting ${e.serverId} (${e.name ?? '-'})`);
        break;
      case 'deleted':
        bar?.update(++done, { last: terminalSafe(`${e.name ?? e.serverId} ${e.outcome}`, true) });
        line(`${e.outcome} ${e.serverId} (${e.name ?? '-'}) in ${formatDuration(e.elapsedMs)}`);
        if (bar && done === bar.getTotal()) stop();
        break;
      case 'delete-failed':
        bar?.update(++done, { last: terminalSafe(`${e.name ?? e.serverId} FAILED`, true) });
        line(`failed ${e.serverId} (${e.name ?? '-'}): ${e.error.message}`);
        if (bar && done === bar.getTotal()) stop();
        break;
      case 'waiting':
        stop();
        console.error(`waiting ${formatDuration(e.nextPassInMs)} for the next pass (a server is deleted only when seen on two passes)`);
        break;
    }
  };
  return { onEvent, stop };
}

/** The human report of a reap (what `server reap` prints without `--json`). */
export function formatReap(r: Pick<ReapResult, 'dryRun' | 'deleted' | 'skipped' | 'failed' | 'candidates'>, olderThanMs?: number): string {
  const rows: string[][] = [['result', 'id', 'name', 'age', 'detail']];
  for (const d of r.deleted) rows.push([d.outcome, d.serverId, d.name ?? '-', formatDuration(d.ageMs), `in ${formatDuration(d.elapsedMs)}`]);
  for (const f of r.failed) rows.push(['failed', f.serverId, f.name ?? '-', formatDuration(f.ageMs), `${f.error.name}: ${f.error.message}`]);
  for (const s of r.skipped) {
    const detail = s.reason === 'too-young' && olderThanMs !== undefined ? `younger than ${formatDuration(olderThanMs)}` : s.detail;
    rows.push([s.reason === 'dry-run' ? 'would delete' : `skipped (${s.reason})`, s.serverId, s.name ?? '-', formatDuration(s.ageMs), detail]);
  }
  const head = `${r.dryRun ? 'Dry run: ' : ''}${r.deleted.length} deleted, ${r.failed.length} failed, ${r.skipped.length} skipped, ${r.candidates.length} candidates.`;
  return rows.length > 1 ? `${head}\n${renderTable(rows)}` : head;
}

/** Register `reap` under the `server` command. */
export function registerReapCommand(server: Command, getClient: () => Promise<NovaClient>): void {
  server
    .command('reap')
    .description("delete the fleet's leaked servers: older than --older-than and seen on two consecutive passes")
    .option('--prefix <prefix>', 'fleet: server name prefix')
    .option('--metadata <key[=value]>', 'fleet: metadata key (and value) its servers carry')
    .option('--older-than <duration>', 'only servers older than this, e.g. 90s, 30m, 2h, 1d (required)')
    .option('--dry-run', 'list what would be deleted; send no DELETE')
    .option('--json', 'print the result as JSON')
    .option('--pass-interval <duration>', 'time between the two passes (default 60s)')
    .option('--state-file <file>', 'cron mode: run one pass and keep what it saw in this file')
    .option('--delete-timeout <duration>', 'time box of each deletion (default 5m)')
    .option('--poll-interval <duration>', 'poll interval while waiting for a deletion (default 5s)')
    .option('--concurrency <n>', 'deletions at once (default 10)')
    .option('--timeout <duration>', 'time box of each pass, listing and deletions (default 15m)')
    .action(async (flags: ReapFlags) => {
      const options = reaperOptionsFromFlags(flags);
      const client = await getClient();
      const progress = progressReporter(Boolean(process.stderr.isTTY) && !flags.json);
      options.onEvent = progress.onEvent;
      let result: Pick<ReapResult, 'dryRun' | 'deleted' | 'skipped' | 'failed' | 'candidates'>;
      try {
        if (flags.stateFile) {
          const reaper = new Reaper(client, { ...options, state: await readReaperState(flags.stateFile) });
          result = await reaper.pass();
          if (!options.dryRun) await writeReaperState(flags.stateFile, reaper.state);
        } else {
          result = await reapServers(client, options);
        }
      } catch (e) {
        if (e instanceof ValidationError) throw e;
        progress.stop();
        console.error(terminalSafe(`nova-guard server reap: ${(e as Error).name}: ${describeFailure(e)}`, true));
        process.exitCode = 1;
        return;
      } finally {
        progress.stop();
      }
      const { dryRun, deleted, skipped, failed, candidates } = result;
      console.log(flags.json ? JSON.stringify({ dryRun, deleted, failed, skipped, candidates }, jsonReplacer, 2) : formatReap(result, options.olderThanMs));
      if (failed.length > 0) {
        console.error(`${failed.length} of ${deleted.length + failed.length} servers failed to delete.`);
        process.exitCode = 1;
      }
    });
}
