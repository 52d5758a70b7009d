/**
 * `FakeNova`: a faithful, in-process fake of the OpenStack Nova compute API v2.1 on 127.0.0.1, for
 * testing CI workers (and nova-guard itself) without a cloud. Exported as `nova-guard/testing`.
 *
 * Modelled on a real Nova 26.2 (Zed) with the legacy `DbQuotaDriver` and legacy usage counting, as
 * observed with the fake virt driver: Nova's error envelope and messages byte for byte (Python
 * `json.dumps` spacing), the delete timeline (`deleting` with the status unchanged, a `DELETED`
 * window that grows with the deletes in flight, then 404 with usage dropping in the same step),
 * `changes-since` listings that keep deleted servers, soft delete, microversion-dependent bodies,
 * and fault injection. Served on a socket and, without one, through {@link FakeNova.adapter}.
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';
import type { Compute } from './fakeNova/compute.js';
import type { FaultQueue } from './fakeNova/faults.js';
import { assemble, type FakeParts } from './fakeNova/assemble.js';
import { FakeNovaCauses } from './fakeNova/causes.js';
import { checkFaultSpec } from './fakeNova/faultSpec.js';
import { checkPathId } from '../core/validate.js';
import { BEHAVIORS, FAKE_SERVER_INIT_SPEC, FAKE_USAGE_SPEC, SERVER_BEHAVIOR_SPEC, quotaValue, resolveOptions } from './fakeNova/options.js';
import { ramMiBOf, usageReading } from './fakeNova/usage.js';
import { checkOptions } from '../core/options.js';
import type { QuotaBook } from './fakeNova/quota.js';
import type { FakeQuotaRecord } from './fakeNova/record.js';
import { viewOf, type ServerRecord, type ServerStore } from './fakeNova/state.js';
import type { TimerSet } from './fakeNova/timers.js';
import type { FakeDeleteBehavior, FakeFlavor, FakeNovaOptions, FakeServerInit, FakeServerView, FakeUsage, FaultSpec, RecordedRequest } from './fakeNova/types.js';
import { AdapterBinding } from './wire/adapterBinding.js';
import { HttpBinding } from './wire/httpBinding.js';
import type { AxiosAdapter } from 'axios';

export type { FakeDeleteBehavior, FakeFlavor, FakeNovaOptions, FakeServerInit, FakeServerView, FakeUsage, FaultSpec, RecordedRequest } from './fakeNova/types.js';
export type { FakeQuotaRecord } from './fakeNova/record.js';
export { DEFAULT_FLAVORS } from './fakeNova/options.js';
export { DEFAULT_IMAGES, type FakeImage } from './fakeNova/routes/images.js';
export { FakeNovaCauses, NO_VALID_HOST_MESSAGE } from './fakeNova/causes.js';
export { realNovaDeletedWindowMs, REAL_NOVA_DELETED_WINDOW_BASE_MS, REAL_NOVA_DELETED_WINDOW_PER_DELETE_MS } from './fakeNova/deleteLoad.js';
export type { InProcessRequest } from './wire/adapterBinding.js';

/**
 * A fake Nova on `http://127.0.0.1:PORT/v2.1`. Start with {@link FakeNova.start}, point the client at
 * {@link FakeNova.endpoint}, and always {@link FakeNova.close} it.
 *
 * Routes: `GET /servers`, `/servers/detail` (filters `name`, `status`, `changes-since`,
 * `changes-before`; `limit`/`marker` pagination with `servers_links`), `GET|DELETE /servers/{id}`,
 * `POST /servers`, `POST /servers/{id}/action` (`forceDelete`, `restore`, `lock`, `unlock`,
 * `os-stop`, `os-start`), `GET /flavors[/detail|/{id}]`, `GET /images[/detail]` (before 2.36), `GET /limits`,
 * `GET|PUT|DELETE /os-quota-sets/{project}[/detail]`, and the version documents `GET /` and `GET /v2.1/`.
 *
 * Roles: a noauth2-style token `admin:<project>` is admin; any other token (or none) is a project
 * member (no `OS-EXT-SRV-ATTR:*` fields, subject to locks, may not list `status=DELETED`).
 *
 * Two fronts serve the same answers (one pipeline records, applies faults and routes for both): the
 * socket at {@link FakeNova.endpoint}, and {@link FakeNova.adapter}, an axios adapter that needs no
 * socket, so a suite can run under `vi.useFakeTimers()`.
 *
 * @example
 * ```ts
 * const nova = await FakeNova.start({ maxTotalCores: 4, deleteDelayMs: 20 });
 * try { ... new NovaClient({ endpoint: nova.endpoint, token: 'admin:demo' }) ... }
 * finally { await nova.close(); }
 * ```
 * @example In process, on fake timers:
 * ```ts
 * const nova = await FakeNova.start();
 * vi.useFakeTimers();
 * const client = new NovaClient({ endpoint: nova.endpoint, token: 'admin:demo', adapter: nova.adapter });
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
  /** Knobs that make the causes a quota audit names (orphaned mapping, stuck delete, cell0, counting model, ...). */
  readonly causes: FakeNovaCauses;

  private readonly store: ServerStore;
  private readonly quota: QuotaBook;
  private readonly compute: Compute;
  private readonly timers: TimerSet;
  private readonly faults: FaultQueue;
  private readonly http: HttpBinding;
  private readonly inProcess: AdapterBinding;
  private readonly flavors: Map<string, FakeFlavor>;
  private closing: Promise<void> | undefined;

  private constructor(parts: FakeParts & { url: string; projectId: string; http: HttpBinding; inProcess: AdapterBinding; flavors: Map<string, FakeFlavor> }) {
    this.url = parts.url;
    this.endpoint = parts.url + '/v2.1';
    this.projectId = parts.projectId;
    this.requests = parts.requests;
    this.store = parts.store;
    this.quota = parts.quota;
    this.compute = parts.compute;
    this.timers = parts.timers;
    this.faults = parts.faults;
    this.http = parts.http;
    this.inProcess = parts.inProcess;
    this.flavors = parts.flavors;
    this.causes = new FakeNovaCauses(parts);
  }

  /**
   * An axios adapter that serves this fake in process: the same answers as {@link FakeNova.endpoint}
   * (same routes, headers including `Date` and `x-openstack-request-id`, recorded requests and
   * injected faults) without a socket. Give it to a client aimed at {@link FakeNova.endpoint}, e.g.
   * `new NovaClient({ endpoint: nova.endpoint, token, adapter: nova.adapter })`; a request to another
   * host is refused (`ECONNREFUSED`).
   *
   * It settles as axios's own `node:http` adapter does: a `reset` fault rejects with an `AxiosError`
   * of code `ECONNRESET`; a `hang` fault never settles until the request's `signal` aborts (then
   * axios's `CanceledError`, code `ERR_CANCELED`) or {@link FakeNova.close} (`ECONNRESET`); a delay
   * waits on the global timers, so `vi.useFakeTimers()` drives it; `maxContentLength`,
   * `maxBodyLength`, `timeout` and `validateStatus` apply as axios applies them. After `close()` every
   * request is refused (`ECONNREFUSED`).
   */
  get adapter(): AxiosAdapter {
    return this.inProcess.adapter;
  }

  /**
   * Start a fake Nova listening on 127.0.0.1.
   *
   * @param options - See {@link FakeNovaOptions}; every duration is in milliseconds.
   * @returns the running fake.
   * @throws `ValidationError` (nova-guard) for an unknown option name (here or in a flavor, naming the
   *   closest), a negative duration, a quota below -1, a malformed microversion, duplicate or invalid
   *   flavors, or a non-positive page size.
   * @throws the listen error (e.g. `EADDRINUSE`) when the port is taken.
   */
  static async start(options: FakeNovaOptions = {}): Promise<FakeNova> {
    const o = resolveOptions(options);
    const p = assemble(o);
    const http = new HttpBinding(p.front.handle);
    const url = `http://127.0.0.1:${await http.listen(o.port)}`;
    p.engine.baseUrl = url;
    const inProcess = new AdapterBinding(url, p.front.handle);
    return new FakeNova({ ...p, url, projectId: o.projectId, http, inProcess, flavors: o.flavors });
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
   * @throws `ValidationError` (nova-guard) for a spec the fake could not apply: no `path` (string or RegExp),
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
   * @throws `ValidationError` (nova-guard) for an unknown flavor, an id already used, or an id a client could
   * not ask for (empty, or with `/`, `?`, `#`, or `.`/`..`).
   */
  addServer(init: Partial<FakeServerInit> = {}): FakeServerView {
    checkOptions('FakeNova.addServer', init, FAKE_SERVER_INIT_SPEC);
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
   * Change quota limits at run time (`-1` = unlimited), like an admin's forced `PUT /os-quota-sets`:
   * `cores`, `instances`, `ramMiB` (`ram`, its deprecated old name, is taken too).
   *
   * @throws `ValidationError` (nova-guard) for a value that is not an integer >= -1, or `ramMiB` and
   *   `ram` given with different values.
   */
  setQuota(q: Partial<FakeUsage>): void {
    checkOptions('FakeNova.setQuota', q, FAKE_USAGE_SPEC);
    const ram = ramMiBOf('FakeNova.setQuota', q);
    const next = { ...this.quota.limits };
    if (q.cores !== undefined) next.cores = quotaValue('cores', q.cores, 0);
    if (q.instances !== undefined) next.instances = quotaValue('instances', q.instances, 0);
    if (ram !== undefined) next.ram = quotaValue(q.ramMiB !== undefined ? 'ramMiB' : 'ram', ram, 0);
    this.quota.limits = next;
  }

  /** The current quota limits (`-1` = unlimited): `cores`, `instances`, `ramMiB` (and `ram`, its deprecated old name). */
  limits(): FakeUsage {
    return usageReading(this.quota.limits);
  }

  /**
   * The TRUE current usage by Nova's legacy counting rules (no drift, no lag): `cores`,
   * `instances` and `ramMiB` (RAM in MiB; `ram` is the same number under its deprecated old name).
   */
  usage(): FakeUsage {
    return usageReading(this.store.usage());
  }

  /** What `/limits` reports right now: truth + drift + lag (`ramMiB`, and `ram` its deprecated old name). */
  reportedUsage(): FakeUsage {
    return usageReading(this.quota.reported(this.store.usage(), Date.now()));
  }

  /**
   * Set how one server reacts to its next DELETE (see {@link FakeDeleteBehavior}). `error` and
   * `ignore` are used up by one DELETE; `never` stays until changed.
   *
   * @param b.faultMessage - `fault.message` for `error`; default "Failed to terminate instance: fake compute driver error".
   * @throws `ValidationError` (nova-guard) for an unknown server or behaviour.
   */
  setServerBehavior(id: string, b: { onDelete?: FakeDeleteBehavior; faultMessage?: string }): void {
    checkOptions('FakeNova.setServerBehavior', b, SERVER_BEHAVIOR_SPEC);
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
   * `Quota exceeded for cores: Requested 2, but already used 10 of 10 cores`, when `scheduling`
   * ends (see `schedulingDelayMs`; without it, at the end of `buildDelayMs`). They still count
   * toward quota until deleted.
   *
   * @throws `ValidationError` (nova-guard) when `n` is not an integer >= 0.
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
   * @throws `ValidationError` (nova-guard) for a value that is not an integer (NaN would reach `/limits`).
   */
  setUsageDrift(d: Partial<FakeUsage>): void {
    checkOptions('FakeNova.setUsageDrift', d, FAKE_USAGE_SPEC);
    const drift = { cores: d.cores ?? 0, instances: d.instances ?? 0, ram: ramMiBOf('FakeNova.setUsageDrift', d) ?? 0 };
    for (const [k, v] of Object.entries(drift)) {
      if (!Number.isInteger(v)) throw new ValidationError(`FakeNova.setUsageDrift: ${k} must be an integer, got ${String(v)}`);
    }
    this.quota.drift = drift;
  }

  /**
   * Make a server a ghost: listings still show it and it counts in usage, but
   * `GET|DELETE /servers/{id}` and actions answer 404 (an instance mapping pointing nowhere).
   *
   * @throws `ValidationError` (nova-guard) for an unknown server.
   */
  makeGhost(id: string): void {
    this.mustGet(id, 'makeGhost').ghost = true;
  }

  /**
   * What the fake saw of the quota since start or {@link FakeNova.clearQuotaRecord}, for over-commit
   * proofs (see {@link FakeQuotaRecord}): `peakCores` above `limits.cores` (not `-1`) means more was
   * accepted than the quota holds. @returns a copy. @example `expect(r.peakCores).toBeLessThanOrEqual(r.limits.cores)`
   */
  quotaRecord(): FakeQuotaRecord {
    return this.store.record.snapshot(this.quota.limits);
  }

  /** Start {@link FakeNova.quotaRecord} over: peaks from what servers hold now, counters at 0. */
  clearQuotaRecord(): void {
    this.store.record.reset();
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

  /**
   * Archive and purge the rows of destroyed servers (`nova-manage db archive_deleted_rows --purge`):
   * from then on such a server is no longer a valid listing marker (400 `marker [<id>] not found`,
   * as Nova answers) and `changes-since` no longer shows it. Returns the number of rows dropped.
   */
  archiveDeletedRows(): number {
    return this.store.purgeDestroyed();
  }

  /** Number of pending timers (builds, deletes, delayed faults); 0 after close(). */
  pendingTimers(): number {
    return this.timers.size;
  }

  /**
   * Stop the server, destroy every socket (hung ones too), reset every open request of
   * {@link FakeNova.adapter} (`ECONNRESET`) and clear every timer. Idempotent.
   */
  close(): Promise<void> {
    if (!this.closing) {
      this.timers.clear();
      this.faults.clear();
      this.inProcess.close();
      this.closing = this.http.close();
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
