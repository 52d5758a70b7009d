/**
 * The three `QuotaLedger` backends as the conformance suite and the differential test use them:
 * one store per test (a fresh in-process ledger, a fresh SQLite file, a fresh Redis scope on a real
 * redis-server this file starts), several ledger objects ("holders") on it, and a way to let time
 * pass on the store's clock.
 *
 * Clocks: the in-process and SQLite ledgers take an injectable clock; here a manual one that moves
 * only when told ({@link ManualClock}: 1 ms before every step, so every event has its own instant,
 * and as much as a test asks). Its timers never fire (the SQLite heartbeat and file poll stay idle:
 * places live for `placeTtlMs`, far longer than a test). Redis keeps its leases on its own clock
 * (`TIME`), which no test can move: time passes there by a real wait.
 *
 * The admission path is the guard's (`src/guard/admission.ts`, `callLedger.ts`): `acquire` on every
 * backend (the port has no other way to admit).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemClock, type Clock, type TimerHandle } from '../../src/core/clock.js';
import type { AbsoluteLimits, ResourceAmounts } from '../../src/core/types.js';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import type { Admission, LedgerLimits, LedgerPlace, LimitsReading, QuotaLedger } from '../../src/ledger/index.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { isSqliteUnavailable } from '../../src/sqlite/native.js';
import { Redis } from 'ioredis';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { ledgerKeys } from '../../src/redis/options.js';
import { haveRedis, RedisServer, skipReason as redisSkipReason } from '../redis/support.js';

export const ENDPOINT = 'http://nova.example:8774/v2.1';

/**
 * A clock that moves only when told. Its timers never fire (see the module description). Its wall
 * clock (`wallNow`) moves with `now()` and can also be stepped alone ({@link ManualClock.stepWall}:
 * NTP, `date -s`, a VM resumed), the monotonic `now()` unmoved.
 */
export class ManualClock implements Clock {
  #t = 1_000;
  #wallStep = 0;
  now(): number {
    return this.#t;
  }
  wallNow(): number {
    return 1_750_000_000_000 + this.#t + this.#wallStep;
  }
  /** Step the wall clock by `ms` (either way); `now()` does not move. */
  stepWall(ms: number): void {
    this.#wallStep += ms;
  }
  setTimeout(_fn: () => void, _delayMs: number): TimerHandle {
    const handle = { unref: () => handle, ref: () => handle, hasRef: () => false, refresh: () => handle };
    return handle as unknown as TimerHandle;
  }
  clearTimeout(_handle: TimerHandle | undefined): void {}
  advance(ms: number): void {
    this.#t += ms;
  }
}

/**
 * The real clock (timers, `performance.now()`) with a wall clock that can be stepped: `Date.now()`
 * plus every step so far. For the Redis ledger, whose leases and stamps are on Redis's `TIME` and
 * whose waits and heartbeats are on real timers.
 */
export class SteppedWallClock implements Clock {
  #wallStep = 0;
  now(): number {
    return systemClock.now();
  }
  wallNow(): number {
    return systemClock.wallNow() + this.#wallStep;
  }
  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    return systemClock.setTimeout(fn, delayMs);
  }
  clearTimeout(handle: TimerHandle | undefined): void {
    systemClock.clearTimeout(handle);
  }
  /** Step the wall clock by `ms` (either way); `now()` does not move. */
  stepWall(ms: number): void {
    this.#wallStep += ms;
  }
}

/** How a test wants a holder made. */
export interface HolderOptions {
  /** The kept reading's age limit (SQLite, Redis); default 0 (every admission on its own reading). */
  readonly limitsMaxAgeMs?: number;
}

/** One store shared by the holders of one test. */
export interface TestStore {
  readonly backend: BackendName;
  /**
   * A new ledger object on this store (a second process or host). The in-process ledger has no
   * store apart from its object: it answers the store's one object (the guards of one process).
   */
  holder(options?: HolderOptions): QuotaLedger;
  /** `ms` pass on the store's clock (manual clock advanced; Redis: a real wait of `ms`). */
  pass(ms: number): Promise<void>;
  /** Before every step: manual clocks move 1 ms (each event its own instant); Redis: nothing. */
  step(): void;
  /**
   * Before a `/limits` reading: make sure the store's clock moved since the last one, so the kept
   * reading (shared reads, `limitsMaxAgeMs: 0`) is never fresh and every admission is on its own
   * reading (Redis: a real wait of 2 ms; manual clocks moved at `step`).
   */
  beforeReading(): Promise<void>;
  /**
   * The store loses its state (Redis: restarted empty) and every holder made is back on it, its
   * write-back done. `undefined` where the store cannot lose its state by itself (see
   * {@link Backend.emptied}).
   */
  readonly emptied: (() => Promise<void>) | undefined;
  /**
   * Where {@link TestStore.emptied} is given: the settle its holders' write-backs set (no admission
   * while it runs; `placeTtlMs`, see `docs/fleet-ledger.md`, Reconnect). `remainingMs`: what is left
   * of it (0: none); `end`: end it now, as if its time had passed (once every holder is back, the
   * only thing the settle waits for).
   */
  readonly settle: { remainingMs(): Promise<number>; end(): Promise<void> } | undefined;
  /**
   * Step the wall clock of every holder (made and to be made) by `ms`, either way, while the
   * monotonic clock (`now()`) and the store's own clock (Redis `TIME`) do not move.
   */
  stepWall(ms: number): void;
  /** Close every holder made and remove the store. */
  close(): Promise<void>;
}

