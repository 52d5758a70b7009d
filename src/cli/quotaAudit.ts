/**
 * `nova-guard quota audit [-f table|json|value|yaml|csv] [-c COLUMN]...`: Nova's reported usage (before
 * and after listing), the count of the listed servers, limit and drift per resource; the suspects and
 * ghosts; the verdict in words.
 *
 * Output: see {@link renderAudit}; `--watch` prints JSON lines whatever the format (only `-f json`
 * may be given with it). Durations (`--retry-delay`, `--timeout`, `--interval`, `--stuck-build-after`)
 * take a unit, `500ms`, `30s`, `5m`, `2h`; a bare number is refused (`--interval 30` would have
 * sampled 30 ms apart).
 *
 * Exit codes (for cron alerts; {@link auditExitCode}): 5 an operator must act (a finding with
 * `needsOperator`: an orphaned mapping, a delete or build stuck, a cell that does not answer, stale
 * usage, a leaked allocation; whatever the verdict, since an orphaned mapping leaves the numbers
 * consistent), else 3 drift found (over- or under-reported), 4 inconclusive (usage kept changing
 * during every attempt, or could not be compared), 0 consistent; 1 error (the message on stderr),
 * 2 bad usage or configuration. With `--watch` (JSON lines: one per sample, then a summary): 5 a
 * finding that needs an operator persisted (every sample of the second half, the last included),
 * else 3 drift that persisted or came back, 4 the last sample could not be judged, 0 no drift or
 * drift that settled; 1 error.
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import type { NovaClient } from '../nova/client.js';
import { ValidationError } from '../errors/index.js';
import { auditQuota, type QuotaAudit } from '../audit/audit.js';
import { watchQuota, type QuotaWatch } from '../audit/watch.js';
import type { CountingModel } from '../audit/model.js';
import { formatAudit } from '../audit/format.js';
import { formatDuration } from '../core/duration.js';
import { jsonReplacer, terminalSafe } from '../core/table.js';
import { AUDIT_RESOURCES } from '../audit/count.js';
import { addDurationOption, describeFailure, parseIntFlag } from './common.js';
import { addFormatOptions, checkFormatFlags, formatList, limitCell, type Cell, type FormatFlags } from './format.js';

/** Exit code of each verdict, when no finding needs an operator. */
export const AUDIT_EXIT_CODES = { consistent: 0, 'over-reported': 3, 'under-reported': 3, inconclusive: 4 } as const;

/** Exit code when some finding needs an operator (`QuotaAudit.needsOperator`), whatever the verdict. */
export const AUDIT_EXIT_OPERATOR = 5;

/** The exit code of one audit: {@link AUDIT_EXIT_OPERATOR} when a finding needs an operator, else the verdict's. */
export function auditExitCode(audit: Pick<QuotaAudit, 'verdict' | 'needsOperator'>): number {
  return audit.needsOperator ? AUDIT_EXIT_OPERATOR : AUDIT_EXIT_CODES[audit.verdict];
}

/** The exit code of a watch: 5 when a finding that needs an operator persisted, else 3 drift that stayed or came back, 4 the last sample not judged, 0. */
export function watchExitCode(w: Pick<QuotaWatch, 'trend' | 'persistent' | 'last'>): number {
  const operatorKinds = new Set(w.last.findings.filter((f) => f.needsOperator).map((f) => f.kind));
  if (w.persistent.some((p) => operatorKinds.has(p.kind))) return AUDIT_EXIT_OPERATOR;
  if (Object.values(w.trend).some((t) => t === 'persistent' || t === 'fluctuating')) return 3;
  return Object.values(w.trend).includes('unknown') ? 4 : 0;
}

interface AuditFlags extends FormatFlags {
  json?: boolean;
  ghosts?: boolean;
  ghostConcurrency?: string;
  attempts?: string;
  /** `--retry-delay`, in ms. */
  retryDelay?: number;
  /** `--timeout`, in ms. */
  timeout?: number;
  watch?: boolean;
  /** `--interval`, in ms. */
  interval?: number;
  samples?: string;
  model?: string;
  /** `--stuck-build-after`, in ms. */
  stuckBuildAfter?: number;
}

