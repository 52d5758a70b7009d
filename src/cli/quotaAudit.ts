/**
 * `nova-guard quota audit [--json]`: Nova's reported usage (before and after listing), the count of
 * the listed servers, limit and drift per resource; the suspects and ghosts; the verdict in words.
 *
 * Exit codes (for cron alerts): 0 consistent, 3 drift found (over- or under-reported), 4 inconclusive
 * (usage kept changing during every attempt, or could not be compared), 1 error (the message on stderr).
 * With `--watch` (JSON lines: one per sample, then a summary): 0 no drift or drift that settled,
 * 3 drift that persisted or came back, 4 the last sample could not be judged, 1 error.
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import type { NovaClient } from '../nova/client.js';
import { ValidationError } from '../errors/index.js';
import { auditQuota, type QuotaAudit } from '../audit/audit.js';
import { watchQuota } from '../audit/watch.js';
import type { CountingModel } from '../audit/model.js';
import { formatAudit } from '../audit/format.js';
import { formatDuration, parseDuration } from '../core/duration.js';
import { jsonReplacer, terminalSafe } from '../core/table.js';
import { describeFailure, parseIntFlag } from './common.js';

export { formatAudit } from '../audit/format.js';

/** Exit code of each verdict. */
export const AUDIT_EXIT_CODES = { consistent: 0, 'over-reported': 3, 'under-reported': 3, inconclusive: 4 } as const;

interface AuditFlags {
  json?: boolean;
  ghosts?: boolean;
  ghostConcurrency?: string;
  attempts?: string;
  retryDelay?: string;
  timeout?: string;
  watch?: boolean;
  interval?: string;
  samples?: string;
  model?: string;
}

/** Register `audit` under the `quota` command. */
export function registerQuotaAuditCommand(quota: Command, getClient: () => Promise<NovaClient>): void {
  quota
    .command('audit')
    .description(
      "compare the usage Nova reports (/limits, quota-set detail) with the servers it lists; exit 0 consistent, 3 drift, 4 inconclusive, 1 error, 2 bad usage or configuration",
    )
    .option('--json', 'print the audit as JSON (unlimited = -1)')
    .option('--no-ghosts', 'skip the GET of each listed server that finds ghosts')
    .option('--ghost-concurrency <n>', 'ghost-check GETs at once (default 8)')
    .option('--attempts <n>', 'audit up to n times while reported usage changes during the audit (default 3)')
    .option('--retry-delay <duration>', 'pause before another attempt, e.g. 5s (default 5s)')
    .option('--timeout <duration>', 'time box of each attempt (with --watch: of each sample) (default 5m)')
    .option('--model <model>', 'how the cloud counts usage: legacy, placement or unified-limits (default: inferred)')
    .option('--watch', 'sample the audit over time; one JSON line per sample, then a summary line (exit 3 when drift persists)')
    .option('--interval <duration>', 'with --watch: pause between samples (default 30s)')
    .option('--samples <n>', 'with --watch: number of samples (default 20)')
    .action(async (flags: AuditFlags) => {
      const model = flags.model as CountingModel | undefined;
      if (model !== undefined && !['legacy', 'placement', 'unified-limits'].includes(model)) throw new ValidationError(`--model must be legacy, placement or unified-limits, got ${model}`);
      const timeoutMs = flags.timeout === undefined ? undefined : parseDuration(flags.timeout, '--timeout');
      const concurrency = flags.ghostConcurrency === undefined ? undefined : parseIntFlag(flags.ghostConcurrency, '--ghost-concurrency');
      if (flags.watch) {
        const intervalMs = flags.interval === undefined ? 30_000 : parseDuration(flags.interval, '--interval');
        const samples = flags.samples === undefined ? 20 : parseIntFlag(flags.samples, '--samples');
        const client = await getClient();
        try {
          const w = await watchQuota(client, {
            intervalMs,
            samples,
            checkGhosts: flags.ghosts !== false,
            ...(model ? { countingModel: model } : {}),
            ...(concurrency ? { ghostCheckConcurrency: concurrency } : {}),
            ...(timeoutMs !== undefined ? { timeoutMs } : {}),
            onSample: (s) => console.log(JSON.stringify({ type: 'sample', ...s }, jsonReplacer)),
          });
          console.log(JSON.stringify({ type: 'summary', trend: w.trend, persistent: w.persistent, settled: w.settled, findings: w.last.findings }, jsonReplacer));
          const drifting = Object.values(w.trend).some((t) => t === 'persistent' || t === 'fluctuating');
          process.exitCode = drifting ? 3 : Object.values(w.trend).includes('unknown') ? 4 : 0;
        } catch (e) {
          if (e instanceof ValidationError) throw e;
          console.error(terminalSafe(`nova-guard quota audit: ${(e as Error).name}: ${describeFailure(e)}`, true));
          process.exitCode = 1;
        }
        return;
      }
      const attempts = flags.attempts === undefined ? 3 : parseIntFlag(flags.attempts, '--attempts');
      const retryDelayMs = flags.retryDelay === undefined ? 5000 : parseDuration(flags.retryDelay, '--retry-delay');
      const client = await getClient();
      let audit: QuotaAudit | undefined;
      try {
        for (let attempt = 1; attempt <= attempts; attempt++) {
          audit = await auditQuota(client, {
            checkGhosts: flags.ghosts !== false,
            ...(model ? { countingModel: model } : {}),
            ...(concurrency ? { ghostCheckConcurrency: concurrency } : {}),
            ...(timeoutMs !== undefined ? { timeoutMs } : {}),
          });
          if (audit.stable || attempt === attempts) break;
          console.error(`Reported usage changed during attempt ${attempt} of ${attempts}; auditing again in ${formatDuration(retryDelayMs)}.`);
          await sleep(retryDelayMs);
        }
      } catch (e) {
        if (e instanceof ValidationError) throw e;
        console.error(terminalSafe(`nova-guard quota audit: ${(e as Error).name}: ${describeFailure(e)}`, true));
        process.exitCode = 1;
        return;
      }
      const result = audit!;
      console.log(flags.json ? JSON.stringify(result, jsonReplacer, 2) : formatAudit(result));
      process.exitCode = AUDIT_EXIT_CODES[result.verdict];
    });
}
