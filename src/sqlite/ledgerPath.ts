/**
 * What a SQLite ledger path may be. The file is what the processes of a host share, so every
 * process must name the same file whatever its working directory:
 * - an absolute path: taken as it is;
 * - `~` or `~/…`: expanded to this user's home directory (`os.homedir()`, as a shell does), the same
 *   for every process of the user whatever its working directory;
 * - a relative path (`rel/`, `./x.sqlite`, `x`): refused (it would resolve against each process's
 *   working directory, so workers started in different directories would use different files and
 *   share nothing), with the absolute path it stands for in this process as the fix;
 * - `~user/…`: refused (only the current user's `~` is expanded);
 * - `:memory:` (and SQLite's `file:` URIs): refused, an in-memory database is private to one
 *   connection: nothing would be shared.
 *
 * Used by `SqliteQuotaLedger`'s `path` option and by the ledger string `sqlite:PATH` (QuotaGuard's
 * `ledger`, `NOVA_GUARD_LEDGER`, the CLI's `--ledger`). No native module is loaded here.
 *
 * @module
 */
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { ValidationError } from '../errors/index.js';

/**
 * `path` as the absolute path of the ledger file or directory (a trailing `/` is kept: it says
 * "a directory").
 * @param where - Who asks, for the message (`SqliteQuotaLedger path`, `the ledger sqlite:PATH`).
 * @param path - The path as given.
 * @param show - How a path is written back in the message (`sqlite:${p}` for a ledger string).
 * @throws `ValidationError` for a relative path, `~user`, `:memory:` or a `file:` URI, saying what to write instead.
 */
export function absoluteLedgerPath(where: string, path: string, show: (p: string) => string = (p) => p): string {
  const trailing = /[/\\]$/.test(path) ? '/' : '';
  if (path === ':memory:' || /^file:/i.test(path)) {
    throw new ValidationError(`${where} ${JSON.stringify(show(path))} is not a file other processes can open (an in-memory database or a SQLite URI is private to one connection, so nothing would be shared): give an absolute path, e.g. ${show('/var/lib/ci/nova-guard/')}`);
  }
  if (path === '~' || path.startsWith('~/')) return join(homedir(), path.slice(1)); // join keeps a trailing '/'
  if (path.startsWith('~')) {
    throw new ValidationError(`${where} ${JSON.stringify(show(path))}: only ~ and ~/ (this user's home directory) are expanded, not ~user: write the absolute path`);
  }
  if (!isAbsolute(path)) {
    throw new ValidationError(
      `${where} ${JSON.stringify(show(path))} is relative: it would resolve against each process's working directory, so processes started in different directories would use different files and share nothing. ` +
        `Give an absolute path (here: ${show(resolve(path) + trailing)})`,
    );
  }
  return path;
}
