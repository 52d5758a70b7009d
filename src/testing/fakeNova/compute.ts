/**
 * The fake's "compute side": server life cycles (build, delete, soft delete, terminate failure,
 * conductor's quota recheck) over the {@link ServerStore}, with every timer in one {@link TimerSet}.
 *
 * Delete timeline (`nova/compute/manager.py` `_delete_instance`, as observed on a real Nova 26.2):
 * DELETE sets `task_state` `deleting` with the status unchanged; after `deleteDelayMs` `vm_state`
 * `deleted` / status `DELETED` / `task_state` null; after the `DELETED` window (a function of the
 * deletes in flight, see `deleteLoad.ts`) `instance.destroy()`: GET answers 404 and usage drops in the
 * same step.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { QuotaBook, RESOURCES, recheckMessage } from './quota.js';
import { ServerStore, statusForVmState, vmStateForStatus, type ServerRecord } from './state.js';
import { TimerSet } from './timers.js';
import type { FakeDeleteBehavior, FakeFlavor, FakeServerInit, UsageCounts } from './types.js';

/** Default fault message of the `error` delete behaviour (`InstanceTerminationFailure`). */
export const DEFAULT_TERMINATE_FAULT = 'Failed to terminate instance: fake compute driver error';

/** Resolved timing options of the compute side. */
export interface ComputeTiming {
  buildDelayMs: number;
  /** BUILD shows `scheduling` for this long (within `buildDelayMs`), then `spawning`. */
  schedulingDelayMs: number;
  deleteDelayMs: number;
  /** The `DELETED` window in ms for the number of deletes in flight (this one included). */
  deletedWindowMs: (inFlightDeletes: number) => number;
  softDelete: boolean;
  /** `task_state` of a server whose terminate failed (see `FakeNovaOptions.terminateErrorTaskState`). */
  terminateErrorTaskState: 'deleting' | null;
  /** 0 = SOFT_DELETED servers are never reclaimed. */
  reclaimIntervalMs: number;
}

/** What a create asks for, already validated. */
export interface CreateRequest {
  name: string;
  flavor: FakeFlavor;
  imageRef: string;
  metadata: Record<string, string>;
  count: number;
  userId: string;
  keyName: string | null;
  description: string | null;
  /** The create's `user_data` (base64, as sent), or null. */
  userData?: string | null;
}

/** Server life cycles of the fake. */
export class Compute {
  /** Delete behaviour of servers without their own. */
  defaultBehavior: FakeDeleteBehavior = 'normal';
  private recheckLeft = 0;
  private recheckText: string | undefined;
  private readonly terminateFault = new Map<string, string>();

  constructor(
    readonly store: ServerStore,
    readonly quota: QuotaBook,
    readonly timers: TimerSet,
    readonly timing: ComputeTiming,
    readonly projectId: string,
  ) {}

  /** Make the next `n` accepted creates fail conductor's quota recheck. */
  failRecheck(n: number, message: string | undefined): void {
    this.recheckLeft = n;
    this.recheckText = message;
  }

  /** Set a server's delete behaviour (and the fault text of `error`). */
  setBehavior(r: ServerRecord, b: FakeDeleteBehavior, faultMessage?: string): void {
    r.deleteBehavior = b;
    if (faultMessage !== undefined) this.terminateFault.set(r.id, faultMessage);
  }

  /**
   * Create `req.count` servers in BUILD and start their builds. Quota was checked by the caller.
   *
   * With a `scheduling` part (`schedulingDelayMs` > 0, within `buildDelayMs`) the servers are build
   * requests until it ends: legacy counting leaves them out (neither the create check nor `/limits`
   * counts them). At its end conductor creates them in their cell (now counted) and rechecks the
   * quota (`[quota] recheck_quota`, `nova/conductor/manager.py` `schedule_and_build_instances`): if
   * the project is then over a limit, or the create was marked by {@link Compute.failRecheck}, all
   * servers of the request go to ERROR with the recheck fault and keep counting until deleted.
   */
  create(req: CreateRequest, nowMs = Date.now()): ServerRecord[] {
    let forced: string | undefined;
    if (this.recheckLeft > 0) {
      this.recheckLeft--;
      forced = this.recheckText ?? recheckMessage(req.flavor, req.count, this.quota.limits);
    }
    const schedulingMs = Math.min(this.timing.schedulingDelayMs, this.timing.buildDelayMs);
    const reservationId = 'r-' + randomUUID().replace(/-/g, '').slice(0, 8);
    const out: ServerRecord[] = [];
    for (let i = 0; i < req.count; i++) {
      const r = this.newRecord(
        {
          name: req.count > 1 ? `${req.name}-${i + 1}` : req.name,
          flavor: req.flavor,
          imageRef: req.imageRef,
          metadata: { ...req.metadata },
          status: 'BUILD',
          vmState: 'building',
          taskState: this.timing.buildDelayMs > 0 ? (forced !== undefined || this.timing.schedulingDelayMs > 0 ? 'scheduling' : 'spawning') : null,
          userId: req.userId,
          reservationId,
          launchIndex: i,
          keyName: req.keyName,
          userData: req.userData ?? null,
          description: req.description,
          ...(schedulingMs > 0 ? { buildRequest: true } : {}),
        },
        nowMs,
      );
      this.store.insert(r);
      out.push(r);
    }
    if (schedulingMs > 0) {
      this.timers.after(schedulingMs, () => this.endScheduling(out, req, forced));
      for (const r of out) this.timers.after(this.timing.buildDelayMs, () => this.finishBuild(r, undefined));
      return out;
    }
    // No scheduling part: counted from the POST; a forced recheck failure stays `scheduling` until its ERROR.
    for (const r of out) this.timers.after(this.timing.buildDelayMs, () => this.finishBuild(r, forced));
    return out;
  }