export type BackendName = 'inProcess' | 'sqlite' | 'redis';

/** A backend: whether it can run here, and its stores. */
export interface Backend {
  readonly name: BackendName;
  /** Why it cannot run here (undefined: it can). */
  readonly skip: string | undefined;
  /**
   * Why its store cannot be emptied under its holders (undefined: it can, {@link TestStore.emptied}).
   * The in-process ledger's store is its object; a SQLite file is not emptied by itself and its
   * ledger writes nothing back (a claim gone from the file is gone).
   */
  readonly cannotEmpty: string | undefined;
  /** Start what the stores need (Redis: a redis-server for this file). */
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
  store(): Promise<TestStore>;
}

let scopes = 0;
const nextProject = (): string => `conf-${process.pid}-${++scopes}`;

function inProcessBackend(): Backend {
  return {
    name: 'inProcess',
    skip: undefined,
    cannotEmpty: 'its store is its object: it goes with its process',
    async setUp() {},
    async tearDown() {},
    async store() {
      const clock = new ManualClock();
      const ledger = new InProcessQuotaLedger({ clock, holder: 'h-in-process', endpoint: ENDPOINT, projectId: nextProject() });
      return {
        backend: 'inProcess',
        holder: () => ledger,
        pass: async (ms) => clock.advance(ms),
        step: () => clock.advance(1),
        beforeReading: async () => undefined,
        emptied: undefined,
        settle: undefined,
        stepWall: (ms) => clock.stepWall(ms),
        close: () => ledger.close(),
      };
    },
  };
}

