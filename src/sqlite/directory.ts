/**
 * Creating the directory of a SQLite ledger file without `mkdirSync(dir, { recursive: true })`:
 * under `/proc` (and other pseudo file systems) Node 20's recursive mkdir loops for ever at 100 %
 * CPU, blocking the event loop (`mkdirSync('/proc/nope/x', { recursive: true })` never returns).
 * Here the path is walked up to its first existing ancestor, which must be a directory, and each
 * missing level is made on its own: a level that cannot be made is an error with its code at once.
 *
 * @module
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/** An error of the file system with its code (`ENOENT`, `EACCES`, `EROFS`, `ENOTDIR`, ...), as `fs` throws. */
function fsError(code: string, message: string, cause?: unknown): Error & { code: string } {
  return Object.assign(new Error(`${code}: ${message}`, cause === undefined ? undefined : { cause }), { code });
}

/**
 * Make the directory `dir` (absolute) and its missing parents, each with `mode`, one level at a
 * time (never recursive); nothing is done when it exists.
 * @param dir - An absolute directory path.
 * @param mode - The mode of each directory made. @default 0o700
 * @throws an `Error` with `code` `ENOTDIR` (the first existing ancestor, or `dir`, is not a
 * directory), or the code `mkdirSync`/`statSync` gave (`ENOENT` where nothing can be made, as under
 * `/proc`; `EACCES`, `EPERM`, `EROFS`), its message naming the directory that could not be made.
 */
export function makeDirectory(dir: string, mode = 0o700): void {
  const missing: string[] = [];
  let at = dir;
  for (;;) {
    let isDir: boolean;
    try {
      isDir = statSync(at).isDirectory();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw fsError(typeof code === 'string' ? code : 'EACCES', `cannot look at ${at}`, error);
      const up = dirname(at); // (ENOTDIR: an ancestor is a file, found further up)
      if (up === at) throw fsError('ENOENT', `the root ${at} does not exist`, error);
      missing.push(at);
      at = up;
      continue;
    }
    if (!isDir) throw fsError('ENOTDIR', `${at} is not a directory, so ${dir} cannot be made`);
    break;
  }
  for (const level of missing.reverse()) {
    try {
      mkdirSync(level, { mode });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 'EEXIST' && statSync(level, { throwIfNoEntry: false })?.isDirectory() === true) continue; // made by another process meanwhile
      throw fsError(typeof code === 'string' ? code : 'EACCES', `cannot make the directory ${level} in ${dirname(level)}`, error);
    }
  }
}
