/**
 * `FakeNova`: a faithful, in-process fake of the OpenStack Nova compute API v2.1 on 127.0.0.1, for
 * testing CI workers (and nova-guard itself) without a cloud. Exported as `nova-guard/testing`.
 *
 * Modelled on a real Nova 26 (Zed) with the legacy `DbQuotaDriver` and legacy usage counting, as
 * recorded in `shared/realnova/REPORT.md` and `observed/*.out`: Nova's error envelope and messages
 * byte for byte (Python `json.dumps` spacing), the delete timeline (`deleting` with the status
 * unchanged, a `DELETED` window, then 404 with usage dropping in the same step), `changes-since`
 * listings that keep deleted servers, soft delete, microversion-dependent bodies, and fault injection.
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';
import { Compute } from './fakeNova/compute.js';
import { FaultQueue } from './fakeNova/faults.js';
import { checkFaultSpec } from './fakeNova/faultSpec.js';
import { MAX_TIMER_MS, checkPathId } from '../core/validate.js';
import { parseMicroversion, compareMicroversion, type Microversion } from './fakeNova/microversion.js';
import { QuotaBook } from './fakeNova/quota.js';
import type { Engine } from './fakeNova/routes/context.js';
import { HttpFront } from './fakeNova/server.js';
import { ServerStore, viewOf, type ServerRecord } from './fakeNova/state.js';
import { TimerSet } from './fakeNova/timers.js';
import type {
  FakeDeleteBehavior,
  FakeFlavor,
  FakeNovaOptions,
  FakeServerInit,
  FakeServerView,
  FakeUsage,
  FaultSpec,
  RecordedRequest,
} from './fakeNova/types.js';

export type {
  FakeDeleteBehavior,
  FakeFlavor,
  FakeNovaOptions,
  FakeServerInit,
  FakeServerView,
  FakeUsage,
  FaultSpec,
  RecordedRequest,
} from './fakeNova/types.js';

/** The default flavors: `'1'` m1.tiny, `'2'` m1.small, `'3'` m1.medium (as the real-Nova test stack). */
export const DEFAULT_FLAVORS: readonly FakeFlavor[] = Object.freeze([
  { id: '1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1 },
  { id: '2', name: 'm1.small', vcpus: 2, ram: 2048, disk: 20 },
  { id: '3', name: 'm1.medium', vcpus: 4, ram: 4096, disk: 40 },
]);

const BEHAVIORS: readonly FakeDeleteBehavior[] = ['normal', 'error', 'never', 'ignore'];

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_TIMER_MS) {
    throw new ValidationError(`FakeNova option ${name} must be a finite number from 0 to ${MAX_TIMER_MS} (got ${String(value)})`);
  }
  return value;
}

function quotaValue(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < -1) {
    throw new ValidationError(`FakeNova ${name} must be an integer >= -1 (-1 = unlimited), got ${String(value)}`);
  }
  return value;
}

function version(name: string, text: string | undefined, fallback: string): Microversion {
  const v = parseMicroversion(text ?? fallback);
  if (!v) throw new ValidationError(`FakeNova option ${name} must look like '2.37' (got ${String(text)})`);
  return v;
}

/**
 * A fake Nova on `http://127.0.0.1:PORT/v2.1`. Start with {@link FakeNova.start}, point the client at
 * {@link FakeNova.endpoint}, and always {@link FakeNova.close} it.
 *
 * Routes: `GET /servers`, `/servers/detail` (filters `name`, `status`, `changes-since`,
 * `changes-before`; `limit`/`marker` pagination with `servers_links`), `GET|DELETE /servers/{id}`,
 * `POST /servers`, `POST /servers/{id}/action` (`forceDelete`, `restore`, `lock`, `unlock`,
 * `os-stop`, `os-start`), `GET /flavors[/detail|/{id}]`, `GET /limits`,
 * `GET|PUT|DELETE /os-quota-sets/{project}[/detail]`, and the version documents `GET /` and `GET /v2.1/`.
 *
 * Roles: a noauth2-style token `admin:<project>` is admin; any other token (or none) is a project
 * member (no `OS-EXT-SRV-ATTR:*` fields, subject to locks, may not list `status=DELETED`).
 *
 * @example
 * ```ts
 * const nova = await FakeNova.start({ maxTotalCores: 4, deleteDelayMs: 20 });
 * try { ... new NovaClient({ endpoint: nova.endpoint, token: 'admin:demo' }) ... }
 * finally { await nova.close(); }
 * ```
 */
export class FakeNova {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  /** `url + '/v2.1'`: the compute endpoint to give a client. */
  readonly endpoint: string;
  /** The project id (`tenant_id` of every server). */
  readonly projectId: string;
  /** Every request received, in arrival order (faulted ones too). */
  readonly requests: RecordedRequest[];