/** The columns of `quota audit`'s list view (`-c`, `-f value|yaml|csv`, see {@link auditRows}). */
export const AUDIT_COLUMNS = ['Resource', 'Reported Before', 'Counted', 'Reported After', 'Limit', 'Drift', 'Verdict'] as const;

/**
 * The list view of an audit: one row per resource (`cores`, `ramMiB`, `instances`), with the usage
 * Nova reported before and after the listing, the usage counted from the listed servers, the limit
 * (-1 unlimited), the drift (`reported − counted`; null when it cannot be judged) and the resource's
 * verdict (`consistent`, `over-reported`, `under-reported`, `inconclusive`). A value Nova did not
 * report is null.
 */
export function auditRows(audit: Pick<QuotaAudit, 'resources'>): Cell[][] {
  return AUDIT_RESOURCES.map((res) => {
    const r = audit.resources[res];
    return [res, limitCell(r.reportedBefore), r.counted, limitCell(r.reportedAfter), limitCell(r.limit), r.drift, r.verdict];
  });
}

/**
 * What `quota audit` prints on stdout for its format flags:
 * - `-f table` (the default) without `-c`: the report of `formatAudit`; with `-c`: the list view
 *   ({@link auditRows}) as a bordered table of those columns (`--max-width` applies);
 * - `-f json` (or `--json`) without `-c`: the whole audit (unlimited as -1); with `-c`: the list view's
 *   rows as objects. `--noindent` prints it on one line;
 * - `-f value`, `-f yaml` and `-f csv`: the list view (all columns, or those of `-c`).
 * @throws {@link ColumnError} when `-c` names no column.
 */
export function renderAudit(audit: QuotaAudit, flags: FormatFlags): string {
  const format = flags.format ?? 'table';
  if (format === 'value' || format === 'yaml' || format === 'csv' || (flags.column?.length ?? 0) > 0) return formatList(AUDIT_COLUMNS, auditRows(audit), flags);
  if (format === 'json') return JSON.stringify(audit, jsonReplacer, flags.noindent ? undefined : 2);
  return formatAudit(audit);
}

