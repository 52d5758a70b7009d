/**
 * `nova-guard server reap --prefix P --older-than 2h [--dry-run] [-f table|json|value|yaml|csv] [-c COLUMN]...`:
 * delete the fleet's leaked servers (the reaper, `src/reaper/`).
 *
 * - Without `--state-file`: two passes `--pass-interval` apart (default 60s) in one run.
 * - With `--state-file F` (cron): one pass per run; what the pass saw is kept in F, so the next run
 *   deletes the servers that were candidates both times. A dry run never writes F.
 *
 * Progress goes to stderr: a progress bar on a TTY, plain lines otherwise. The result goes to stdout:
 * the report by default, the whole result with `-f json` (or `--json`), one row per server with
 * `-c COLUMN`, `-f value`, `-f yaml` or `-f csv` (see `renderReap`). Durations take a unit, `500ms`, `30s`,
 * `5m`, `2h` (a bare number is refused: `--older-than 2` would have reaped almost every server);
 * `--poll-interval` is the old spelling of `--interval` (it warns).
 * Exit codes: 0 when nothing failed, 1 when a deletion failed (`N of M servers failed to delete.`) or
 * on error, 2 on bad usage; 130, 143, 129 when SIGINT (Ctrl-C), SIGTERM or SIGHUP stops it: stderr
 * then names the servers asked to delete and not confirmed gone, at once (`interrupt.ts`).
 *
 * @module
 */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import type { NovaClient } from '../nova/client.js';
import { ValidationError } from '../errors/index.js';
import { Reaper, reapServers, type ReapEvent, type ReapResult, type ReaperOptions } from '../reaper/reaper.js';
import { readReaperState, writeReaperState } from '../reaper/state.js';
import { formatDuration } from '../core/duration.js';
import { jsonReplacer, renderTable, terminalSafe } from '../core/table.js';
import { addDurationOption, describeFailure, parseIntFlag } from './common.js';
import { signalWords, watchStopSignals } from './interrupt.js';
import { addFormatOptions, checkFormatFlags, formatList, type Cell, type FormatFlags } from './format.js';

/** The flags of `server reap`; durations in ms (parsed by commander, see `addDurationOption`). */
export interface ReapFlags extends FormatFlags {
  prefix?: string;
  metadata?: string;
  /** `--older-than`, in ms (required). */
  olderThan?: number;
  dryRun?: boolean;
  json?: boolean;
  /** `--pass-interval`, in ms. @default 60000 */
  passInterval?: number;
  stateFile?: string;
  /** `--delete-timeout`, in ms: the time box of each deletion. */
  deleteTimeout?: number;
  /** `--interval` (old spelling `--poll-interval`), in ms: between the polls of a deletion. */
  interval?: number;
  concurrency?: string;
  /** `--timeout`, in ms: the time box of each pass. */
  timeout?: number;
}

