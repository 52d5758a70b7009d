/**
 * SqliteQuotaLedger on a real SQLite file in a temporary directory (never a mock): several ledger
 * objects on one file stand for several processes of one host (the file is all they share; the
 * separate-process proofs are in processes.test.ts). A test clock drives the leases: its monotonic
 * `now()` (the host's monotonic clock the file's times are in) moves forward on demand, and its
 * `wallNow()` steps either way without touching them.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteLedgerError, SqliteQuotaLedger, defaultLedgerDir } from '../../src/sqlite/index.js';
import type { SqliteQuotaLedgerOptions } from '../../src/sqlite/index.js';
import { mountOf, refuseNetworkFileSystem } from '../../src/sqlite/fileSystem.js';
import { loadSqlite } from '../../src/sqlite/native.js';
import { ValidationError } from '../../src/errors/index.js';
import { systemClock, type Clock } from '../../src/core/index.js';
import type { LimitsReading } from '../../src/guard/index.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
const need = (cores: number, ramMiB = 0, instances = 1) => ({ cores, ramMiB, instances });
const room = (cores: number) => ({ cores, ramMiB: undefined, instances: undefined });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const HOUR_MS = 3_600_000;

/**
 * The real timers, with a monotonic clock the test moves forward (`advance`: time passes, both
 * clocks move) and a wall clock it steps alone (`stepWall`: NTP, `date -s`, a resumed VM).
 */
function testClock(start = Date.UTC(2026, 0, 1)): Clock & { advance(ms: number): void; stepWall(ms: number): void } {
  let mono = 0;
  let wall = start;
  return {
    ...systemClock,
    now: () => performance.now() + mono,
    wallNow: () => wall,
    advance: (ms: number) => {
      mono += ms;
      wall += ms;
    },
    stepWall: (ms: number) => void (wall += ms),
  };
}

const dirs: string[] = [];
const open: SqliteQuotaLedger[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) await l.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'nova-guard-sqlite-'));
  dirs.push(d);
  return d;
}

function ledger(path: string, extra: Partial<SqliteQuotaLedgerOptions> = {}): SqliteQuotaLedger {
  const l = new SqliteQuotaLedger({ endpoint: ENDPOINT, projectId: 'p1', path, holder: `h${open.length}`, ...extra });
  open.push(l);
  return l;
}

