/**
 * The fake's server table: every server by id (O(1)), destroyed rows kept for `changes-since`, and
 * usage totals kept incrementally so a quota check never scans the table.
 *
 * Counting follows Nova's legacy counting (`_instances_cores_ram_count_legacy`,
 * `nova/objects/instance.py` `get_counts`): rows not destroyed and `vm_state != soft-delete` count;
 * ERROR counts; BUILD counts unless switched off (a BUILD server counts once it has a cell row); a
 * build request still in `scheduling` (no cell row yet, {@link ServerRecord.buildRequest}) does not count.
 *
 * @module
 */
import { QuotaRecorder } from './record.js';
import type { FakeDeleteBehavior, FakeFlavor, FakeServerView, UsageCounts } from './types.js';

/** A fault recorded on a server (`instance_faults`). */
export interface ServerFault {
  code: number;
  message: string;
  createdMs: number;
}

/** The fields a row shares with its {@link FakeServerView} (same names, same meaning). */
type ViewFields =
  | 'id'
  | 'name'
  | 'status'
  | 'vmState'
  | 'taskState'
  | 'powerState'
  | 'metadata'
  | 'createdMs'
  | 'updatedMs'
  | 'launchedMs'
  | 'terminatedMs'
  | 'locked'
  | 'ghost';

/** One server row. Mutate only through {@link ServerStore.update}, which keeps the totals right. */
export interface ServerRecord extends Pick<FakeServerView, ViewFields> {
  flavor: FakeFlavor;
  imageRef: string;
  fault: ServerFault | null;
  lockedReason: string | null;
  /** `instance.destroy()` happened: GET answers 404, usage no longer counts it. */
  destroyed: boolean;
  /** Per-server delete behaviour; undefined = the fake's default. */
  deleteBehavior: FakeDeleteBehavior | undefined;
  /** Compute-side delete: none, running (timers pending) or stuck (behaviour `never`). */
  deletePhase: 'none' | 'running' | 'stuck';
  seq: number;
  userId: string;
  reservationId: string;
  launchIndex: number;
  keyName: string | null;
  /** The create's `user_data` (base64, as sent), or null: an admin's GET shows it from 2.3. */
  userData?: string | null;
  description: string | null;
  /** Never scheduled: the instance lives in cell0 (no placement allocation). See {@link FakeNovaCauses}. */
  cell0?: boolean;
  /** Its cell does not answer: listed as a stub from 2.69, left out below; legacy counting skips it. */
  downCell?: boolean;
  /**
   * Still only a build request (`scheduling`, before conductor creates the instance in its cell):
   * legacy counting leaves it out (nova/objects/instance.py `get_counts` counts cell rows only).
   */
  buildRequest?: boolean;
  /** VERIFY_RESIZE: the flavor before the resize (placement holds both until confirm or revert). */
  oldFlavor?: FakeFlavor;
}

/** Nova's `vm_state` to status (`nova/api/openstack/common.py` `_STATE_MAP`, default entries). */
const VM_STATE_TO_STATUS: Record<string, string> = {
  active: 'ACTIVE',
  building: 'BUILD',
  stopped: 'SHUTOFF',
  resized: 'VERIFY_RESIZE',
  paused: 'PAUSED',
  suspended: 'SUSPENDED',
  rescued: 'RESCUE',
  error: 'ERROR',
  deleted: 'DELETED',
  'soft-delete': 'SOFT_DELETED',
  shelved: 'SHELVED',
  shelved_offloaded: 'SHELVED_OFFLOADED',
};

/** Status for a `vm_state`; unknown states map to `UNKNOWN`, as Nova does. */
export function statusForVmState(vmState: string): string {
  return VM_STATE_TO_STATUS[vmState] ?? 'UNKNOWN';
}

/** The `vm_state` behind a status (inverse of {@link statusForVmState}); `REBOOT` etc. map to `active`. */
export function vmStateForStatus(status: string): string {
  const upper = status.toUpperCase();
  for (const [vm, st] of Object.entries(VM_STATE_TO_STATUS)) if (st === upper) return vm;
  return 'active';
}

type Bucket = 'none' | 'request' | 'build' | 'counted';

function bucketOf(r: ServerRecord): Bucket {
  if (r.destroyed || r.vmState === 'soft-delete' || r.status === 'SOFT_DELETED') return 'none';
  if (r.buildRequest === true) return 'request';
  if (r.status === 'BUILD') return 'build';
  return 'counted';
}

function zero(): UsageCounts {
  return { cores: 0, instances: 0, ram: 0 };
}

/** The server table and its usage totals. */
export class ServerStore {
  private readonly byId = new Map<string, ServerRecord>();
  private readonly rows: ServerRecord[] = [];
  private readonly counted = zero();
  private readonly building = zero();
  private seq = 0;
  /** What servers that exist hold at most, and the quota events (see `QuotaRecorder`). */
  readonly record = new QuotaRecorder();
  private running = 0;
  /** Whether BUILD servers count toward usage (legacy counting: yes). */
  countBuild = true;
  /** How usage is counted: Nova's legacy counting (cell databases) or `[quota] count_usage_from_placement`. */
  model: 'legacy' | 'placement' = 'legacy';
  /** Set once a row carries a cause the incremental totals do not model (cell0, down cell, old flavor). */
  scan = false;
  /** Allocations placement keeps for servers that are gone (cores, RAM): counted only from placement. */
  leaked: UsageCounts = zero();

  /** Next insertion sequence number. */
  nextSeq(): number {
    return ++this.seq;
  }

  /** Add a row. Throws if the id is taken (even by a destroyed row). */
  insert(r: ServerRecord): void {
    if (this.byId.has(r.id)) throw new Error(`server id ${r.id} already exists`);
    this.byId.set(r.id, r);
    this.rows.push(r);
    this.add(r, 1);
  }