  /** Seed a server directly (no quota check), as {@link FakeNova.addServer}. */
  seed(init: Partial<FakeServerInit>, flavor: FakeFlavor, nowMs = Date.now()): ServerRecord {
    const status = (init.status ?? (init.vmState ? statusForVmState(init.vmState) : 'ACTIVE')).toUpperCase();
    const vmState = init.vmState ?? vmStateForStatus(status);
    const launched = !['BUILD', 'ERROR'].includes(status);
    const createdMs = init.createdMs ?? nowMs;
    const r = this.newRecord(
      {
        id: init.id ?? randomUUID(),
        name: init.name ?? 'server',
        flavor,
        imageRef: '',
        metadata: { ...(init.metadata ?? {}) },
        status,
        vmState,
        taskState: init.taskState ?? null,
        powerState: vmState === 'active' ? 1 : vmState === 'stopped' || vmState === 'soft-delete' ? 4 : 0,
        launchedMs: launched ? createdMs : null,
        terminatedMs: vmState === 'deleted' ? nowMs : null,
        fault: init.faultMessage ? { code: 500, message: init.faultMessage, createdMs: nowMs } : null,
        userId: 'admin',
        createdMs,
      },
      nowMs,
    );
    this.store.insert(r);
    return r;
  }

  /**
   * A DELETE (or `forceDelete` with `force`) accepted by the API: start the compute-side delete
   * according to the server's behaviour. The caller has already answered or will answer 204/202.
   */
  requestDelete(r: ServerRecord, force: boolean, nowMs = Date.now()): void {
    if (r.destroyed || r.vmState === 'deleted') return;
    if (r.deletePhase === 'running') return; // a repeated DELETE while the first is on its way
    // `nova/compute/api.py` `_delete`: with the host up, a DELETE of an instance whose task_state is
    // already `deleting` is ignored ("already in deleting state"), so an ERROR left by a failed
    // terminate (task_state `deleting`) is not retried by another DELETE.
    if (r.vmState === 'error' && r.taskState === 'deleting') return;
    // A SHELVED_OFFLOADED server has no host: the API deletes it locally (`_local_delete`), so GET
    // answers 404 right after the 204, with no `deleting` and no `DELETED` window.
    if (r.vmState === 'shelved_offloaded') {
      this.destroy(r, nowMs);
      return;
    }
    const behavior = r.deleteBehavior ?? this.defaultBehavior;
    if (behavior === 'ignore') {
      r.deleteBehavior = undefined; // the message was lost; a re-issued DELETE works
      return;
    }
    const soft = !force && this.timing.softDelete && r.launchedMs !== null;
    if (soft && r.vmState === 'soft-delete') return; // already soft-deleted: stays so
    const stuck = behavior === 'never';
    this.store.update(r, { taskState: soft ? 'soft-deleting' : 'deleting', deletePhase: stuck ? 'stuck' : 'running' }, nowMs);
    if (stuck) return;
    if (behavior === 'error') {
      r.deleteBehavior = undefined;
      this.timers.after(this.timing.deleteDelayMs, () => this.failTerminate(r));
      return;
    }
    if (soft) this.timers.after(this.timing.deleteDelayMs, () => this.finishSoftDelete(r));
    else this.timers.after(this.timing.deleteDelayMs, () => this.markDeleted(r));
  }

  /** `restore` of a SOFT_DELETED server (quota was checked by the caller). */
  restore(r: ServerRecord): void {
    this.store.update(r, { vmState: 'active', status: 'ACTIVE', taskState: null, powerState: 1, deletePhase: 'none' });
  }