describe('SqliteQuotaLedger semantics on one file shared by several ledgers', () => {
  it('admission is atomic across ledgers of one file: the second is short by the first claim', async () => {
    const dir = tempDir();
    const [a, b] = [ledger(dir), ledger(dir)];
    expect(a.path).toBe(b.path);
    const first = await a.admit({ place: undefined, needs: need(6), headroom: room(10), stamp: 0, ttlMs: 60_000 });
    expect(first.admitted).toBe(true);
    const second = await b.admit({ place: undefined, needs: need(6), headroom: room(10), stamp: 0, ttlMs: 60_000 });
    expect(second).toMatchObject({ admitted: false, inFlight: { cores: 6 } });
    const third = await b.admit({ place: undefined, needs: need(4), headroom: room(10), stamp: 0, ttlMs: 60_000 });
    expect(third.admitted).toBe(true);
    expect(first.holders).toBeGreaterThanOrEqual(1);
    expect((await b.admit({ place: undefined, needs: need(1), headroom: room(10), stamp: 0, ttlMs: 60_000 })).holders).toBe(2);
    // who they are, as b last saw them (QuotaLedger.members: hosts are counted from these names)
    expect([...b.members()].sort()).toEqual([a.holder, b.holder].sort());
  });

  it('the queue is FIFO across ledgers: a place ahead holds its needs back from a later one', async () => {
    const dir = tempDir();
    const [a, b] = [ledger(dir), ledger(dir)];
    const pa = await a.join(need(8));
    const pb = await b.join(need(2));
    const late = await b.admit({ place: pb, needs: need(2), headroom: room(8), stamp: 0, ttlMs: 60_000 });
    expect(late).toMatchObject({ admitted: false, ahead: { cores: 8 } });
    const head = await a.admit({ place: pa, needs: need(8), headroom: room(8), stamp: 0, ttlMs: 60_000 });
    expect(head).toMatchObject({ admitted: true, ahead: { cores: 0 } });
    await a.leave(pa);
    const next = await b.admit({ place: pb, needs: need(2), headroom: room(10), stamp: 0, ttlMs: 60_000 });
    expect(next).toMatchObject({ admitted: true, ahead: { cores: 0 }, inFlight: { cores: 8 } });
  });

  it('fencing tokens strictly increase across ledgers; a lease not renewed expires (on the monotonic clock) and renew says lost', async () => {
    const dir = tempDir();
    const clock = testClock();
    const [a, b] = [ledger(dir, { clock }), ledger(dir, { clock })];
    const tokens: number[] = [];
    for (const l of [a, b, a, b]) {
      const r = await l.admit({ place: undefined, needs: need(1), headroom: room(100), stamp: 0, ttlMs: 5000 });
      if (!r.admitted) throw new Error('not admitted');
      tokens.push(r.claim.token);
    }
    expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
    expect(new Set(tokens).size).toBe(4);
    const c = await a.claimAnyway(need(1), 5000);
    expect(c.token).toBeGreaterThan(tokens[3]!);
    expect(await a.renew(c, 5000)).toBe(true);
    expect(await b.liveClaimIds()).toHaveLength(5);
    clock.advance(5001);
    expect(await a.renew(c, 5000)).toBe(false);
    expect(await b.liveClaimIds()).toEqual([]);
    expect(await b.inFlight(0)).toEqual({ cores: 0, ramMiB: 0, instances: 0 });
  });

  it('a place not renewed (its holder gone) expires after placeTtlMs and no longer holds the queue back', async () => {
    const dir = tempDir();
    const clock = testClock();
    const [a, b] = [ledger(dir, { clock, placeTtlMs: 3000 }), ledger(dir, { clock, placeTtlMs: 3000 })];
    await a.join(need(8));
    const pb = await b.join(need(2));
    expect((await b.admit({ place: pb, needs: need(2), headroom: room(8), stamp: 0, ttlMs: 60_000 })).admitted).toBe(false);
    clock.advance(3001);
    expect((await b.admit({ place: pb, needs: need(2), headroom: room(8), stamp: 0, ttlMs: 60_000 })).admitted).toBe(true);
  });

  it('a wall-clock step forward by hours ends no lease: a claim (its server still scheduling) is still subtracted, renew says live', async () => {
    const dir = tempDir();
    const clock = testClock();
    const [a, b] = [ledger(dir, { clock }), ledger(dir, { clock })];
    const first = await a.admit({ place: undefined, needs: need(4), headroom: room(4), stamp: 0, ttlMs: 60_000 });
    if (!first.admitted) throw new Error('not admitted');
    await a.bind(first.claim, 'srv-scheduling');
    const place = await a.join(need(1));
    clock.stepWall(6 * HOUR_MS);
    const second = await b.admit({ place: undefined, needs: need(4), headroom: room(4), stamp: 0, ttlMs: 60_000 });
    expect(second).toMatchObject({ admitted: false, inFlight: { cores: 4 }, ahead: { cores: 1 } });
    expect(await b.liveClaimIds()).toEqual([first.claim.id]);
    expect(await a.renew(first.claim, 60_000)).toBe(true);
    await a.leave(place);
    clock.stepWall(-12 * HOUR_MS); // and back past where it started
    expect((await b.admit({ place: undefined, needs: need(1), headroom: room(4), stamp: 0, ttlMs: 60_000 })).admitted).toBe(false);
    expect(await a.renew(first.claim, 60_000)).toBe(true);
  });

  it("a wall-clock step back by hours lengthens no lease: a dead holder's claim and place expire after their lease all the same", async () => {
    const dir = tempDir();
    const clock = testClock();
    // placeTtlMs 60 s: no heartbeat of `a` (every 20 s) renews its place during the test
    const [a, b] = [ledger(dir, { clock, placeTtlMs: 60_000 }), ledger(dir, { clock, placeTtlMs: 60_000 })];
    const dead = await a.admit({ place: undefined, needs: need(4), headroom: room(4), stamp: 0, ttlMs: 5000 });
    expect(dead.admitted).toBe(true);
    await a.join(need(4));
    clock.stepWall(-6 * HOUR_MS);
    expect((await b.admit({ place: undefined, needs: need(4), headroom: room(4), stamp: 0, ttlMs: 5000 })).admitted).toBe(false);
    clock.advance(60_001); // a stops renewing (its process is gone); a minute passes
    expect(await b.liveClaimIds()).toEqual([]);
    expect(await b.admit({ place: undefined, needs: need(4), headroom: room(4), stamp: 0, ttlMs: 5000 })).toMatchObject({ admitted: true, inFlight: { cores: 0 }, ahead: { cores: 0 } });
  });

  it("a claim released as 'counted' is still subtracted from a reading sent before the release, not from a later one", async () => {
    const dir = tempDir();
    const [a, b] = [ledger(dir), ledger(dir)];
    const read = async (): Promise<LimitsReading> => ({ absolute: { maxTotalCores: 10, totalCoresUsed: 0 }, requestId: 'req-1' });
    const r = await a.admit({ place: undefined, needs: need(4), headroom: room(10), stamp: 0, ttlMs: 60_000 });
    if (!r.admitted) throw new Error('not admitted');
    const before = await b.limits(read, undefined);
    await a.release(r.claim, 'counted');
    expect((await b.inFlight(before.stamp)).cores).toBe(4);
    await a.publishFreed('srv'); // a later reading is not the kept one
    const after = await b.limits(read, undefined);
    expect(after.stamp).toBeGreaterThan(before.stamp);
    expect((await b.inFlight(after.stamp)).cores).toBe(0);
    const notCreated = await a.admit({ place: undefined, needs: need(3), headroom: room(10), stamp: after.stamp, ttlMs: 60_000 });
    if (!notCreated.admitted) throw new Error('not admitted');
    await a.release(notCreated.claim, 'not-created');
    expect((await b.inFlight(before.stamp)).cores).toBe(4);
  });

  it('a /limits reading made by one ledger is handed out to another while fresh (one read for both), and not after a confirmed deletion', async () => {
    const dir = tempDir();
    const [a, b] = [ledger(dir, { limitsMaxAgeMs: 60_000 }), ledger(dir, { limitsMaxAgeMs: 60_000 })];
    let reads = 0;
    const read = async (): Promise<LimitsReading> => ({ absolute: { maxTotalCores: 10, totalCoresUsed: ++reads, maxTotalInstances: Infinity }, requestId: `req-${reads}` });
    const first = await a.limits(read, undefined);
    expect(first).toMatchObject({ shared: false, ageMs: 0, requestId: 'req-1' });
    const second = await b.limits(read, undefined);
    expect(second).toMatchObject({ shared: true, requestId: 'req-1', stamp: first.stamp });
    expect(second.absolute.maxTotalInstances).toBe(Infinity);
    expect(reads).toBe(1);
    await a.publishFreed('srv');
    const third = await b.limits(read, undefined);
    expect(third).toMatchObject({ shared: false, requestId: 'req-2' });
  });

  it('while one ledger refreshes the reading, another waits for it instead of reading Nova too; a failed read gives the lock back', async () => {
    const dir = tempDir();
    const [a, b] = [ledger(dir, { limitsMaxAgeMs: 60_000, pollIntervalMs: 20 }), ledger(dir, { limitsMaxAgeMs: 60_000, pollIntervalMs: 20 })];
    let reads = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = async (): Promise<LimitsReading> => {
      reads++;
      await gate;
      return { absolute: { maxTotalCores: 10, totalCoresUsed: 0 }, requestId: 'slow' };
    };
    const pa = a.limits(slow, undefined);
    await sleep(10);
    const pb = b.limits(slow, undefined);
    await sleep(100);
    release();
    expect((await pa).shared).toBe(false);
    expect(await pb).toMatchObject({ shared: true, requestId: 'slow' });
    expect(reads).toBe(1);
    await a.publishFreed('x');
    await expect(a.limits(async () => Promise.reject(new Error('nova down')), undefined)).rejects.toThrow('nova down');
    expect(await b.limits(async () => ({ absolute: {}, requestId: 'after' }), undefined)).toMatchObject({ shared: false, requestId: 'after' });
  });

  it("a deletion confirmed through one ledger wakes another ledger's onFreed listener (by polling the file), and not its own twice", async () => {
    const dir = tempDir();
    const [a, b] = [ledger(dir, { pollIntervalMs: 20 }), ledger(dir, { pollIntervalMs: 20 })];
    let woke = 0;
    let own = 0;
    b.onFreed(() => woke++);
    a.onFreed(() => own++);
    await a.publishFreed('srv-1');
    const t0 = Date.now();
    while (woke === 0 && Date.now() - t0 < 5000) await sleep(10);
    expect(woke).toBe(1);
    await sleep(100);
    expect(own).toBe(1);
  });

  it("onWake: a deletion confirmed through another ledger wakes this ledger's oldest place only; that place leaving wakes the next", async () => {
    const dir = tempDir();
    const [a, b] = [ledger(dir, { pollIntervalMs: 20 }), ledger(dir, { pollIntervalMs: 20 })];
    const [p1, p2] = [await b.join(need(2)), await b.join(need(2))];
    const heard: string[] = [];
    b.onWake(p1, () => heard.push('p1'));
    const off2 = b.onWake(p2, () => heard.push('p2'));
    await a.publishFreed('srv-1');
    const t0 = Date.now();
    while (heard.length === 0 && Date.now() - t0 < 5000) await sleep(10);
    await sleep(100);
    expect(heard).toEqual(['p1']);
    await b.leave(p1);
    expect(heard).toEqual(['p1', 'p2']);
    // its own deletion wakes its oldest place at once, once
    await b.publishFreed('srv-2');
    await sleep(100);
    expect(heard).toEqual(['p1', 'p2', 'p2']);
    off2();
    await b.publishFreed('srv-3');
    await sleep(100);
    expect(heard).toEqual(['p1', 'p2', 'p2']);
  });

  it('close() drops its places, claims and holder entry: the others see the quota free at once', async () => {
    const dir = tempDir();
    const [a, b] = [ledger(dir), ledger(dir)];
    await a.admit({ place: undefined, needs: need(6), headroom: room(10), stamp: 0, ttlMs: 600_000 });
    await a.join(need(4));
    expect((await b.admit({ place: undefined, needs: need(4), headroom: room(10), stamp: 0, ttlMs: 60_000 })).admitted).toBe(false);
    await a.close();
    const r = await b.admit({ place: undefined, needs: need(4), headroom: room(10), stamp: 0, ttlMs: 60_000 });
    expect(r).toMatchObject({ admitted: true, holders: 1 });
    await expect(a.leave({ id: 'x', needs: need(1) })).resolves.toBeUndefined();
    await expect(a.admit({ place: undefined, needs: need(1), headroom: room(10), stamp: 0, ttlMs: 1000 })).rejects.toThrow(/closed/);
  });
});

