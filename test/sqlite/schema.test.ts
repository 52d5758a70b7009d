/**
 * The SQLite ledger file's times across a reboot of the host (its monotonic clock restarts) and
 * from a file an older nova-guard wrote (schema 1: wall-clock times): each lease keeps what was
 * left of it. The reboot is staged by writing into the real file what the previous boot left there
 * (its boot id, its highest reading, a lease on its clock).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../src/core/index.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { loadSqlite } from '../../src/sqlite/native.js';
import { bootId, hostMonotonic } from '../../src/sqlite/hostClock.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
const HOUR_MS = 3_600_000;
const need = (cores: number) => ({ cores, ramMiB: 0, instances: 1 });
const room = (cores: number) => ({ cores, ramMiB: undefined, instances: undefined });

function movingClock(): Clock & { advance(ms: number): void } {
  let mono = 0;
  return { ...systemClock, now: () => performance.now() + mono, wallNow: () => Date.now() + mono, advance: (ms: number) => void (mono += ms) };
}

const dirs: string[] = [];
const open: SqliteQuotaLedger[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) await l.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function ledgerOn(file: string, clock: Clock, holder: string): SqliteQuotaLedger {
  const l = new SqliteQuotaLedger({ endpoint: ENDPOINT, projectId: 'p1', path: file, clock, holder });
  open.push(l);
  return l;
}

/** Write into the file what a previous boot (or an older nova-guard) left: `sql` with `params`. */
function tamper(file: string, statements: Array<[string, ...unknown[]]>): void {
  const db = new (loadSqlite())(file);
  try {
    for (const [sql, ...params] of statements) db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
}

/** A file holding one claim of 4 cores (60 s lease), `a`'s, then closed without a goodbye of that claim. */
async function fileWithClaim(clock: Clock): Promise<{ file: string; claimId: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'nova-guard-sqlite-schema-'));
  dirs.push(dir);
  const file = join(dir, 'l.sqlite');
  const a = ledgerOn(file, clock, 'a');
  const r = await a.admit({ place: undefined, needs: need(4), headroom: room(4), stamp: 0, ttlMs: 60_000 });
  if (!r.admitted) throw new Error('not admitted');
  return { file, claimId: r.claim.id };
}

describe('SQLite ledger times across a reboot and from schema 1', () => {
  it('a reading far below the highest the file saw (the monotonic clock restarted): each lease keeps what was left of it', async () => {
    const clock = movingClock();
    const { file, claimId } = await fileWithClaim(clock);
    const before = hostMonotonic(clock)() + 10 * HOUR_MS; // the previous boot had been up 10 h longer
    tamper(file, [
      ["UPDATE meta SET value = '' WHERE key = 'boot'"],
      ["UPDATE meta SET value = ? WHERE key = 'mono_high'", before],
      ['UPDATE claims SET expires_at = ? WHERE id = ?', before + 30_000, claimId],
    ]);
    const b = ledgerOn(file, clock, 'b');
    expect(await b.admit({ place: undefined, needs: need(1), headroom: room(4), stamp: 0, ttlMs: 1000 })).toMatchObject({ admitted: false, inFlight: { cores: 4 } });
    clock.advance(30_001);
    expect(await b.liveClaimIds()).toEqual([]);
    expect((await b.admit({ place: undefined, needs: need(4), headroom: room(4), stamp: 0, ttlMs: 1000 })).admitted).toBe(true);
  });

  it.skipIf(bootId() === '')('another boot id with a clock already past the old highest: leases are moved, not ended', async () => {
    const clock = movingClock();
    const { file, claimId } = await fileWithClaim(clock);
    const before = hostMonotonic(clock)() - HOUR_MS; // the previous boot's highest reading is 1 h below this boot's clock
    tamper(file, [
      ["UPDATE meta SET value = 'another-boot' WHERE key = 'boot'"],
      ["UPDATE meta SET value = ? WHERE key = 'mono_high'", before],
      ['UPDATE claims SET expires_at = ? WHERE id = ?', before + 30_000, claimId],
    ]);
    const b = ledgerOn(file, clock, 'b');
    expect(await b.liveClaimIds()).toEqual([claimId]);
    expect((await b.admit({ place: undefined, needs: need(1), headroom: room(4), stamp: 0, ttlMs: 1000 })).admitted).toBe(false);
    clock.advance(30_001);
    expect((await b.admit({ place: undefined, needs: need(4), headroom: room(4), stamp: 0, ttlMs: 1000 })).admitted).toBe(true);
  });

  it('a schema-1 file (wall-clock leases) is moved to schema 2 once: a claim keeps what was left of its lease', async () => {
    const clock = movingClock();
    const { file, claimId } = await fileWithClaim(clock);
    await open.splice(0)[0]!.close(); // a's claim is dropped by its goodbye: write one back as an old process left it
    tamper(file, [
      ["UPDATE meta SET value = 1 WHERE key = 'schema'"],
      ["DELETE FROM meta WHERE key IN ('boot', 'mono_high')"],
      ["INSERT INTO claims (id, cores, ram, inst, token, holder, server_id, expires_at) VALUES (?, 4, 0, 1, 99, 'old', NULL, ?)", claimId, clock.wallNow() + 30_000],
    ]);
    const b = ledgerOn(file, clock, 'b');
    expect(await b.liveClaimIds()).toEqual([claimId]);
    expect((await b.admit({ place: undefined, needs: need(1), headroom: room(4), stamp: 0, ttlMs: 1000 })).admitted).toBe(false);
    clock.advance(30_001);
    expect((await b.admit({ place: undefined, needs: need(4), headroom: room(4), stamp: 0, ttlMs: 1000 })).admitted).toBe(true);
    const db = new (loadSqlite())(file);
    expect((db.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as { value: unknown }).value).toBe(2);
    db.close();
  });
});
