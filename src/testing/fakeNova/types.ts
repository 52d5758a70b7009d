/**
 * Public option and data types of {@link FakeNova}, the in-process fake of the Nova compute API v2.1.
 *
 * Behaviour is modelled on a real Nova 26 (Zed) with the legacy `DbQuotaDriver` and legacy usage
 * counting (`[quota]count_usage_from_placement=False`), as observed on a real Nova 26.2 (Zed) with the
 * fake virt driver.
 *
 * @module
 */

/** A flavor the fake knows. RAM in MiB, disk in GiB (Nova API reference, "Flavors"). */
export interface FakeFlavor {
  /** Flavor id, e.g. `'1'`. */
  id: string;
  /** Flavor name, e.g. `'m1.tiny'`. */
  name: string;
  /** Number of vCPUs; counts toward the `cores` quota. */
  vcpus: number;
  /** RAM in MiB; counts toward the `ram` quota. */
  ram: number;
  /** Root disk in GiB. */
  disk: number;
  /**
   * A public flavor (`os-flavor-access:is_public`). A private one is shared with no project: only an
   * admin sees and uses it, and an admin's `GET /flavors/detail` lists it only with `is_public=None`
   * or `false` (Nova filters an admin's listing by `is_public`, public by default); a member's
   * listing, `GET /flavors/{id}` and create do not find it.
   * @default true
   */
  isPublic?: boolean;
}

/** What a server does when it is deleted (Nova's terminate path on the compute host). */
export type FakeDeleteBehavior =
  /** `task_state` `deleting`, then the optional `DELETED` window, then 404. */
  | 'normal'
  /** `task_state` `deleting`, then `ERROR` with a fault (Nova's terminate exception path). One-shot. */
  | 'error'
  /** `task_state` `deleting` forever (a stuck compute host). Sticky until changed. */
  | 'never'
  /** The DELETE is answered 204 and then lost: nothing changes. One-shot. */
  | 'ignore';