describe('SqliteQuotaLedger files', () => {
  it('two projects in one directory get separate files and do not see each other', async () => {
    const dir = tempDir();
    const a = ledger(dir, { projectId: 'alpha' });
    const b = ledger(dir, { projectId: 'beta' });
    expect(a.path).not.toBe(b.path);
    expect(readdirSync(dir).filter((f) => f.endsWith('.sqlite')).sort()).toHaveLength(2);
    await a.admit({ place: undefined, needs: need(10), headroom: room(10), stamp: 0, ttlMs: 60_000 });
    expect((await b.admit({ place: undefined, needs: need(10), headroom: room(10), stamp: 0, ttlMs: 60_000 })).admitted).toBe(true);
  });

  it("a file that holds another project's ledger is refused with a ValidationError naming both", () => {
    const file = join(tempDir(), 'one.sqlite');
    ledger(file, { projectId: 'alpha' });
    expect(() => ledger(file, { projectId: 'beta' })).toThrow(ValidationError);
    expect(() => ledger(file, { projectId: 'beta' })).toThrow(/belongs to .*alpha.*not .*beta/);
  });

  it('a guard of another endpoint or project is refused by bindScope', () => {
    const l = ledger(tempDir());
    expect(() => l.bindScope({ endpoint: 'http://other.example/v2.1', projectId: 'p1' })).toThrow(ValidationError);
    expect(() => l.bindScope({ endpoint: 'HTTP://nova.example:8774/v2.1/', projectId: 'p1' })).not.toThrow();
  });

  it('a file that is not a SQLite database (no SQLite header) is refused with a ValidationError naming it: not a ledger file, name another path; nothing made next to it', () => {
    const dir = tempDir();
    const file = join(dir, 'junk.sqlite');
    writeFileSync(file, 'this is not a database, just some text that is long enough '.repeat(200));
    expect(() => ledger(file)).toThrow(ValidationError);
    expect(() => ledger(file)).toThrow(`the SQLite ledger ${file} is not a nova-guard ledger file (not a SQLite database): name another path`);
    expect(readdirSync(dir)).toEqual(['junk.sqlite']);
  });

  it('a ledger file damaged after its SQLite header (one that was a database) stays a SqliteLedgerError that says what to do', () => {
    const file = join(tempDir(), 'damaged.sqlite');
    writeFileSync(file, Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), Buffer.alloc(4096, 0x5a)]));
    let error: unknown;
    try {
      ledger(file).close();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SqliteLedgerError);
    expect(error).toMatchObject({ ledgerDown: true, path: file });
    expect((error as Error).message).toMatch(/not a SQLite database or is corrupt.*delete it/);
  });

  it('a file locked by another process for longer than busyTimeoutMs: the call rejects with SqliteLedgerError (SQLITE_BUSY) within about that time', async () => {
    const file = join(tempDir(), 'locked.sqlite');
    const l = ledger(file, { busyTimeoutMs: 200 });
    const other = new (loadSqlite())(file);
    other.exec('BEGIN EXCLUSIVE');
    try {
      const t0 = Date.now();
      const error = await l.admit({ place: undefined, needs: need(1), headroom: room(10), stamp: 0, ttlMs: 1000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SqliteLedgerError);
      expect(error).toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/), ledgerDown: false });
      expect((error as Error).message).toMatch(/locked for longer than busyTimeoutMs/);
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect((await l.admit({ place: undefined, needs: need(1), headroom: room(10), stamp: 0, ttlMs: 1000 })).admitted).toBe(true);
  });

  it('a lock held by another connection costs the call, not the event loop: timers run while it waits, and it goes through once the lock is given back', async () => {
    const file = join(tempDir(), 'held.sqlite');
    const l = ledger(file); // busyTimeoutMs 2000
    const other = new (loadSqlite())(file);
    other.exec('BEGIN IMMEDIATE');
    let ticks = 0;
    let maxGap = 0;
    let last = performance.now();
    const tick = setInterval(() => {
      const t = performance.now();
      maxGap = Math.max(maxGap, t - last);
      last = t;
      ticks++;
    }, 10);
    try {
      const t0 = performance.now();
      setTimeout(() => other.exec('ROLLBACK'), 300);
      const r = await l.admit({ place: undefined, needs: need(1), headroom: room(10), stamp: 0, ttlMs: 1000 });
      expect(r.admitted).toBe(true);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(250);
      expect(performance.now() - t0).toBeLessThan(1500);
      expect(ticks).toBeGreaterThan(5);
      expect(maxGap).toBeLessThan(200); // the old code blocked here for busyTimeoutMs and never saw the lock given back
    } finally {
      clearInterval(tick);
      other.close();
    }
  });

  it('busyTimeoutMs is bounded: 1e9 and 60001 are refused with what it means, 60000 is taken', () => {
    const dir = tempDir();
    expect(() => ledger(dir, { busyTimeoutMs: 1e9 })).toThrow(ValidationError);
    expect(() => ledger(dir, { busyTimeoutMs: 1e9 })).toThrow(/busyTimeoutMs must be at most 60000 ms .*keeps trying a locked file.*got 1000000000/);
    expect(() => ledger(dir, { busyTimeoutMs: 60_001 })).toThrow(/at most 60000/);
    expect(() => ledger(dir, { busyTimeoutMs: 0 })).toThrow(ValidationError);
    expect(ledger(dir, { busyTimeoutMs: 60_000 }).path).toContain(dir);
  });

  it('a directory on a network file system is refused before the file is opened (from /proc/mounts)', () => {
    const mounts = ['/dev/sda1 / ext4 rw 0 0', 'server:/export /mnt/share nfs4 rw 0 0', 'me@host:/x /mnt/my\\040ssh fuse.sshfs rw 0 0', 'tmpfs /mnt/share/local tmpfs rw 0 0'].join('\n');
    expect(mountOf('/mnt/share/ci', mounts)).toEqual({ point: '/mnt/share', type: 'nfs4' });
    expect(mountOf('/mnt/shared', mounts)).toEqual({ point: '/', type: 'ext4' });
    expect(() => refuseNetworkFileSystem('/mnt/share/ci', mounts)).toThrow(/network file system \(nfs4, mounted at \/mnt\/share\)/);
    expect(() => refuseNetworkFileSystem('/mnt/my ssh/dir', mounts)).toThrow(/fuse\.sshfs/);
    expect(() => refuseNetworkFileSystem('/mnt/share/local/x', mounts)).not.toThrow();
    expect(() => refuseNetworkFileSystem('/home/ci', mounts)).not.toThrow();
  });

  it('the default directory is $XDG_STATE_HOME/nova-guard, else $XDG_RUNTIME_DIR/nova-guard, else ~/.local/state/nova-guard', () => {
    expect(defaultLedgerDir({ XDG_STATE_HOME: '/s', XDG_RUNTIME_DIR: '/run/user/1' })).toBe('/s/nova-guard');
    expect(defaultLedgerDir({ XDG_RUNTIME_DIR: '/run/user/1' })).toBe('/run/user/1/nova-guard');
    expect(defaultLedgerDir({ XDG_STATE_HOME: 'relative' })).toMatch(/\.local\/state\/nova-guard$/);
  });

  it('bad options are refused before the file is touched: an unknown name (naming the closest), a bad endpoint, a short placeTtlMs', () => {
    const dir = tempDir();
    expect(() => new SqliteQuotaLedger({ endpoint: ENDPOINT, projectId: 'p', path: dir, pollIntervalMS: 5 } as never)).toThrow(/pollIntervalMS.*pollIntervalMs/);
    expect(() => new SqliteQuotaLedger({ endpoint: 'nova.example', projectId: 'p', path: dir })).toThrow(ValidationError);
    expect(() => new SqliteQuotaLedger({ endpoint: ENDPOINT, projectId: 'p', path: dir, placeTtlMs: 10 })).toThrow(/placeTtlMs/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('inspect and JSON show kind, holder and path', () => {
    const l = ledger(tempDir());
    expect(inspect(l)).toContain('SqliteQuotaLedger');
    expect(JSON.parse(JSON.stringify(l))).toMatchObject({ kind: 'sqlite', path: l.path });
  });
});
