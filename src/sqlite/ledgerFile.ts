/**
 * What may be opened as a SQLite ledger file, looked at before SQLite opens it (SQLite would make a
 * `-journal` or `-wal` file next to it): nothing yet (SQLite makes it), an empty regular file (SQLite
 * makes a database of it), or a regular file that starts with SQLite's header. A device
 * (`sqlite:/dev/null`), a directory, a FIFO or a socket, and a regular file of something else
 * (`sqlite:/etc/passwd`) are setup errors, never outages: no wait, no file made next to them.
 *
 * A file with SQLite's header whose pages are damaged (a ledger that was one) is left to SQLite: its
 * `SQLITE_CORRUPT` stays an outage (`SqliteLedgerError`). A ledger whose very header is damaged
 * cannot be told from another file: it is refused as one.
 *
 * @module
 */
import { closeSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { ValidationError } from '../errors/index.js';

/** The first 16 bytes of every SQLite 3 database file. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** What kind of file `st` is, in words. */
function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * Refuse a path that is not a ledger file to be: one that exists and is not a regular file (after
 * symbolic links), or a non-empty regular file that does not start with SQLite's header. A path
 * that does not exist, or that cannot be looked at or read (left to SQLite, which names the cause),
 * passes.
 * @param path - The absolute path of the ledger file.
 * @throws `ValidationError` saying the path is not a regular file, or not a nova-guard ledger file
 * (taken by `openLedger` for a `LedgerConfigError`, `reason: 'unusable-path'`).
 */
export function checkLedgerFile(path: string): void {
  let st: Stats | undefined;
  try {
    st = statSync(path, { throwIfNoEntry: false });
  } catch {
    return;
  }
  if (st === undefined) return;
  if (!st.isFile()) {
    throw new ValidationError(`the SQLite ledger ${path} is not a regular file (${kindOf(st)}): name a file path (sqlite:/abs/dir/ledger.sqlite) or a directory ending in / (sqlite:/abs/dir/)`);
  }
  if (st.size === 0) return;
  const head = Buffer.alloc(SQLITE_HEADER.length);
  let read: number;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return;
  }
  try {
    read = readSync(fd, head, 0, head.length, 0);
  } catch {
    return;
  } finally {
    closeSync(fd);
  }
  if (read < head.length || !head.equals(SQLITE_HEADER)) {
    throw new ValidationError(`the SQLite ledger ${path} is not a nova-guard ledger file (not a SQLite database): name another path`);
  }
}
