/**
 * `nova-guard server delete <server...> [--wait] [--timeout D] [--interval D] [--force]
 * [--ignore-missing]`: messages and exit codes like `openstack server delete --wait`
 * (python-openstackclient `DeleteServer`): each failure is reported as `Failed to delete server
 * with name or ID '<server>': <error>`, then `N of M servers failed to delete.` and exit code 1; 0
 * when all succeeded. Each server is found like osc-lib's `find_resource`: by id first (a UUID is
 * deleted as an id; when no server has that id, it is looked up as a name, so a server whose name
 * looks like a UUID is found too), else a listing filtered by name and an exact name match: none is
 * `No server with a name or ID of 'x' exists.`, several `More than one server exists with the name 'x'.` (both failures,
 * exit 1). With `--ignore-missing` a server that does not exist is skipped (exit 0), for workers that
 * repeat a delete. A server Nova answers 404 for but still lists (an orphaned instance
 * mapping: Nova still counts it) is a failure (`OrphanedServerError`, its message says what an
 * operator must do). Durations take a unit: `500ms`, `30s`, `5m`, `2h` (a bare number is refused;
 * `--timeout-ms` and `--interval-ms` are old spellings that warn). At most `--concurrency`
 * (default 10) deletions run at once. Every id and flag is checked before any connection: a string
 * that cannot be a server id (a `/`, `?` or `#`, `.` or `..`) or a flag that is not a decimal number
 * (`--interval 0x10`, `--interval 2`) is bad usage, exit 2, and nothing is deleted.
 *
 * `--ledger URL` (or `NOVA_GUARD_LEDGER`), with `--wait`: each deletion Nova confirms (its 404) is
 * published to that quota ledger as freed quota, through a `QuotaGuard` over the client (the path
 * of a guard whose client confirms a delete), so `server create` processes waiting on the same
 * ledger for headroom wake at once instead of at their next backoff step. A ledger that cannot be
 * opened is a warning: the deletion goes on, and the waiting creates see the freed quota at their
 * next read of `/limits`. Without `--wait` nothing is confirmed, so nothing is published.
 *
 * SIGINT (Ctrl-C), SIGTERM and SIGHUP stop the waits (exit 130, 143, 129; `interrupt.ts`): stderr
 * says at once which servers were asked to delete and are not confirmed gone, which are not known as
 * asked, and the command that waits for them; a second signal says it again and ends the process.
 *
 * @module
 */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { ValidationError } from '../errors/index.js';
import { QuotaGuard } from '../guard/index.js';
import type { QuotaLedger } from '../guard/index.js';
import { openLedger } from '../ledgers/index.js';
import { failureWords } from '../errors/delete.js';
import { isTransient } from '../transport/http.js';
import type { NovaClient } from '../nova/client.js';
import type { DeleteServerOptions, DeleteSettled } from '../delete/index.js';
import type { DeleteProgress } from '../delete/index.js';
import { failureKindWords } from '../delete/failureLog.js';
import { cliMessage } from './ledgerError.js';
import { addDurationOption, type ClientGetter, ledgerFlag, parseIntFlag, REFUSED_FIRST_CONTACT_MS, refusedHint } from './common.js';
import { tokenHint } from './tokenHint.js';
import { RefusedFirstContact } from './refusedFirstContact.js';
import { terminalSafe } from '../core/table.js';
import { isPathId, notFound, resolveByName, resolveServers } from './resolve.js';
import { withSlowNotice } from './waitNotice.js';
import { signalWords, watchStopSignals } from './interrupt.js';

interface DeleteFlags {
  wait?: boolean;
  /** `--timeout` (old spelling `--timeout-ms`), in ms. */
  timeout?: number;
  /** `--interval` (old spelling `--interval-ms`), in ms. */
  interval?: number;
  force?: boolean;
  forceSoftDeleted?: boolean;
  concurrency?: string;
  ignoreMissing?: boolean;
  ledger?: string;
}

/**
 * What `server delete` asks of the client unless the user names one (`--os-compute-api-version`,
 * `OS_COMPUTE_API_VERSION`): 2.1, as `openstack server delete` does. A DELETE and the wait for its 404
 * need nothing newer, and a pinned microversion spares each short-lived CLI process the read of Nova's
 * version document (one request a shell job).
 */