/** Options of {@link FakeNova.start}. Every duration is in milliseconds. */
export interface FakeNovaOptions {
  /** TCP port on 127.0.0.1. Default `0`: a free port. */
  port?: number;
  /** The project (tenant) id. Default `'demo'`. */
  projectId?: string;
  /** `cores` quota. Default 20; `-1` = unlimited (Nova `[quota] cores`). */
  maxTotalCores?: number;
  /** `instances` quota. Default 10; `-1` = unlimited. */
  maxTotalInstances?: number;
  /** `ram` quota in MiB. Default 51200; `-1` = unlimited. */
  maxTotalRAMSize?: number;
  /** Flavors. Default `'1'` m1.tiny (1 vCPU, 512 MiB), `'2'` m1.small (2, 2048), `'3'` m1.medium (4, 4096). */
  flavors?: FakeFlavor[];
  /** BUILD -> ACTIVE after this. Default 0 (ACTIVE before the POST is answered). While building, GET shows `BUILD` / `spawning`. */
  buildDelayMs?: number;
  /**
   * The first part of `buildDelayMs`, in ms, during which GET shows `BUILD` / `scheduling` (no
   * `OS-EXT-SRV-ATTR:host`) before `spawning`: in Nova the API answers the POST with the build
   * request in `scheduling`, and nova-compute moves `task_state` on (`networking`,
   * `block_device_mapping`, `spawning`) only after conductor has created the instance in its cell
   * (`nova/conductor/manager.py` `schedule_and_build_instances`). Kept below `buildDelayMs`.
   *
   * Counting follows Nova's legacy counting: during `scheduling` the server is only a build request,
   * which neither the create check nor `/limits` counts, so creates racing in that window are all
   * accepted. At its end conductor creates the instance (it counts from then on) and rechecks the
   * quota (`[quota] recheck_quota = True`): when the project is then over a limit, the servers of
   * that request go to `ERROR` with the recheck fault (code 413, e.g. `Quota exceeded for cores:
   * Requested 2, but already used 8 of 8 cores`) and keep counting until deleted, as Nova's ERROR
   * instances do. A create marked by {@link FakeNova.failCreatesWithQuotaRecheck} goes to ERROR at
   * that moment too. Default 0: no `scheduling` (`spawning` from the start) and a BUILD server
   * counts from its POST; a create marked to fail the recheck then stays `scheduling` until its
   * `ERROR` at the end of `buildDelayMs`.
   */
  schedulingDelayMs?: number;
  /** DELETE sets `task_state` `deleting` (status unchanged) and the compute side finishes after this. Default 0. */
  deleteDelayMs?: number;
  /**
   * How long GET shows `status` `DELETED` (`vm_state` `deleted`, `task_state` null) before the 404,
   * in ms: a fixed number, or a function of the number of deletes in flight when the server reaches
   * `DELETED` (this one included; `deleting` and `DELETED` servers not yet destroyed). During the
   * window the server still counts in usage (`/limits`, quota-set `in_use`, the create check) and
   * still appears in plain listings; `changes-since` listings keep showing it as `DELETED` after the
   * 404 too. A function's result is kept within 0 to 2147483647 (NaN or negative = 0).
   *
   * @default {@link realNovaDeletedWindowMs}: `50 + 300 * (inFlightDeletes - 1)` ms, as real Nova
   *   (20 to 100 ms for one delete; median 7 s, up to 12 s, for 40 at once). Pass `0` for a fake
   *   whose deletes finish in the same step as the DELETE (with `deleteDelayMs` 0: 404 as soon as
   *   the 204 arrives).
   */
  deletedWindowMs?: number | ((inFlightDeletes: number) => number);
  /**
   * `OS-EXT-STS:task_state` of a server whose delete failed into `ERROR` (delete behaviour `error`).
   * Real Nova leaves `deleting`: `terminate_instance` is not wrapped in `reverts_task_state` and its
   * failure path sets only `vm_state` ERROR (`nova/compute/manager.py`
   * `_set_instance_obj_error_state` without `clean_task_state`), so a waiter that keeps waiting
   * while `task_state` is `deleting` never sees the failure. `null` clears it.
   *
   * @default null
   */
  terminateErrorTaskState?: 'deleting' | null;
  /** Model `reclaim_instance_interval > 0`: DELETE soft-deletes (`SOFT_DELETED`); a server never ACTIVE is hard-deleted. Default false. */
  softDelete?: boolean;
  /**
   * With `softDelete`: a SOFT_DELETED server is reclaimed (destroyed, GET 404) this long after its soft
   * delete, as Nova's `_reclaim_queued_deletes` periodic task does. Default 0 = never reclaimed.
   */
  reclaimIntervalMs?: number;
  /** Reported usage (`/limits`, quota detail) keeps counting a destroyed server for this long. Default 0. */
  quotaLagMs?: number;
  /**
   * When set, a request whose `X-Auth-Token` is missing or fails gets keystonemiddleware's 401
   * (`{"error": {...}}` plus `WWW-Authenticate`). Without it any token (or none) is accepted, as noauth2.
   * A function of the token that returns true to accept it, e.g. `(token) => keystone.isValid(token)`
   * with `FakeKeystone`; anything else (`true`, a token string) is refused by `FakeNova.start`
   * with a `ValidationError` that says so.
   */
  validateToken?: (token: string) => boolean;
  /** The `uri` of the `WWW-Authenticate: Keystone uri="..."` header on a 401. Default `'http://127.0.0.1:5000/'`. */
  keystoneUri?: string;
  /** Nova's `[api] max_limit`: the largest page of a listing. Default 1000. */
  pageSize?: number;
  /** Lowest accepted microversion, `'2.1'` form. Default `'2.1'`. */
  minMicroversion?: string;
  /** Highest accepted microversion. Default `'2.93'` (Zed). */
  maxMicroversion?: string;
}

/** One request the fake received, in arrival order. */
export interface RecordedRequest {
  /** HTTP method, upper case. */
  method: string;
  /** Path without the `/v2.1` prefix (and without a project id segment), e.g. `/servers/abc`, `/limits`. */
  path: string;
  /** Query parameters (the last value wins for repeated names). */
  query: Record<string, string>;
  /** Arrival time, epoch milliseconds. */
  timeMs: number;
  /** Status sent; 0 while pending, for a hung request or a reset socket. */
  status: number;
  /** The server the request was about (path id, or the created server of a POST /servers). */
  serverId?: string;
}

