/**
 * Plain data shapes of the Nova compute API v2.1 that nova-guard reads and returns.
 *
 * Field names are spelled as Nova spells them (Nova API reference, "Servers", "Flavors", "Limits",
 * "Quota sets"). Only the fields nova-guard uses are typed; every object keeps Nova's other fields.
 *
 * @module
 */

/** A server as Nova returns it from `GET /servers/{id}` or `GET /servers/detail`. */
export interface Server {
  /** Server UUID. */
  id: string;
  /** Server name. */
  name?: string;
  /** Nova status: `BUILD`, `ACTIVE`, `ERROR`, `SHUTOFF`, `DELETED`, `SOFT_DELETED`, ... */
  status?: string;
  /** `OS-EXT-STS:task_state`, e.g. `deleting`, `spawning`, or `null` when no task runs. */
  'OS-EXT-STS:task_state'?: string | null;
  /** `OS-EXT-STS:vm_state`, e.g. `active`, `error`, `deleted`, `soft-delete`. */
  'OS-EXT-STS:vm_state'?: string | null;
  /** Build or migration progress, 0 to 100, present only for some statuses. */
  progress?: number;
  /** The flavor: `{ id }` before microversion 2.47, the embedded flavor (vcpus, ram, ...) from 2.47. */
  flavor?: ServerFlavorRef;
  /** Fault of a server in ERROR: Nova's message and code. */
  fault?: { code?: number; message?: string; details?: string; created?: string };
  /** ISO 8601 creation time. */
  created?: string;
  /** ISO 8601 time of the last change. */
  updated?: string;
  /** Metadata key/value pairs. */
  metadata?: Record<string, string>;
  /** Project (tenant) id. */
  tenant_id?: string;
  /** Any other field Nova returns. */
  [key: string]: unknown;
}

/** The `flavor` member of a server: a reference (`id`) or, from microversion 2.47, the flavor itself. */
export interface ServerFlavorRef {
  id?: string;
  /** From microversion 2.47: number of vCPUs. */
  vcpus?: number;
  /** From microversion 2.47: RAM in MiB. */
  ram?: number;
  /** From microversion 2.47: the flavor's name. */
  original_name?: string;
  [key: string]: unknown;
}

/** A flavor as returned by `GET /flavors/{id}` (Nova API reference, "Flavors"). */
export interface Flavor {
  id: string;
  name?: string;
  /** Number of virtual CPUs; counts toward the `cores` quota. */
  vcpus: number;
  /** RAM in MiB; counts toward the `ram` quota. */
  ram: number;
  /** Root disk in GiB. */
  disk?: number;
  [key: string]: unknown;
}

/**
 * The `server` member of a `POST /servers` request body (Nova API reference, "Create Server").
 * `flavorRef` and `imageRef` are ids (or URLs); `networks` is a list, or `"none"`/`"auto"` from 2.37.
 */
export interface CreateServerBody {
  name: string;
  flavorRef: string;
  imageRef?: string;
  networks?: 'none' | 'auto' | Array<Record<string, unknown>>;
  metadata?: Record<string, string>;
  min_count?: number;
  max_count?: number;
  [key: string]: unknown;
}

/**
 * The `absolute` block of `GET /limits`, parsed. `-1` (unlimited) becomes `Infinity`; a missing or
 * non-numeric field becomes `undefined`, never `NaN` (Nova API reference, "Limits").
 */
export interface AbsoluteLimits {
  /** Core (vCPU) quota of the project. */
  maxTotalCores?: number;
  /** Instance quota of the project. */
  maxTotalInstances?: number;
  /** RAM quota of the project, in MiB. */
  maxTotalRAMSize?: number;
  maxTotalKeypairs?: number;
  maxServerMeta?: number;
  maxServerGroups?: number;
  maxServerGroupMembers?: number;
  /** Cores Nova counts as used. */
  totalCoresUsed?: number;
  /** Instances Nova counts as used. */
  totalInstancesUsed?: number;
  /** RAM Nova counts as used, in MiB. */
  totalRAMUsed?: number;
  totalServerGroupsUsed?: number;
  /** Any other numeric field of the block, parsed the same way. */
  [key: string]: number | undefined;
}