  /** The row, destroyed or not. */
  get(id: string): ServerRecord | undefined {
    return this.byId.get(id);
  }

  /** The row if it is not destroyed. */
  live(id: string): ServerRecord | undefined {
    const r = this.byId.get(id);
    return r && !r.destroyed ? r : undefined;
  }

  /**
   * Drop every destroyed row, as `nova-manage db archive_deleted_rows --purge` does: a server so
   * dropped is no longer found as a listing's marker (Nova answers 400 `marker [<id>] not found`)
   * nor listed by `changes-since`. Returns the number of rows dropped.
   */
  purgeDestroyed(): number {
    const kept = this.rows.filter((r) => !r.destroyed);
    const dropped = this.rows.length - kept.length;
    for (const r of this.rows) if (r.destroyed) this.byId.delete(r.id);
    this.rows.splice(0, this.rows.length, ...kept);
    return dropped;
  }

  /** Every row in insertion order (destroyed ones too). Do not mutate. */
  all(): readonly ServerRecord[] {
    return this.rows;
  }

  /** Apply `patch` to the row, stamp `updatedMs` and keep the usage totals right. */
  update(r: ServerRecord, patch: Partial<ServerRecord>, nowMs: number = Date.now()): void {
    this.add(r, -1);
    Object.assign(r, patch);
    r.updatedMs = nowMs;
    this.add(r, 1);
  }

  /**
   * Deletes the compute side is working on: accepted, not yet destroyed, failed or soft-deleted
   * (`deleting` and the `DELETED` window). A stuck delete (behaviour `never`) is not counted.
   */
  get deletesInFlight(): number {
    return this.running;
  }

  /** TRUE usage by the counting model in force ({@link ServerStore.model}). */
  usage(): UsageCounts {
    if (this.model === 'placement' || this.scan) return this.scanUsage();
    const u = { ...this.counted };
    if (this.countBuild) {
      u.cores += this.building.cores;
      u.instances += this.building.instances;
      u.ram += this.building.ram;
    }
    return u;
  }

  /** Whether this row counts toward the TRUE usage now. */
  counts(r: ServerRecord): boolean {
    const b = bucketOf(r);
    return b === 'counted' || (b === 'build' && this.countBuild);
  }

  /** Usage as counted from placement (mappings, allocations and leaked allocations), whatever the model in force. */
  placementUsage(): UsageCounts {
    return this.scanUsage('placement');
  }

  /** Usage by a full scan, row by row, under `model`. */
  private scanUsage(model: 'legacy' | 'placement' = this.model): UsageCounts {
    const u = zero();
    for (const r of this.rows) {
      const h = model === 'placement' ? placementHolds(r) : legacyHolds(r, this.countBuild);
      u.cores += h.cores;
      u.ram += h.ram;
      u.instances += h.instances;
    }
    if (model === 'placement') {
      u.cores += this.leaked.cores;
      u.ram += this.leaked.ram;
    }
    return u;
  }

  private add(r: ServerRecord, sign: 1 | -1): void {
    if (r.deletePhase === 'running' && !r.destroyed) this.running += sign;
    const b = bucketOf(r);
    if (b === 'none') return;
    this.record.hold({ cores: r.flavor.vcpus, instances: 1, ram: r.flavor.ram }, sign);
    if (b === 'request') return;
    const t = b === 'build' ? this.building : this.counted;
    t.cores += sign * r.flavor.vcpus;
    t.ram += sign * r.flavor.ram;
    t.instances += sign;
  }
}

/** What one row holds under legacy counting: live rows of every reachable cell (cell0 included). */
function legacyHolds(r: ServerRecord, countBuild: boolean): UsageCounts {
  const b = bucketOf(r);
  if (b === 'none' || b === 'request' || r.downCell || (b === 'build' && !countBuild)) return zero();
  return { cores: r.flavor.vcpus, ram: r.flavor.ram, instances: 1 };
}

/**
 * What one row holds when counting from placement: an instance per mapping not queued for delete
 * (set when the DELETE is accepted); cores and RAM per allocation, which cell0 and shelved-offloaded
 * servers do not have and a VERIFY_RESIZE server has twice (new flavor, and old flavor on the source).
 */
function placementHolds(r: ServerRecord): UsageCounts {
  if (r.destroyed || r.vmState === 'soft-delete') return zero();
  const deleting = r.status === 'DELETED' || r.taskState === 'deleting' || r.deletePhase !== 'none';
  const instances = deleting ? 0 : 1;
  if (r.cell0 || r.vmState === 'shelved_offloaded') return { cores: 0, ram: 0, instances };
  const old = r.vmState === 'resized' ? r.oldFlavor : undefined;
  return { cores: r.flavor.vcpus + (old?.vcpus ?? 0), ram: r.flavor.ram + (old?.ram ?? 0), instances };
}

/** A copy of the row for test code. */
export function viewOf(r: ServerRecord, counted: boolean): FakeServerView {
  return {
    id: r.id,
    name: r.name,
    flavorId: r.flavor.id,
    vcpus: r.flavor.vcpus,
    ramMiB: r.flavor.ram,
    ram: r.flavor.ram,
    status: r.status,
    vmState: r.vmState,
    taskState: r.taskState,
    powerState: r.powerState,
    metadata: { ...r.metadata },
    createdMs: r.createdMs,
    updatedMs: r.updatedMs,
    launchedMs: r.launchedMs,
    terminatedMs: r.terminatedMs,
    faultMessage: r.fault?.message ?? null,
    locked: r.locked,
    ghost: r.ghost,
    counted,
  };
}