function sqliteSkip(): string | undefined {
  try {
    const dir = mkdtempSync(join(tmpdir(), 'nova-guard-conf-probe-'));
    try {
      new SqliteQuotaLedger({ path: join(dir, 'probe.sqlite'), endpoint: ENDPOINT, projectId: 'probe' }).close().catch(() => undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return undefined;
  } catch (e) {
    if (isSqliteUnavailable(e)) return `better-sqlite3 does not load here: ${(e as Error).message}`;
    throw e;
  }
}

function sqliteBackend(): Backend {
  let dir: string | undefined;
  return {
    name: 'sqlite',
    skip: sqliteSkip(),
    cannotEmpty: 'a file is not emptied by itself, and its ledger writes nothing back',
    async setUp() {
      dir = mkdtempSync(join(tmpdir(), 'nova-guard-conf-'));
    },
    async tearDown() {
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
    async store() {
      const clock = new ManualClock();
      const projectId = nextProject();
      const path = join(dir!, `${projectId}.sqlite`);
      const made: SqliteQuotaLedger[] = [];
      let n = 0;
      return {
        backend: 'sqlite',
        holder: (o) => {
          const l = new SqliteQuotaLedger({ path, endpoint: ENDPOINT, projectId, clock, holder: `h-sqlite-${++n}`, limitsMaxAgeMs: o?.limitsMaxAgeMs ?? 0 });
          made.push(l);
          return l;
        },
        pass: async (ms) => clock.advance(ms),
        step: () => clock.advance(1),
        beforeReading: async () => undefined,
        emptied: undefined,
        settle: undefined,
        stepWall: (ms) => clock.stepWall(ms),
        close: async () => {
          await Promise.all(made.map((l) => l.close()));
          for (const f of ['', '-wal', '-shm']) rmSync(path + f, { force: true });
        },
      };
    },
  };
}

/** The key prefix of the Redis holders (the default, given so the test can name the `settle` key). */
const REDIS_KEY_PREFIX = 'nova-guard:';

function redisBackend(): Backend {
  let server: RedisServer | undefined;
  return {
    name: 'redis',
    skip: haveRedis ? undefined : redisSkipReason,
    cannotEmpty: undefined,
    async setUp() {
      server = await RedisServer.start();
    },
    async tearDown() {
      await server?.kill();
    },
    async store() {
      const projectId = nextProject();
      const made: RedisQuotaLedger[] = [];
      const clock = new SteppedWallClock();
      const settleKey = `${ledgerKeys(REDIS_KEY_PREFIX, ENDPOINT, projectId).base}settle`;
      let admin: Redis | undefined;
      const adminClient = async (): Promise<Redis> => {
        if (admin === undefined || admin.status !== 'ready') {
          admin?.disconnect();
          admin = new Redis(server!.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
          await admin.connect();
        }
        return admin;
      };
      let n = 0;
      return {
        backend: 'redis',
        holder: (o) => {
          const l = new RedisQuotaLedger({ url: server!.url, endpoint: ENDPOINT, projectId, holder: `h-redis-${++n}`, limitsMaxAgeMs: o?.limitsMaxAgeMs ?? 0, clock, keyPrefix: REDIS_KEY_PREFIX });
          made.push(l);
          return l;
        },
        pass: (ms) => sleep(ms),
        step: () => undefined,
        beforeReading: () => sleep(2),
        // Restarted empty; each holder is back once a call of it answers after its connection is
        // ready again (a call waits for the holder's write-back after a reconnect).
        emptied: async () => {
          await server!.restart();
          for (const l of made) {
            const until = Date.now() + 15_000;
            let back = false;
            while (!back && Date.now() < until) {
              back = await l.liveClaimIds().then(
                () => true,
                () => false,
              );
              if (!back) await sleep(50);
            }
            if (!back) throw new Error(`holder ${l.holder} did not reach the restarted Redis within 15 s`);
          }
        },
        settle: {
          remainingMs: async () => Math.max(0, await (await adminClient()).pttl(settleKey)),
          end: async () => {
            await (await adminClient()).del(settleKey);
          },
        },
        stepWall: (ms) => clock.stepWall(ms),
        close: async () => {
          admin?.disconnect();
          await Promise.all(made.map((l) => l.close()));
        },
      };
    },
  };
}

/** The three backends, in the order the suites run them. */
export function backends(): Backend[] {
  return [inProcessBackend(), sqliteBackend(), redisBackend()];
}

/** A `/limits` answer (as `NovaClient.getLimits` parses it) with `headroom` left per resource (`undefined`: unlimited, Nova's -1, parsed as `Infinity`). */
export function absoluteFor(headroom: Partial<ResourceAmounts>, used: Partial<ResourceAmounts> = {}): AbsoluteLimits {
  const max = (h: number | undefined, u: number): number => (h === undefined ? Number.POSITIVE_INFINITY : h + u);
  const uc = used.cores ?? 0;
  const ur = used.ramMiB ?? 0;
  const ui = used.instances ?? 0;
  return {
    maxTotalCores: max(headroom.cores, uc),
    totalCoresUsed: uc,
    maxTotalRAMSize: max(headroom.ramMiB, ur),
    totalRAMUsed: ur,
    maxTotalInstances: max(headroom.instances, ui),
    totalInstancesUsed: ui,
  } as AbsoluteLimits;
}

/** What one admission of the guard's path gave. */
export interface Attempt {
  readonly admission: Admission;
  readonly reading: LedgerLimits;
  /** The place the call holds after it (taken when short without one). */
  readonly place: LedgerPlace | undefined;
  /** True when the ledger called `read` (false: it handed out a kept reading). */
  readonly read: boolean;
}

/**
 * One admission as the guard makes it (`admission.ts` `#admitOnce` through `callLedger.ts`): one
 * `acquire` with `joinIfShort` (and `staleShortMs` when given); an admitted call leaves its place
 * (the guard's `finally`: `leave` when the call's admission ends). `duringRead` runs while the
 * `/limits` read is in flight (after it was sent, before it answered): what other calls do
 * meanwhile.
 */
export async function admitAsGuard(
  ledger: QuotaLedger,
  call: { needs: ResourceAmounts; place: LedgerPlace | undefined; ttlMs: number; staleShortMs?: number },
  absolute: AbsoluteLimits,
  duringRead: () => Promise<void> = async () => undefined,
): Promise<Attempt> {
  let read = false;
  const readFn = async (): Promise<LimitsReading> => {
    read = true;
    await duringRead();
    return { absolute, requestId: 'req-conformance' };
  };
  const a = await ledger.acquire({ place: call.place, needs: call.needs, ttlMs: call.ttlMs, joinIfShort: true, ...(call.staleShortMs === undefined ? {} : { staleShortMs: call.staleShortMs }) }, readFn, undefined);
  const { reading, place, ...admission } = a;
  if (a.admitted && call.place !== undefined) await ledger.leave(call.place);
  return { admission: admission as Admission, reading, place: a.admitted ? undefined : (place ?? call.place), read };
}