/** Result of {@link NovaClient.getLimits}. */
export interface Limits {
  absolute: AbsoluteLimits;
  /** `x-openstack-request-id` of the response. */
  requestId?: string;
  /** Nova's `Date` header as epoch milliseconds, when present. */
  serverDateMs?: number;
}

/** One resource of `GET /os-quota-sets/{project_id}/detail`; `limit` -1 becomes `Infinity`. */
export interface QuotaDetailItem {
  in_use?: number;
  limit?: number;
  reserved?: number;
}

/** Result of {@link NovaClient.getQuotaSetDetail}: resource name to its detail. */
export interface QuotaSetDetail {
  id?: string;
  cores?: QuotaDetailItem;
  instances?: QuotaDetailItem;
  ram?: QuotaDetailItem;
  [resource: string]: QuotaDetailItem | string | undefined;
}

/**
 * Nova's names of the three quota resources a server create is checked against, in Nova's
 * (alphabetical) order: the keys of `GET /os-quota-sets/{project_id}/detail` and the names in a quota
 * message (Nova API reference, "Quota Sets"). Records *per resource* (headroom, an audit's resources,
 * a `QuotaExceededError`'s resources) are keyed or named by these.
 */
export type QuotaResourceName = 'cores' | 'instances' | 'ram';

/**
 * Amounts of the three quota resources: what a create needs, what servers use, what is claimed.
 * One vocabulary across the guard and the audit: `cores` (vCPUs), `ramMiB` (RAM in MiB, Nova's
 * `ram` resource) and `instances` (servers).
 */
export interface ResourceAmounts {
  /** vCPUs (Nova's `cores` quota; a flavor's `vcpus`). */
  cores: number;
  /** RAM in MiB (Nova's `ram` quota; a flavor's `ram`). */
  ramMiB: number;
  /** Servers (Nova's `instances` quota). */
  instances: number;
}

/** The kinds of quota finding (see `docs/audit.md`): why Nova's usage differs from what the servers hold. */
export type QuotaFindingKind =
  | 'build-in-flight'
  | 'stuck-build'
  | 'delete-in-flight'
  | 'stuck-deleting'
  | 'orphan-mapping'
  | 'never-scheduled'
  | 'resize-double'
  | 'shelved'
  | 'down-cell'
  | 'leaked-allocation'
  | 'stale-usage'
  | 'foreign-usage';

/**
 * One cause of quota drift, as plain data: what the audit reports, what a delete that cannot end
 * carries (`OrphanedServerError.finding`) and what the guard's `QuotaWaitTimeoutError.finding` says.
 */
export interface QuotaFinding {
  kind: QuotaFindingKind;
  /** True when it settles by itself (a build or delete under way); false when it stays until someone acts. */
  transient: boolean;
  /**
   * True when only an operator (cloud admin) can end it: the project cannot free that quota itself
   * (`orphan-mapping`, `stuck-deleting`, `stuck-build`, `down-cell`, `stale-usage`,
   * `leaked-allocation`). `nova-guard quota audit` exits 5 on such a finding.
   */
  needsOperator: boolean;
  /** The servers behind it (empty for usage with no server behind it). */
  serverIds: string[];
  /** What it holds (for usage with no server: the unexplained part): `cores`, `ramMiB`, `instances`. */
  holds: ResourceAmounts;
  /** What was seen, in words. */
  evidence: string;
  /** What the project can do itself. */
  projectCan: string;
  /** What needs an operator (cloud admin), or `''` when nothing does. */
  operatorCan: string;
}

/** The remedy of an orphaned instance mapping (a listed server whose own GET answers 404). */
export const ORPHAN_MAPPING_REMEDY = {
  projectCan: 'nothing that helps: its DELETE answers 404 as well; ask an operator',
  operatorCan:
    'fix the cell mapping (`nova-manage cell_v2 verify_instance --uuid <id>`, `nova-manage cell_v2 map_instances`), then delete the server; or remove the stale mapping',
} as const;