export const DELETE_MICROVERSION = '2.1';

/** Register `delete` under the `server` command. */
export function registerServerDeleteCommand(server: Command, getClient: ClientGetter): void {
  const cmd = server
    .command('delete')
    .description('delete servers; with --wait, wait until Nova has really deleted them. Exit 0 all deleted, 1 a deletion failed, 2 bad usage (a bad flag or id: nothing is deleted)')
    .argument('<server...>', 'servers to delete (name or ID)')
    .option('--wait', 'wait until Nova has deleted each server (its 404) or it is SOFT_DELETED');
  addDurationOption(cmd, { flag: '--timeout', old: ['--timeout-ms'], description: 'with --wait: give up waiting for a server after this long', shownDefault: '5m' });
  addDurationOption(cmd, { flag: '--interval', old: ['--interval-ms'], description: 'with --wait: time between polls', shownDefault: '5s' });
  cmd
    .option('--ignore-missing', 'a server that does not exist is not a failure (exit 0)')
    .option('--force', 'force-delete (forceDelete action) instead of DELETE')
    .option('--force-soft-deleted', 'with --wait: force-delete servers that end SOFT_DELETED')
    .option('--concurrency <n>', 'DELETE requests in flight at once (default 10); the waits are shared')
    .option('--ledger <url>', 'with --wait: tell this quota ledger (sqlite:[PATH], redis://host:port) of each confirmed deletion, so waiting `server create` processes wake at once; env NOVA_GUARD_LEDGER')
    .action(async (ids: string[], flags: DeleteFlags) => {
      // Flags first: a bad flag is reported as such, before any connection or cloud lookup.
      const options: DeleteServerOptions = {
        wait: Boolean(flags.wait),
        force: Boolean(flags.force),
        forceSoftDeleted: Boolean(flags.forceSoftDeleted),
      };
      if (flags.timeout !== undefined) options.timeoutMs = flags.timeout;
      if (flags.interval !== undefined) options.intervalMs = flags.interval;
      const concurrency = flags.concurrency === undefined ? 10 : parseIntFlag(flags.concurrency, '--concurrency');
      // Checked now (bad usage, exit 2, before any connection); opened for the client's endpoint and project below.
      const ledgerSpec = ledgerFlag(flags.ledger);
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
      const client = await getClient({ microversion: DELETE_MICROVERSION });
      const freed = options.wait && ledgerSpec !== undefined ? await publishFreedTo(ledgerSpec, client) : undefined;
      const endpoint = (client.toJSON()['endpoint'] as string | undefined) ?? '(the catalog endpoint)';
      const found = await withSlowNotice(`nova at ${endpoint} (looking up ${unique.length === 1 ? 'the server' : `${unique.length} servers`})`, () =>
        resolveServers(client, unique, { concurrency, ignoreMissing: Boolean(flags.ignoreMissing) }),
      );
      const toDelete = found.ids;
      const name = (id: string): string => found.givenAs.get(id) ?? id;
      let failed = 0;
      const tty = Boolean(process.stderr.isTTY) && options.wait;
      // A MultiBar with one bar: its log() prints a line above the bar, so failures show as they happen.
      const bars = tty
        ? new cliProgress.MultiBar(
            { format: 'Deleting {bar} {value}/{total} gone | {duration_formatted} | {detail}', stream: process.stderr, hideCursor: true, clearOnComplete: false },
            cliProgress.Presets.shades_classic,
          )
        : undefined;
      const report = (line: string): void => {
        const safe = terminalSafe(line, true);
        if (bars) bars.log(`${safe}\n`);
        else console.error(safe);
      };
      const fail = (given: string, error: Error): void => {
        failed++;
        report(`Failed to delete server with name or ID '${given}': ${error.message}${refusedHint(error)}${tokenHint(error, client)}`);
      };
      for (const f of found.failures) fail(f.nameOrId, f.error);
      const latest = new Map<string, DeleteProgress>();
      const accepted = new Set<string>();
      const settled = new Set<string>();
      let done = 0;
      const detail = (): string => {
        const counts = new Map<string, number>();
        for (const p of latest.values()) {
          const key = `${p.status ?? '?'}${p.taskState ? `/${p.taskState}` : ''}`;
          counts.set(key, (counts.get(key) ?? 0) + 1);
        }
        const parts = [...counts].map(([k, n]) => `${n} ${k}`);
        if (failed > 0) parts.push(`${failed} failed`);
        return parts.join(', ') || (done >= toDelete.length ? 'done' : 'starting');
      };
      const bar = bars?.create(toDelete.length, 0, { detail: 'starting' });
      // The first failure of each deletion is said when it happens (a refused connection, a 503), not
      // only at the timeout: the deletion goes on trying until then.
      const troubled = new Set<string>();
      // A Nova that refused every connection since the first: give up in about a second.
      const refused = new RefusedFirstContact(client, REFUSED_FIRST_CONTACT_MS);
      const refusals = new Map<string, Error>();
      options.onFailure = (f) => {
        refused.failed(f.error);
        // Its first refused request (the DELETE), for the line said if the command gives up.
        if (!refusals.has(f.serverId)) refusals.set(f.serverId, f.error);
        // A final failure (409, 403, 401) is the deletion's result, said when it settles; refusals
        // from a Nova that never answered are said once given up on (in about a second).
        if (troubled.has(f.serverId) || !isTransient(f.error) || refused.pending) return;
        troubled.add(f.serverId);
        report(`Warning: ${name(f.serverId)}: ${failureKindWords(f.kind)} failed (${failureWords(f.error)}); still trying${options.wait ? ' until the timeout' : ''}`);
      };
      options.onProgress = (p) => {
        // An observation follows an accepted DELETE.
        refused.answered();
        accepted.add(p.serverId);
        latest.set(p.serverId, p);
        bar?.update(done, { detail: detail() });
      };
      // SIGINT, SIGTERM, SIGHUP: stop waiting, then say which servers were asked to delete and are
      // not confirmed gone (their deletion goes on in Nova); a second signal says it and exits at once.
      const gone = new Set<string>();
      let said: string | undefined;
      const interrupt = watchStopSignals({
        first: (signal) => {
          // Said at once (a runner may follow SIGTERM with SIGKILL), again at the end if it changed.
          said = interruptedLines(toDelete, accepted, gone);
          const text = terminalSafe(`Interrupted by ${signalWords(signal)}. ${said}`);
          if (bars) bars.log(`${text}\n`);
          else console.error(text);
        },
        again: (signal) => {
          bars?.stop();
          console.error(terminalSafe(`Stopped by ${signalWords(signal)}. ${interruptedLines(toDelete, accepted, gone)}`));
        },
      });
      const held: string[] = [];
      // UUIDs no server has as its id: looked up as names afterwards (openstack's find_resource).
      const byName: string[] = [];
      const onSettled = (s: DeleteSettled): void => {
        latest.delete(s.serverId);
        settled.add(s.serverId);
        if (s.status === 'rejected') {
          if (refused.signal.aborted && !interrupt.signal.aborted) {
            // Its own refused request, or (its DELETE not sent yet) the refusal given up on.
            const own = refusals.get(s.serverId);
            fail(name(s.serverId), own ?? new Error(`no DELETE sent: ${refused.refusal!.message}`, { cause: refused.refusal }));
          }
          else if (!interrupt.signal.aborted) fail(name(s.serverId), s.reason);
          bar?.update(done, { detail: detail() });
          return;
        }
        const r = s.value;
        refused.answered();
        accepted.add(r.serverId);
        // A UUID no server has as its id (Nova's 404 on the DELETE, and no listing shows it; an
        // orphan would have been OrphanedServerError): it may still be a server's name.
        if (r.outcome === 'already-gone' && found.unverified.has(r.serverId)) {
          byName.push(r.serverId);
          return;
        }
        if (r.outcome === 'deleted' || r.outcome === 'already-gone') gone.add(r.serverId);
        done++;
        bar?.update(done, { detail: detail() });
        const line = `${r.serverId}: ${r.outcome} (${r.polls} polls, ${r.elapsedMs} ms)`;
        // Under a progress bar the results are printed once it stops, so stdout always has them.
        if (bars) held.push(line);
        else console.log(line);
        for (const w of r.warnings) report(`Warning: ${w}`);
      };
      const signal = AbortSignal.any([interrupt.signal, refused.signal]);
      try {
        // All DELETEs first (paced, at most --concurrency in flight), then every wait together.
        await client.deleteServers(toDelete, { ...options, signal, concurrency, onSettled });
        // Then the UUIDs no server had as its id, as names: found ones are deleted like the others.
        const named: string[] = [];
        for (const given of signal.aborted ? [] : byName) {
          let id: string | undefined;
          try {
            id = await resolveByName(client, given);
          } catch (e) {
            fail(name(given), e as Error);
            continue;
          }
          if (id === undefined || settled.has(id) || named.includes(id)) {
            if (id === undefined && !flags.ignoreMissing) fail(name(given), notFound(name(given)));
            done++;
            bar?.update(done, { detail: detail() });
            continue;
          }
          found.givenAs.set(id, name(given));
          named.push(id);
        }
        if (named.length > 0) await client.deleteServers(named, { ...options, signal, concurrency, onSettled });
      } finally {
        refused.dispose();
        interrupt.dispose();
        bars?.stop();
        await freed?.close();
      }
      for (const line of held) console.log(line);
      if (interrupt.signal.aborted) {
        const now = interruptedLines(toDelete, accepted, gone);
        if (now !== said) console.error(terminalSafe(`Interrupted. ${now}`));
        process.exitCode = interrupt.exitCode;
        return;
      }
      if (failed > 0) {
        console.error(`${failed} of ${unique.length} servers failed to delete.`);
        process.exitCode = 1;
      }
    });
}

