/**
 * The SQLite fleet store's times across a reboot of the host (its monotonic clock restarts): the
 * fleet's lease, interest and kept proofs move with the ledger's other times, so a lease keeps what
 * was left of it instead of holding for as long as the previous boot's clock was ahead. The reboot is
 * staged as in schema.test.ts: the previous boot's id and highest reading written into the file.
 * (The store's contract on every backend: test/delete/fleetStores.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/index.js';
import { SqliteFleetStore } from '../../src/sqlite/fleetStore.js';
import { LedgerStore } from '../../src/sqlite/store.js';
import { whileBusy } from '../../src/sqlite/busy.js';
import { bootId, hostMonotonic } from '../../src/sqlite/hostClock.js';
import { loadSqlite } from '../../src/sqlite/native.js';

const HOUR_MS = 3_600_000;
const dirs: string[] = [];
const files: LedgerStore[] = [];
afterEach(() => {
  for (const f of files.splice(0)) f.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function storeOn(file: string): SqliteFleetStore {
  const ledgerFile = new LedgerStore(file, 'http://nova.example:8774/v2.1\np', () => 0);
  files.push(ledgerFile);
  const now = hostMonotonic(systemClock);
  return new SqliteFleetStore({ file: ledgerFile, attempts: (fn) => whileBusy(() => fn(now()), 2000, systemClock) });
}

describe.skipIf(bootId() === '')('SQLite fleet store across a reboot', () => {
  it("a lease written on the previous boot's clock (3 h ahead of this one) keeps what was left of it, not 3 hours", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nova-guard-sqlite-fleet-store-'));
    dirs.push(dir);
    const file = join(dir, 'l.sqlite');
    const a = storeOn(file);
    expect((await a.elect('old-watcher', 60_000)).held).toBe(true);
    const [f] = files.splice(0);
    f!.close();
    // What the previous boot left: its boot id, its highest reading 3 h above this boot's clock, and
    // the lease with 300 ms left on that clock.
    const high = hostMonotonic(systemClock)() + 3 * HOUR_MS;
    const db = new (loadSqlite())(file);
    try {
      db.prepare("UPDATE meta SET value = ? WHERE key = 'boot'").run('a-previous-boot');
      db.prepare("UPDATE meta SET value = ? WHERE key = 'mono_high'").run(high);
      db.prepare('UPDATE fleet_lease SET expires_at = ?').run(high + 300);
    } finally {
      db.close();
    }
    const b = storeOn(file);
    // Still the old watcher's for what was left of it...
    expect((await b.elect('new-watcher', 60_000)).held).toBe(false);
    await new Promise((r) => setTimeout(r, 500));
    // ...then free: before the fix it stayed held for 3 hours.
    expect((await b.elect('new-watcher', 60_000)).held).toBe(true);
  });
});