  private readonly store: ServerStore;
  private readonly quota: QuotaBook;
  private readonly compute: Compute;
  private readonly timers: TimerSet;
  private readonly faults: FaultQueue;
  private readonly front: HttpFront;
  private readonly flavors: Map<string, FakeFlavor>;
  private closing: Promise<void> | undefined;

  private constructor(parts: {
    url: string;
    projectId: string;
    requests: RecordedRequest[];
    store: ServerStore;
    quota: QuotaBook;
    compute: Compute;
    timers: TimerSet;
    faults: FaultQueue;
    front: HttpFront;
    flavors: Map<string, FakeFlavor>;
  }) {
    this.url = parts.url;
    this.endpoint = parts.url + '/v2.1';
    this.projectId = parts.projectId;
    this.requests = parts.requests;
    this.store = parts.store;
    this.quota = parts.quota;
    this.compute = parts.compute;
    this.timers = parts.timers;
    this.faults = parts.faults;
    this.front = parts.front;
    this.flavors = parts.flavors;
  }

  /**
   * Start a fake Nova listening on 127.0.0.1.
   *
   * @param options - See {@link FakeNovaOptions}; every duration is in milliseconds.
   * @returns the running fake.
   * @throws {@link ValidationError} for a negative duration, a quota below -1, a malformed
   *   microversion, duplicate or invalid flavors, or a non-positive page size.
   * @throws the listen error (e.g. `EADDRINUSE`) when the port is taken.
   */
  static async start(options: FakeNovaOptions = {}): Promise<FakeNova> {
    const projectId = options.projectId ?? 'demo';
    if (!projectId || /[/?#\s]/.test(projectId)) throw new ValidationError(`FakeNova projectId is invalid: ${projectId}`);
    const port = nonNegative('port', options.port, 0);
    if (!Number.isInteger(port) || port > 65535) throw new ValidationError(`FakeNova option port must be an integer from 0 to 65535 (got ${String(port)})`);
    const pageSize = options.pageSize ?? 1000;
    if (!Number.isInteger(pageSize) || pageSize < 1) {
      throw new ValidationError(`FakeNova option pageSize must be an integer >= 1 (got ${String(pageSize)})`);
    }
    const minVersion = version('minMicroversion', options.minMicroversion, '2.1');
    const maxVersion = version('maxMicroversion', options.maxMicroversion, '2.93');
    if (compareMicroversion(minVersion, maxVersion) > 0) {
      throw new ValidationError('FakeNova minMicroversion must not be above maxMicroversion');
    }
    const flavors = new Map<string, FakeFlavor>();
    for (const f of options.flavors ?? DEFAULT_FLAVORS) {
      if (!f.id || flavors.has(f.id)) throw new ValidationError(`FakeNova flavor id missing or duplicated: '${f.id}'`);
      if (!Number.isInteger(f.vcpus) || f.vcpus < 0 || !Number.isInteger(f.ram) || f.ram < 0) {
        throw new ValidationError(`FakeNova flavor ${f.id}: vcpus and ram must be integers >= 0`);
      }
      flavors.set(f.id, { ...f });
    }
    const defaults: FakeUsage = {
      cores: quotaValue('maxTotalCores', options.maxTotalCores, 20),
      instances: quotaValue('maxTotalInstances', options.maxTotalInstances, 10),
      ram: quotaValue('maxTotalRAMSize', options.maxTotalRAMSize, 51200),
    };
    const timers = new TimerSet();
    const store = new ServerStore();
    const quota = new QuotaBook(defaults, nonNegative('quotaLagMs', options.quotaLagMs, 0));
    const compute = new Compute(
      store,
      quota,
      timers,
      {
        buildDelayMs: nonNegative('buildDelayMs', options.buildDelayMs, 0),
        deleteDelayMs: nonNegative('deleteDelayMs', options.deleteDelayMs, 0),
        deletedWindowMs: nonNegative('deletedWindowMs', options.deletedWindowMs, 0),
        softDelete: options.softDelete ?? false,
        reclaimIntervalMs: nonNegative('reclaimIntervalMs', options.reclaimIntervalMs, 0),
      },
      projectId,
    );
    const engine: Engine = {
      store,
      compute,
      quota,
      flavors,
      projectId,
      pageSize,
      baseUrl: '',
      countedUsage: () => quota.counted(store.usage()),
      reportedUsage: () => quota.reported(store.usage(), Date.now()),
    };
    const faults = new FaultQueue();
    const requests: RecordedRequest[] = [];
    const front = new HttpFront({
      engine,
      faults,
      timers,
      requests,
      minVersion,
      maxVersion,
      validateToken: options.validateToken,
      keystoneUri: options.keystoneUri ?? 'http://127.0.0.1:5000/',
    });
    const actualPort = await front.listen(port);
    const url = `http://127.0.0.1:${actualPort}`;
    engine.baseUrl = url;
    return new FakeNova({ url, projectId, requests, store, quota, compute, timers, faults, front, flavors });
  }

  /** Forget the recorded requests. */
  clearRequests(): void {
    this.requests.length = 0;
  }

  /**
   * Recorded requests with this method (any case) and path (without `/v2.1`; a string must be
   * equal, a RegExp must match), e.g. `requestsTo('GET', '/limits')`.
   */
  requestsTo(method: string, path: string | RegExp): RecordedRequest[] {
    const m = method.toUpperCase();
    return this.requests.filter((r) => {
      if (r.method !== m) return false;
      if (typeof path === 'string') return r.path === path;
      path.lastIndex = 0;
      return path.test(r.path);
    });
  }

  /**
   * Queue a fault; the first queued fault matching a request applies, before auth and the real handler.
   *
   * @throws {@link ValidationError} for a spec the fake could not apply: no `path` (string or RegExp),
   * a `status` outside 100-999, invalid header names or values, `times` not a positive integer (or
   * `Infinity`), a negative `delayMs` (see `src/testing/fakeNova/faultSpec.ts`).
   */
  inject(fault: FaultSpec): void {
    checkFaultSpec(fault);
    this.faults.add({ ...fault, ...(fault.headers ? { headers: { ...fault.headers } } : {}) });
  }

  /** Drop every queued fault. */
  clearFaults(): void {
    this.faults.clear();
  }

  /**
   * Seed a server directly (no quota check, no build). Defaults: a fresh UUID, name `'server'`,
   * the first flavor, status `ACTIVE`. It counts toward usage as Nova counts it (ERROR counts).
   * `faultMessage` becomes `fault.message` (code 500) shown while the status is ERROR.
   *
   * @throws {@link ValidationError} for an unknown flavor, an id already used, or an id a client could
   * not ask for (empty, or with `/`, `?`, `#`, or `.`/`..`).
   */
  addServer(init: Partial<FakeServerInit> = {}): FakeServerView {
    if (init.id !== undefined) checkPathId('FakeNova.addServer: id', init.id);
    const flavorId = init.flavorId ?? this.firstFlavorId();
    const flavor = this.flavors.get(flavorId);
    if (!flavor) throw new ValidationError(`FakeNova.addServer: unknown flavor '${flavorId}'`);
    if (init.id !== undefined && this.store.get(init.id)) {
      throw new ValidationError(`FakeNova.addServer: server id ${init.id} already exists`);
    }
    const r = this.compute.seed(init, flavor);
    return viewOf(r, this.store.counts(r));
  }

  /** A copy of a server's state; undefined once destroyed (GET answers 404) or unknown. */
  getServerState(id: string): FakeServerView | undefined {
    const r = this.store.live(id);
    return r ? viewOf(r, this.store.counts(r)) : undefined;
  }

  /** Copies of every server not yet destroyed, in creation order. */
  listServerStates(): FakeServerView[] {
    return this.store
      .all()
      .filter((r) => !r.destroyed)
      .map((r) => viewOf(r, this.store.counts(r)));
  }

  /**
   * Change quota limits at run time (`-1` = unlimited), like an admin's forced `PUT /os-quota-sets`.
   *
   * @throws {@link ValidationError} for a value that is not an integer >= -1.
   */
  setQuota(q: Partial<FakeUsage>): void {
    const next = { ...this.quota.limits };
    if (q.cores !== undefined) next.cores = quotaValue('cores', q.cores, 0);
    if (q.instances !== undefined) next.instances = quotaValue('instances', q.instances, 0);
    if (q.ram !== undefined) next.ram = quotaValue('ram', q.ram, 0);
    this.quota.limits = next;
  }

  /** The current quota limits. */
  limits(): FakeUsage {
    return { ...this.quota.limits };
  }

  /** The TRUE current usage by Nova's legacy counting rules (no drift, no lag). */
  usage(): FakeUsage {
    return this.store.usage();
  }

  /** What `/limits` reports right now: truth + drift + lag. */
  reportedUsage(): FakeUsage {
    return this.quota.reported(this.store.usage(), Date.now());
  }

  /**
   * Set how one server reacts to its next DELETE (see {@link FakeDeleteBehavior}). `error` and
   * `ignore` are used up by one DELETE; `never` stays until changed.
   *
   * @param b.faultMessage - `fault.message` for `error`; default "Failed to terminate instance: fake compute driver error".
   * @throws {@link ValidationError} for an unknown server or behaviour.
   */
  setServerBehavior(id: string, b: { onDelete?: FakeDeleteBehavior; faultMessage?: string }): void {
    const r = this.mustGet(id, 'setServerBehavior');
    if (b.onDelete !== undefined) {
      if (!BEHAVIORS.includes(b.onDelete)) throw new ValidationError(`unknown delete behaviour '${String(b.onDelete)}'`);
      this.compute.setBehavior(r, b.onDelete, b.faultMessage);
      if (b.onDelete !== 'never' && r.deletePhase === 'stuck') r.deletePhase = 'none';
    }
  }

  /** Delete behaviour of every server without its own (default `normal`). */
  setDefaultDeleteBehavior(b: FakeDeleteBehavior): void {
    if (!BEHAVIORS.includes(b)) throw new ValidationError(`unknown delete behaviour '${String(b)}'`);
    this.compute.defaultBehavior = b;
  }

  /**
   * The next `n` accepted creates (POSTs answered 202) fail conductor's quota recheck: their servers
   * go to ERROR with a fault (code 413) whose message defaults to Nova's recheck text, e.g.
   * `Quota exceeded for cores: Requested 2, but already used 10 of 10 cores`. They still count
   * toward quota until deleted.
   *
   * @throws {@link ValidationError} when `n` is not an integer >= 0.
   */
  failCreatesWithQuotaRecheck(n: number, faultMessage?: string): void {
    if (!Number.isInteger(n) || n < 0) throw new ValidationError(`failCreatesWithQuotaRecheck: n must be an integer >= 0`);
    this.compute.failRecheck(n, faultMessage);
  }

  /**
   * Phantom usage added to what Nova counts (the quota check, `/limits`, quota detail in_use) but not
   * to {@link FakeNova.usage}. Negative values model under-counting. Replaces the previous drift;
   * omitted resources become 0.
   *
   * @throws {@link ValidationError} for a value that is not an integer (NaN would reach `/limits`).
   */
  setUsageDrift(d: Partial<FakeUsage>): void {
    const drift = { cores: d.cores ?? 0, instances: d.instances ?? 0, ram: d.ram ?? 0 };
    for (const [k, v] of Object.entries(drift)) {
      if (!Number.isInteger(v)) throw new ValidationError(`FakeNova.setUsageDrift: ${k} must be an integer, got ${String(v)}`);
    }
    this.quota.drift = drift;
  }

  /**
   * Make a server a ghost: listings still show it and it counts in usage, but
   * `GET|DELETE /servers/{id}` and actions answer 404 (an instance mapping pointing nowhere).
   *
   * @throws {@link ValidationError} for an unknown server.
   */
  makeGhost(id: string): void {
    this.mustGet(id, 'makeGhost').ghost = true;
  }

  /** Whether BUILD servers count toward usage (default true: legacy counting once the cell row exists). */
  countBuildInUsage(on: boolean): void {
    this.store.countBuild = on;
  }

  /**
   * Lock a server (as `POST /servers/{id}/action {"lock": null}`): a non-admin DELETE or
   * forceDelete then gets 409 `Instance <id> is locked`. Admin tokens bypass locks, as in Nova.
   */
  lock(id: string, reason: string | null = null): void {
    this.store.update(this.mustGet(id, 'lock'), { locked: true, lockedReason: reason });
  }

  /** Unlock a server. */
  unlock(id: string): void {
    this.store.update(this.mustGet(id, 'unlock'), { locked: false, lockedReason: null });
  }

  /** Destroy a server at once (as a reaper or another user would): GET answers 404 from now on. */
  destroyServer(id: string): void {
    this.compute.destroy(this.mustGet(id, 'destroyServer'));
  }

  /** Number of pending timers (builds, deletes, delayed faults); 0 after close(). */
  pendingTimers(): number {
    return this.timers.size;
  }

  /** Stop the server, destroy every socket (hung ones too) and clear every timer. Idempotent. */
  close(): Promise<void> {
    if (!this.closing) {
      this.timers.clear();
      this.faults.clear();
      this.closing = this.front.close();
    }
    return this.closing;
  }

  private firstFlavorId(): string {
    const first = this.flavors.keys().next();
    if (first.done) throw new ValidationError('FakeNova has no flavors');
    return first.value;
  }

  private mustGet(id: string, what: string): ServerRecord {
    const r = this.store.live(id);
    if (!r) throw new ValidationError(`FakeNova.${what}: no server ${id}`);
    return r;
  }
}