/**
 * What an interrupted `server delete` says of its servers: those asked to delete (Nova accepted the
 * DELETE) and not confirmed gone, whose deletion goes on in Nova, with the command that waits for
 * them; those whose DELETE is not known to have been accepted; those confirmed gone are left out
 * (their lines are on stdout).
 */
export function interruptedLines(toDelete: readonly string[], accepted: ReadonlySet<string>, gone: ReadonlySet<string>): string {
  const pending = toDelete.filter((id) => accepted.has(id) && !gone.has(id));
  const unknown = toDelete.filter((id) => !accepted.has(id) && !gone.has(id));
  const confirmed = toDelete.length - pending.length - unknown.length;
  const parts: string[] = [];
  parts.push(
    pending.length > 0
      ? `Asked to delete and NOT confirmed gone (${pending.length} of ${toDelete.length}; Nova goes on deleting them): ${pending.join(', ')}.`
      : 'No server was left asked to delete and not confirmed gone.',
  );
  if (unknown.length > 0) parts.push(`Not confirmed as asked (a DELETE may or may not have been sent): ${unknown.join(', ')}.`);
  if (confirmed > 0) parts.push(`Confirmed gone: ${confirmed}.`);
  const open = [...pending, ...unknown];
  if (open.length > 0) parts.push(`Wait for them with\n  nova-guard server delete --wait ${open.join(' ')}`);
  return parts.join(' ');
}

/**
 * Publish every deletion `client` confirms to the ledger `spec` names, the way a `QuotaGuard` does
 * for its client's deletes (its `onDeleteConfirmed` listener): a guard over the client with that
 * ledger, and nothing else of it used. `close()` waits for the publications in flight (each bounded
 * by the guard's `ledgerTimeoutMs`), then closes the ledger. A ledger that cannot be opened is one
 * warning on stderr, and `undefined`: the deletion goes on without it.
 */
async function publishFreedTo(spec: string, client: NovaClient): Promise<{ close(): Promise<void> } | undefined> {
  let ledger: QuotaLedger | undefined;
  try {
    ledger = await openLedger(spec, { client });
  } catch (e) {
    console.error(terminalSafe(`Warning: the quota ledger could not be opened (${cliMessage(e as Error)}): waiting creates see the freed quota at their next read of the limits`, true));
    return undefined;
  }
  if (ledger === undefined) return undefined; // 'in-process': nobody else to tell
  const opened = ledger;
  const guard = new QuotaGuard(client, { ledger: opened });
  return {
    async close(): Promise<void> {
      await guard.close();
      await opened.close();
    },
  };
}