/** Register `audit` under the `quota` command. */
export function registerQuotaAuditCommand(quota: Command, getClient: () => Promise<NovaClient>): void {
  const cmd = addFormatOptions(
    quota
      .command('audit')
      .description(
        'compare the usage Nova reports (/limits, quota-set detail) with the servers it lists; exit 5 an operator must act (orphaned mapping, stuck delete or build, down cell, stale usage, leaked allocation; whatever the verdict), ' +
          'else 3 drift, 4 inconclusive, 0 consistent; 1 error, 2 bad usage or configuration. ' +
          'Output: -f table (default) is the report, -f json (or --json) the whole audit; -c COLUMN, -f value, -f yaml and -f csv show one row per resource ' +
          `with the columns ${AUDIT_COLUMNS.join(', ')}. Durations take a unit: 500ms, 30s, 5m, 2h`,
      )
      .option('--json', 'the same as -f json (unlimited = -1)')
      .option('--no-ghosts', 'skip the GET of each listed server that finds ghosts')
      .option('--ghost-concurrency <n>', 'ghost-check GETs at once (default 8)')
      .option('--attempts <n>', 'audit up to n times while reported usage changes during the audit (default 3)')
      .option('--model <model>', 'how the cloud counts usage: legacy, placement or unified-limits (default: inferred)')
      .option('--watch', 'sample the audit over time; one JSON line per sample, then a summary line (exit 5 when a finding that needs an operator persists, 3 when drift does)')
      .option('--samples <n>', 'with --watch: number of samples (default 20)'),
  );
  addDurationOption(cmd, { flag: '--retry-delay', description: 'pause before another attempt', shownDefault: '5s', allowZero: true });
  addDurationOption(cmd, { flag: '--timeout', description: 'time box of each attempt (with --watch: of each sample)', shownDefault: '5m' });
  addDurationOption(cmd, { flag: '--stuck-build-after', description: 'a server in BUILD longer than this since its creation is stuck-build (exit 5)', shownDefault: '1h' });
  addDurationOption(cmd, { flag: '--interval', description: 'with --watch: pause between samples', shownDefault: '30s', allowZero: true });
  cmd.action(async (flags: AuditFlags) => {
    if (flags.json) flags.format = 'json';
    if (flags.watch && ((flags.column?.length ?? 0) > 0 || (cmd.getOptionValueSource('format') === 'cli' && flags.format !== 'json'))) {
      throw new ValidationError('--watch prints JSON lines: -c and -f table|value|yaml|csv do not apply to it');
    }
    // As argparse would for a flag that belongs to another mode: bad usage, exit 2, before any request.
    if (!flags.watch) {
      const stray = (['interval', 'samples'] as const).filter((k) => flags[k] !== undefined);
      if (stray.length > 0) throw new ValidationError(`${stray.map((k) => `--${k}`).join(' and ')} ${stray.length > 1 ? 'apply' : 'applies'} only with --watch (sample the audit over time): add --watch, or drop ${stray.length > 1 ? 'them' : 'it'}`);
    }
    checkFormatFlags(flags);
    const model = flags.model as CountingModel | undefined;
    if (model !== undefined && !['legacy', 'placement', 'unified-limits'].includes(model)) throw new ValidationError(`--model must be legacy, placement or unified-limits, got ${model}`);
    const concurrency = flags.ghostConcurrency === undefined ? undefined : parseIntFlag(flags.ghostConcurrency, '--ghost-concurrency');
    const auditOptions = {
      checkGhosts: flags.ghosts !== false,
      ...(model ? { countingModel: model } : {}),
      ...(concurrency ? { ghostCheckConcurrency: concurrency } : {}),
      ...(flags.timeout !== undefined ? { timeoutMs: flags.timeout } : {}),
      ...(flags.stuckBuildAfter !== undefined ? { stuckBuildAfterMs: flags.stuckBuildAfter } : {}),
    };
    const failed = (e: unknown, client: object): void => {
      if (e instanceof ValidationError) throw e;
      console.error(terminalSafe(`nova-guard quota audit: ${(e as Error).name}: ${describeFailure(e, client)}`, true));
      process.exitCode = 1;
    };
    if (flags.watch) {
      const intervalMs = flags.interval ?? 30_000;
      const samples = flags.samples === undefined ? 20 : parseIntFlag(flags.samples, '--samples');
      const client = await getClient();
      try {
        const w = await watchQuota(client, {
          ...auditOptions,
          intervalMs,
          samples,
          onSample: (s) => console.log(JSON.stringify({ type: 'sample', ...s }, jsonReplacer)),
        });
        console.log(JSON.stringify({ type: 'summary', trend: w.trend, persistent: w.persistent, settled: w.settled, findings: w.last.findings }, jsonReplacer));
        process.exitCode = watchExitCode(w);
      } catch (e) {
        failed(e, client);
      }
      return;
    }
    const attempts = flags.attempts === undefined ? 3 : parseIntFlag(flags.attempts, '--attempts');
    const retryDelayMs = flags.retryDelay ?? 5000;
    const client = await getClient();
    let audit: QuotaAudit | undefined;
    try {
      for (let attempt = 1; attempt <= attempts; attempt++) {
        audit = await auditQuota(client, auditOptions);
        if (audit.stable || attempt === attempts) break;
        console.error(`Reported usage changed during attempt ${attempt} of ${attempts}; auditing again in ${formatDuration(retryDelayMs)}.`);
        await sleep(retryDelayMs);
      }
    } catch (e) {
      failed(e, client);
      return;
    }
    const result = audit!;
    console.log(renderAudit(result, flags));
    process.exitCode = auditExitCode(result);
  });
}
