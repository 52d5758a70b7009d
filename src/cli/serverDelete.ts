/**
 * `nova-guard server delete <id...> [--wait] [--timeout-ms N] [--interval-ms N] [--force]`: messages
 * and exit codes like `openstack server delete --wait` (python-openstackclient `DeleteServer`): each
 * failure is reported as `Failed to delete server with name or ID '<id>': <error>`, then
 * `N of M servers failed to delete.` and exit code 1; 0 when all succeeded. It takes ids, not names;
 * an id Nova does not know (404 on DELETE) counts as already gone (exit 0), so that a worker that
 * repeats a delete never fails, where `openstack server delete` looks names up first and fails. At most `--concurrency`
 * (default 10) deletions run at once.
 *
 * @module
 */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import pLimit from 'p-limit';
import { ValidationError } from '../errors/index.js';
import type { NovaClient } from '../nova/client.js';
import type { DeleteServerOptions } from '../delete/index.js';
import type { DeleteProgress } from '../delete/index.js';
import { parseMs } from './common.js';
import { terminalSafe } from '../core/table.js';

interface DeleteFlags {
  wait?: boolean;
  timeoutMs?: string;
  intervalMs?: string;
  force?: boolean;
  forceSoftDeleted?: boolean;
  concurrency?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Register `delete` under the `server` command. */
export function registerServerDeleteCommand(server: Command, getClient: () => Promise<NovaClient>): void {
  server
    .command('delete')
    .description('delete servers; with --wait, wait until Nova has really deleted them')
    .argument('<id...>', 'server ids')
    .option('--wait', 'wait until each server is gone (404, DELETED) or SOFT_DELETED')
    .option('--timeout-ms <ms>', 'give up waiting after this many ms (default 300000)')
    .option('--interval-ms <ms>', 'time between polls in ms (default 5000)')
    .option('--force', 'force-delete (forceDelete action) instead of DELETE')
    .option('--force-soft-deleted', 'with --wait: force-delete servers that end SOFT_DELETED')
    .option('--concurrency <n>', 'deletions at once (default 10)')
    .action(async (ids: string[], flags: DeleteFlags) => {
      // Flags first: a bad flag is reported as such, before any connection or cloud lookup.
      const options: DeleteServerOptions = {
        wait: Boolean(flags.wait),
        force: Boolean(flags.force),
        forceSoftDeleted: Boolean(flags.forceSoftDeleted),
      };
      const timeoutMs = parseMs(flags.timeoutMs, '--timeout-ms');
      const intervalMs = parseMs(flags.intervalMs, '--interval-ms');
      if (timeoutMs) options.timeoutMs = timeoutMs;
      if (intervalMs) options.intervalMs = intervalMs;
      const concurrency = flags.concurrency === undefined ? 10 : Number(flags.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1) {
        throw new ValidationError(`--concurrency must be a positive integer, got ${JSON.stringify(flags.concurrency)}`);
      }
      const limit = pLimit(concurrency);
      const client = await getClient();
      const unique = [...new Set(ids)];
      const tty = Boolean(process.stderr.isTTY) && options.wait;
      const bar = tty
        ? new cliProgress.SingleBar(
            { format: 'Deleting {bar} {value}/{total} gone | {detail}', stream: process.stderr, hideCursor: true, clearOnComplete: false },
            cliProgress.Presets.shades_classic,
          )
        : undefined;
      const latest = new Map<string, DeleteProgress>();
      let done = 0;
      const detail = (): string => {
        const counts = new Map<string, number>();
        for (const p of latest.values()) {
          const key = `${p.status ?? '?'}${p.taskState ? `/${p.taskState}` : ''}`;
          counts.set(key, (counts.get(key) ?? 0) + 1);
        }
        return [...counts].map(([k, n]) => `${n} ${k}`).join(', ') || (done >= unique.length ? 'done' : 'starting');
      };
      bar?.start(unique.length, 0, { detail: 'starting' });
      options.onProgress = (p) => {
        latest.set(p.serverId, p);
        bar?.update(done, { detail: detail() });
      };
      const held: string[] = [];
      const deleteOne = async (id: string): Promise<{ id: string; error: Error } | undefined> => {
        try {
          const r = await client.deleteServer(id, options);
          done++;
          latest.delete(id);
          bar?.update(done, { detail: detail() });
          const line = `${id}: ${r.outcome} (${r.polls} polls, ${r.elapsedMs} ms)`;
          if (r.outcome === 'already-gone' && !UUID.test(id)) {
            console.error(terminalSafe(`Warning: '${id}' is not a server id and Nova knows no server by it (nova-guard takes ids, not names)`, true));
          }
          // Under a progress bar the results are printed once it stops, so stdout always has them.
          if (bar) held.push(line);
          else console.log(line);
          for (const w of r.warnings) console.error(terminalSafe(`Warning: ${w}`, true));
          return undefined;
        } catch (e) {
          latest.delete(id);
          return { id, error: e as Error };
        }
      };
      // At most --concurrency deletions at once (each still settles on its own).
      const result = await Promise.all(unique.map((id) => limit(() => deleteOne(id))));
      bar?.stop();
      for (const line of held) console.log(line);
      const failures = result.filter((r): r is { id: string; error: Error } => r !== undefined);
      for (const f of failures) console.error(terminalSafe(`Failed to delete server with name or ID '${f.id}': ${f.error.message}`, true));
      if (failures.length > 0) {
        console.error(`${failures.length} of ${unique.length} servers failed to delete.`);
        process.exitCode = 1;
      }
    });
}