  /** `instance.destroy()`: GET answers 404 from now on; usage drops in the same step. */
  destroy(r: ServerRecord, nowMs = Date.now()): void {
    if (r.destroyed) return;
    const released: UsageCounts | undefined = this.store.counts(r)
      ? { cores: r.flavor.vcpus, instances: 1, ram: r.flavor.ram }
      : undefined;
    this.store.update(
      r,
      { destroyed: true, vmState: 'deleted', status: 'DELETED', taskState: null, powerState: 0, deletePhase: 'none' },
      nowMs,
    );
    if (r.terminatedMs === null) r.terminatedMs = nowMs;
    if (released) this.quota.released(released, nowMs);
  }

  private newRecord(
    f: Partial<ServerRecord> & Pick<ServerRecord, 'name' | 'flavor' | 'status' | 'vmState'>,
    nowMs: number,
  ): ServerRecord {
    return {
      id: randomUUID(),
      imageRef: '',
      taskState: null,
      powerState: 0,
      metadata: {},
      createdMs: nowMs,
      updatedMs: nowMs,
      launchedMs: null,
      terminatedMs: null,
      fault: null,
      locked: false,
      lockedReason: null,
      ghost: false,
      destroyed: false,
      deleteBehavior: undefined,
      deletePhase: 'none',
      seq: this.store.nextSeq(),
      userId: 'admin',
      reservationId: 'r-' + randomUUID().replace(/-/g, '').slice(0, 8),
      launchIndex: 0,
      keyName: null,
      userData: null,
      description: null,
      ...f,
    };
  }

  /**
   * The end of `scheduling`: conductor creates the instances of one request in their cell (they
   * count from now on), rechecks the quota with no new deltas (over = used above a limit, drift
   * included), and sets them all to ERROR when over (or when forced); otherwise nova-compute takes
   * the build (`spawning`). A server deleted while a build request stays uncounted until destroyed.
   */
  private endScheduling(rows: readonly ServerRecord[], req: CreateRequest, forced: string | undefined): void {
    const now = Date.now();
    const placed = rows.filter((r) => !r.destroyed && r.buildRequest === true && r.deletePhase === 'none' && r.vmState === 'building');
    for (const r of placed) this.store.update(r, { buildRequest: false }, now);
    if (placed.length === 0) return;
    const used = this.quota.counted(this.store.usage());
    const limits = this.quota.limits;
    const over = RESOURCES.some((k) => limits[k] >= 0 && used[k] > limits[k]);
    const message = forced ?? (over ? recheckMessage(req.flavor, req.count, limits) : undefined);
    for (const r of placed) {
      if (message !== undefined) {
        this.store.update(r, { vmState: 'error', status: 'ERROR', taskState: null, fault: { code: 413, message, createdMs: now } }, now);
        this.store.record.recheckErrors++;
      } else if (r.taskState === 'scheduling') {
        this.store.update(r, { taskState: 'spawning' }, now);
      }
    }
  }

  private finishBuild(r: ServerRecord, recheck: string | undefined): void {
    if (r.destroyed || r.vmState !== 'building' || r.deletePhase !== 'none') return;
    const now = Date.now();
    if (recheck !== undefined) {
      this.store.update(
        r,
        { vmState: 'error', status: 'ERROR', taskState: null, fault: { code: 413, message: recheck, createdMs: now } },
        now,
      );
      this.store.record.recheckErrors++;
      return;
    }
    this.store.update(r, { vmState: 'active', status: 'ACTIVE', taskState: null, powerState: 1, launchedMs: now }, now);
  }

  private failTerminate(r: ServerRecord): void {
    if (r.destroyed) return;
    const now = Date.now();
    const message = this.terminateFault.get(r.id) ?? DEFAULT_TERMINATE_FAULT;
    this.store.update(
      r,
      {
        vmState: 'error',
        status: 'ERROR',
        taskState: this.timing.terminateErrorTaskState,
        deletePhase: 'none',
        fault: { code: 500, message, createdMs: now },
      },
      now,
    );
  }

  private finishSoftDelete(r: ServerRecord): void {
    if (r.destroyed) return;
    this.store.update(r, {
      vmState: 'soft-delete',
      status: 'SOFT_DELETED',
      taskState: null,
      powerState: 4,
      deletePhase: 'none',
    });
    if (this.timing.reclaimIntervalMs > 0) {
      this.timers.after(this.timing.reclaimIntervalMs, () => {
        if (r.vmState === 'soft-delete' && r.deletePhase === 'none') this.destroy(r);
      });
    }
  }

  private markDeleted(r: ServerRecord): void {
    if (r.destroyed) return;
    const now = Date.now();
    this.store.update(r, { vmState: 'deleted', status: 'DELETED', taskState: null, powerState: 0, terminatedMs: now }, now);
    this.timers.after(this.timing.deletedWindowMs(this.store.deletesInFlight), () => this.destroy(r));
  }
}