/** A fault to inject (see {@link FakeNova.inject}). */
export interface FaultSpec {
  /** HTTP method to match, any case. Default: any method. */
  method?: string;
  /** Matched against the path without `/v2.1`: a string must be equal, a RegExp must match. */
  path: string | RegExp;
  /** Answer with this status instead of the real handler. Without it the request passes through (after `delayMs`). */
  status?: number;
  /** Body: an object is sent as JSON, a string as is. Default for an error status: Nova's fault envelope. */
  body?: unknown;
  /** Extra response headers (override the defaults, e.g. `Content-Type`, `Retry-After`). */
  headers?: Record<string, string>;
  /** Wait this long before answering (or before passing through). */
  delayMs?: number;
  /** Never answer: the socket stays open until the client gives up or {@link FakeNova.close}. */
  hang?: boolean;
  /** Destroy the socket without an answer (the client sees ECONNRESET / "socket hang up"). */
  reset?: boolean;
  /** How many matching requests it applies to. Default 1; `Infinity` allowed. */
  times?: number;
  /**
   * Also hand the request to the real handler this long after it arrived, in ms, and drop that
   * answer: a proxy answered (`status`), timed out (`hang`) or cut the connection (`reset`), yet
   * Nova got the request and handles it late (e.g. `POST /servers` creates its server then).
   * Default: never (the request ends at the fault).
   */
  passThroughAfterMs?: number;
}

/** A snapshot of one server's state inside the fake (a copy; changing it changes nothing). */
export interface FakeServerView {
  id: string;
  name: string;
  flavorId: string;
  /** vCPUs of its flavor. */
  vcpus: number;
  /** RAM of its flavor, MiB. */
  ramMiB: number;
  /**
   * RAM of its flavor, MiB: the same number as `ramMiB`, under its old name.
   * @deprecated Use `ramMiB`; `ram` will be removed in a future major version.
   */
  ram: number;
  /** Nova status: `BUILD`, `ACTIVE`, `ERROR`, `DELETED`, `SOFT_DELETED`, `SHUTOFF`, ... */
  status: string;
  /** `OS-EXT-STS:vm_state`. */
  vmState: string;
  /** `OS-EXT-STS:task_state`. */
  taskState: string | null;
  /** `OS-EXT-STS:power_state` (0 NOSTATE, 1 RUNNING, 4 SHUTDOWN). */
  powerState: number;
  metadata: Record<string, string>;
  createdMs: number;
  updatedMs: number;
  /** When it first became ACTIVE, or null. */
  launchedMs: number | null;
  /** When the compute side finished deleting it, or null. */
  terminatedMs: number | null;
  /** `fault.message`, or null. */
  faultMessage: string | null;
  locked: boolean;
  /** See {@link FakeNova.makeGhost}. */
  ghost: boolean;
  /** Whether the server counts toward the TRUE usage right now. */
  counted: boolean;
}

/** Fields {@link FakeNova.addServer} accepts. */
export interface FakeServerInit {
  id: string;
  name: string;
  flavorId: string;
  status: string;
  vmState: string;
  taskState: string | null;
  metadata: Record<string, string>;
  createdMs: number;
  faultMessage: string;
}

/**
 * Quota, usage or drift numbers of a project as {@link FakeNova} reads and takes them: `cores`,
 * `instances` and `ramMiB` (RAM in MiB, the spelling of the guard's needs and claims and of the
 * quota audit). As input (`setQuota`, `setUsageDrift`, `causes.staleUsage`, ...) each member is
 * optional and `ram` is taken for `ramMiB`; giving both with different values is a ValidationError.
 */
export interface FakeUsage {
  cores: number;
  instances: number;
  /** RAM in MiB. */
  ramMiB: number;
  /**
   * RAM in MiB: the same number as `ramMiB`, under its old name (readings have both).
   * @deprecated Use `ramMiB`; `ram` will be removed in a future major version.
   */
  ram: number;
}

/** The fake's own counts: RAM in MiB as `ram`. Internal; {@link FakeUsage} is the public shape. */
export interface UsageCounts {
  cores: number;
  instances: number;
  ram: number;
}
