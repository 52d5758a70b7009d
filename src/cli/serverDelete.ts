/**
 * `nova-guard server delete <id...> [--wait] [--timeout-ms N] [--interval-ms N] [--force]`: messages
 * and exit codes like `openstack server delete --wait` (python-openstackclient `DeleteServer`): each
 * failure is reported as `Failed to delete server with name or ID '<id>': <error>`, then
 * `N of M servers failed to delete.` and exit code 1; 0 when all succeeded. It takes ids, not names;
 * an id Nova does not know (404 on DELETE) counts as already gone (exit 0), so that a worker that
 * repeats a delete never fails, where `openstack server delete` looks names up first and fails; but
 * one Nova still lists after that 404 (an orphaned instance mapping: Nova still counts it) is a
 * failure (`OrphanedServerError`, its message says what an operator must do). At most `--concurrency`
 * (default 10) deletions run at once. Every id and flag is checked before any connection: a string
 * that cannot be a server id (a `/`, `?` or `#`, `.` or `..`) or a flag that is not a decimal number
 * (`--interval-ms 0x10`) is bad usage, exit 2, and nothing is deleted.
 *
 * @module
 */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { ValidationError } from '../errors/index.js';
import type { NovaClient } from '../nova/client.js';
import type { DeleteServerOptions } from '../delete/index.js';
import type { DeleteProgress } from '../delete/index.js';
import { parseIntFlag, parseMs } from './common.js';
import { terminalSafe } from '../core/table.js';
import { checkPathId } from '../core/validate.js';

/** True when `id` can be a server id in a URL path (see `checkPathId`). */
function isPathId(id: string): boolean {
  try {
    checkPathId('server id', id);
    return true;
  } catch {
    return false;
  }
}

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
    .description('delete servers; with --wait, wait until Nova has really deleted them. Exit 0 all deleted, 1 a deletion failed, 2 bad usage (a bad flag or id: nothing is deleted)')
    .argument('<id...>', 'server ids')
    .option('--wait', 'wait until Nova has deleted each server (its 404) or it is SOFT_DELETED')
    .option('--timeout-ms <ms>', 'give up waiting after this many ms (default 300000)')
    .option('--interval-ms <ms>', 'time between polls in ms (default 5000)')
    .option('--force', 'force-delete (forceDelete action) instead of DELETE')
    .option('--force-soft-deleted', 'with --wait: force-delete servers that end SOFT_DELETED')
    .option('--concurrency <n>', 'DELETE requests in flight at once (default 10); the waits are shared')
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
      const concurrency = flags.concurrency === undefined ? 10 : parseIntFlag(flags.concurrency, '--concurrency');
      const unique = [...new Set(ids)];
      // Every id before the first DELETE (and before any connection): a bad id is a usage error
      // (exit 2) and nothing is deleted, so a typo in a list never leaves half of it deleted.
      const bad = unique.filter((id) => !isPathId(id));
      if (bad.length > 0) {
        throw new ValidationError(
          `${bad.length === 1 ? 'this is not a server id' : `these ${bad.length} are not server ids`} (an id is a non-empty string without '/', '?' or '#', and not '.' or '..'): ` +
            `${bad.map((id) => terminalSafe(JSON.stringify(id), true)).join(', ')}; nothing was deleted`,
        );
      }
      const client = await getClient();
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
      const failures: Array<{ id: string; error: Error }> = [];
      // All DELETEs first (paced, at most --concurrency in flight), then every wait together.
      await client.deleteServers(unique, {
        ...options,
        concurrency,
        onSettled: (s) => {
          latest.delete(s.serverId);
          if (s.status === 'rejected') {
            failures.push({ id: s.serverId, error: s.reason });
            return;
          }
          const r = s.value;
          done++;
          bar?.update(done, { detail: detail() });
          const line = `${r.serverId}: ${r.outcome} (${r.polls} polls, ${r.elapsedMs} ms)`;
          if (r.outcome === 'already-gone' && !UUID.test(r.serverId)) {
            console.error(terminalSafe(`Warning: '${r.serverId}' is not a server id and Nova knows no server by it (nova-guard takes ids, not names)`, true));
          }
          // Under a progress bar the results are printed once it stops, so stdout always has them.
          if (bar) held.push(line);
          else console.log(line);
          for (const w of r.warnings) console.error(terminalSafe(`Warning: ${w}`, true));
        },
      });
      bar?.stop();
      for (const line of held) console.log(line);
      for (const f of failures) console.error(terminalSafe(`Failed to delete server with name or ID '${f.id}': ${f.error.message}`, true));
      if (failures.length > 0) {
        console.error(`${failures.length} of ${unique.length} servers failed to delete.`);
        process.exitCode = 1;
      }
    });
}