/** Options of the reaper from the command's flags; throws {@link ValidationError}. */
export function reaperOptionsFromFlags(flags: ReapFlags): ReaperOptions & { passIntervalMs: number } {
  if (flags.olderThan === undefined) throw new ValidationError('--older-than is required, e.g. --older-than 2h');
  const options: ReaperOptions & { passIntervalMs: number } = {
    olderThanMs: flags.olderThan,
    dryRun: Boolean(flags.dryRun),
    passIntervalMs: flags.passInterval ?? 60_000,
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
  if (flags.deleteTimeout !== undefined) options.deleteTimeoutMs = flags.deleteTimeout;
  if (flags.timeout !== undefined) options.timeoutMs = flags.timeout;
  if (flags.interval !== undefined) options.deleteIntervalMs = flags.interval;
  if (flags.concurrency !== undefined) {
    options.concurrency = parseIntFlag(flags.concurrency, '--concurrency');
  }
  return options;
}

/** Progress on stderr: a bar on a TTY, a line per step otherwise. */
function progressReporter(tty: boolean, dryRun = false): { onEvent: (e: ReapEvent) => void; stop: () => void } {
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
        // A dry run deletes nothing: it says what it would delete, as its result does (would-delete).
        console.error(`pass ${e.pass}: ${e.listed} servers listed, ${e.candidates} candidates, ${dryRun ? `would delete ${e.wouldDelete} (dry run)` : `${e.toDelete} to delete`}`);
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
  // A dry run deletes nothing: its head counts what it would delete apart from what it skips.
  const wouldDelete = r.skipped.filter((s) => s.reason === 'dry-run').length;
  const head = r.dryRun
    ? `Dry run: would delete ${wouldDelete}, ${r.skipped.length - wouldDelete} skipped, ${r.candidates.length} candidates.`
    : `${r.deleted.length} deleted, ${r.failed.length} failed, ${r.skipped.length} skipped, ${r.candidates.length} candidates.`;
  return rows.length > 1 ? `${head}\n${renderTable(rows)}` : head;
}

/** The columns of `server reap`'s list view (`-c`, `-f value|yaml|csv`, see {@link reapRows}). */
export const REAP_COLUMNS = ['ID', 'Name', 'Result', 'Reason', 'Age', 'Detail'] as const;

/**
 * The list view of a reap: one row per server the reap looked at, in the order of the report
 * (deleted, failed, skipped), with the columns of {@link REAP_COLUMNS}:
 * - `ID`, `Name` (null when Nova gave none);
 * - `Result`: how the deletion ended (`deleted`, `already-gone`, `soft-deleted`, `delete-requested`),
 *   `failed`, `would-delete` (a candidate of a dry run) or `skipped`;
 * - `Reason`: why it was skipped (`too-young`, `first-sighting`, `changed`, ...; `dry-run` for a
 *   would-delete, as `-f json` says) or the error class of a failure (`DeleteTimeoutError`, ...);
 *   null for a deletion;
 * - `Age`: its age as `850ms`, `42s`, `3h`, `2d 4h` (`-` when unknown);
 * - `Detail`: the time the deletion took, the error message, or the reason in words.
 */
export function reapRows(r: Pick<ReapResult, 'deleted' | 'skipped' | 'failed'>, olderThanMs?: number): Cell[][] {
  const rows: Cell[][] = [];
  for (const d of r.deleted) rows.push([d.serverId, d.name ?? null, d.outcome, null, formatDuration(d.ageMs), `in ${formatDuration(d.elapsedMs)}`]);
  for (const f of r.failed) rows.push([f.serverId, f.name ?? null, 'failed', f.error.name, formatDuration(f.ageMs), f.error.message]);
  for (const s of r.skipped) {
    const detail = s.reason === 'too-young' && olderThanMs !== undefined ? `younger than ${formatDuration(olderThanMs)}` : s.detail;
    const dry = s.reason === 'dry-run';
    rows.push([s.serverId, s.name ?? null, dry ? 'would-delete' : 'skipped', s.reason, formatDuration(s.ageMs), detail]);
  }
  return rows;
}

/**
 * What `server reap` prints on stdout for its format flags:
 * - `-f table` (the default) without `-c`: the report of {@link formatReap} (a summary line, then a
 *   table); with `-c`: the list view ({@link reapRows}) as a bordered table of those columns
 *   (`--max-width` applies);
 * - `-f json` (or `--json`) without `-c`: the whole result (`dryRun`, `deleted`, `failed`, `skipped`,
 *   `candidates`, ages and times in ms); with `-c`: the list view's rows as objects. `--noindent`
 *   prints it on one line;
 * - `-f value`, `-f yaml` and `-f csv`: the list view (all columns, or those of `-c`).
 * @throws {@link ColumnError} when `-c` names no column.
 */
export function renderReap(result: Pick<ReapResult, 'dryRun' | 'deleted' | 'skipped' | 'failed' | 'candidates'>, flags: FormatFlags, olderThanMs?: number): string {
  const format = flags.format ?? 'table';
  const listView = format === 'value' || format === 'yaml' || format === 'csv' || (flags.column?.length ?? 0) > 0;
  if (listView) return formatList(REAP_COLUMNS, reapRows(result, olderThanMs), flags);
  if (format === 'json') {
    const { dryRun, deleted, skipped, failed, candidates } = result;
    return JSON.stringify({ dryRun, deleted, failed, skipped, candidates }, jsonReplacer, flags.noindent ? undefined : 2);
  }
  return formatReap(result, olderThanMs);
}

/**
 * What an interrupted `server reap` says: the servers it asked to delete whose deletion is not
 * confirmed (their deletion goes on in Nova, or failed), with the command that waits for them.
 */
export function reapInterruptedLines(open: readonly string[]): string {
  if (open.length === 0) return 'No server was left asked to delete and not confirmed gone.';
  return `Asked to delete and NOT confirmed gone (Nova goes on deleting them): ${open.join(', ')}. Wait for them with\n  nova-guard server delete --wait ${open.join(' ')}`;
}

/** Register `reap` under the `server` command. */
export function registerReapCommand(server: Command, getClient: () => Promise<NovaClient>): void {
  const cmd = addFormatOptions(
    server
      .command('reap')
      .description(
        "delete the fleet's leaked servers: older than --older-than and seen on two consecutive passes. " +
          'Durations take a unit: 500ms, 30s, 5m, 2h (1d, 1w); a bare number is refused. ' +
          'Output: -f table (default) is the report, -f json (or --json) the whole result; -c COLUMN, -f value, -f yaml and -f csv ' +
          `show one row per server with the columns ${REAP_COLUMNS.join(', ')}`,
      )
      .option('--prefix <prefix>', 'fleet: server name prefix')
      .option('--metadata <key[=value]>', 'fleet: metadata key (and value) its servers carry'),
  );
  addDurationOption(cmd, { flag: '--older-than', description: 'only servers older than this (required)', allowZero: true });
  cmd
    .option('--dry-run', 'list what would be deleted; send no DELETE')
    .option('--json', 'the same as -f json')
    .option('--state-file <file>', 'cron mode: run one pass and keep what it saw in this file')
    .option('--concurrency <n>', 'deletions at once (default 10)');
  addDurationOption(cmd, { flag: '--pass-interval', description: 'time between the two passes', shownDefault: '60s', allowZero: true });
  addDurationOption(cmd, { flag: '--timeout', description: 'time box of each pass, listing and deletions', shownDefault: '15m' });
  addDurationOption(cmd, { flag: '--delete-timeout', description: 'time box of each deletion', shownDefault: '5m' });
  addDurationOption(cmd, { flag: '--interval', old: ['--poll-interval'], description: 'time between polls while waiting for a deletion', shownDefault: '5s' });
  cmd.action(async (flags: ReapFlags) => {
    if (flags.json) flags.format = 'json';
    const options = reaperOptionsFromFlags(flags);
    checkFormatFlags(flags);
    const client = await getClient();
    const progress = progressReporter(Boolean(process.stderr.isTTY) && flags.format === 'table', Boolean(options.dryRun));
    // SIGINT, SIGTERM, SIGHUP: stop the pass, then say which servers were asked to delete and are
    // not confirmed gone (their deletion goes on in Nova); a second signal says it and exits at once.
    const asked = new Set<string>();
    const track = (e: ReapEvent): void => {
      if (e.type === 'delete-started') asked.add(e.serverId);
      else if (e.type === 'deleted' && (e.outcome === 'deleted' || e.outcome === 'already-gone')) asked.delete(e.serverId);
    };
    options.onEvent = (e) => {
      track(e);
      progress.onEvent(e);
    };
    let said: string | undefined;
    const stop = watchStopSignals({
      first: (signal) => {
        progress.stop();
        said = reapInterruptedLines([...asked]);
        console.error(terminalSafe(`Interrupted by ${signalWords(signal)}. ${said}`));
      },
      again: (signal) => console.error(terminalSafe(`Stopped by ${signalWords(signal)}. ${reapInterruptedLines([...asked])}`)),
    });
    options.signal = stop.signal;
    let result: Pick<ReapResult, 'dryRun' | 'deleted' | 'skipped' | 'failed' | 'candidates'>;
    try {
      if (flags.stateFile) {
        // One pass per run: the time between passes is the cron schedule's, not an option of the Reaper.
        const { passIntervalMs: _passIntervalMs, ...reaperOptions } = options;
        const reaper = new Reaper(client, { ...reaperOptions, state: await readReaperState(flags.stateFile) });
        result = await reaper.pass();
        if (!options.dryRun) await writeReaperState(flags.stateFile, reaper.state);
      } else {
        result = await reapServers(client, options);
      }
    } catch (e) {
      if (e instanceof ValidationError) throw e;
      progress.stop();
      if (stop.received !== undefined) {
        const now = reapInterruptedLines([...asked]);
        if (now !== said) console.error(terminalSafe(`Interrupted. ${now}`));
        process.exitCode = stop.exitCode;
        return;
      }
      console.error(terminalSafe(`nova-guard server reap: ${(e as Error).name}: ${describeFailure(e, client)}`, true));
      process.exitCode = 1;
      return;
    } finally {
      stop.dispose();
      progress.stop();
    }
    console.log(renderReap(result, flags, options.olderThanMs));
    if (result.failed.length > 0) {
      console.error(`${result.failed.length} of ${result.deleted.length + result.failed.length} servers failed to delete.`);
      process.exitCode = 1;
    }
  });
}
