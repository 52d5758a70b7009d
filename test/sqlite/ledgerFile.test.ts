/**
 * The path of a SQLite ledger, before SQLite opens it: its directory made one level at a time
 * (src/sqlite/directory.ts: Node 20's recursive mkdirSync loops for ever under /proc), and a path that
 * is not a ledger file to be (a device, a directory, a text file) refused, nothing made next to it
 * (src/sqlite/ledgerFile.ts). Real files, real SQLite.
 */
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/index.js';
import { makeDirectory } from '../../src/sqlite/directory.js';
import { checkLedgerFile } from '../../src/sqlite/ledgerFile.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { tempDir } from '../helpers.js';


/** What `fn` throws (fails the test when it throws nothing). */
function thrown(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('nothing thrown');
}

describe('makeDirectory: one level at a time, never recursive', () => {
  it('makes each missing level with mode 0700; an existing directory is left as it is', () => {
    const root = tempDir('nova-guard-ledger-file-');
    const dir = join(root, 'a', 'b', 'c');
    makeDirectory(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
    for (const d of [join(root, 'a'), join(root, 'a', 'b'), dir]) expect(statSync(d).mode & 0o777).toBe(0o700);
    makeDirectory(dir);
    makeDirectory(root);
  });

  it.runIf(existsSync('/proc/self/stat'))('under /proc: ENOENT at once, naming the directory that cannot be made (no loop)', () => {
    const started = Date.now();
    const e = thrown(() => makeDirectory('/proc/nope/deeper'));
    expect(e.code).toBe('ENOENT');
    expect(e.message).toMatch(/cannot make the directory \/proc\/nope in \/proc/);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(existsSync('/proc/nope')).toBe(false);
  });

  it('under a regular file: ENOTDIR naming the file, nothing made', () => {
    const root = tempDir('nova-guard-ledger-file-');
    writeFileSync(join(root, 'file.txt'), 'x');
    const e = thrown(() => makeDirectory(join(root, 'file.txt', 'a', 'b')));
    expect(e.code).toBe('ENOTDIR');
    expect(e.message).toContain(`${join(root, 'file.txt')} is not a directory`);
    expect(readdirSync(root)).toEqual(['file.txt']);
  });
});

describe('checkLedgerFile: a ledger file to be is missing, empty, or starts with the SQLite header', () => {
  it('passes a missing path, an empty file and a SQLite database', () => {
    const root = tempDir('nova-guard-ledger-file-');
    checkLedgerFile(join(root, 'none.sqlite'));
    writeFileSync(join(root, 'empty.sqlite'), '');
    checkLedgerFile(join(root, 'empty.sqlite'));
    writeFileSync(join(root, 'db.sqlite'), Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), Buffer.alloc(100)]));
    checkLedgerFile(join(root, 'db.sqlite'));
  });

  it('refuses a device, a directory, a text file and a file shorter than the header', () => {
    const root = tempDir('nova-guard-ledger-file-');
    expect(() => checkLedgerFile('/dev/null')).toThrow(/the SQLite ledger \/dev\/null is not a regular file \(a character device\)/);
    expect(() => checkLedgerFile(root)).toThrow(/is not a regular file \(a directory\)/);
    writeFileSync(join(root, 'passwd'), 'root:x:0:0:root:/root:/bin/bash\n');
    expect(() => checkLedgerFile(join(root, 'passwd'))).toThrow(ValidationError);
    expect(() => checkLedgerFile(join(root, 'passwd'))).toThrow(/is not a nova-guard ledger file \(not a SQLite database\): name another path/);
    writeFileSync(join(root, 'short'), 'SQLite');
    expect(() => checkLedgerFile(join(root, 'short'))).toThrow(/not a nova-guard ledger file/);
  });
});

describe('SqliteQuotaLedger on a path that is not a ledger file: refused before SQLite opens it', () => {
  const opts = { endpoint: 'http://nova.example:8774/v2.1', projectId: 'p1' };
  it('sqlite:/dev/null: a ValidationError, no /dev/null-journal made', () => {
    const before = existsSync('/dev/null-journal');
    expect(() => new SqliteQuotaLedger({ ...opts, path: '/dev/null' })).toThrow(/not a regular file \(a character device\)/);
    if (!before) expect(existsSync('/dev/null-journal')).toBe(false);
  });

  it('an empty file is made a ledger', async () => {
    const file = join(tempDir('nova-guard-ledger-file-'), 'empty.sqlite');
    writeFileSync(file, '');
    const l = new SqliteQuotaLedger({ ...opts, path: file });
    await l.close();
    expect(statSync(file).size).toBeGreaterThan(0);
  });
});
