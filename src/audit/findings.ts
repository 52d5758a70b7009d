/**
 * The findings of a quota audit: each cause of drift typed, with the servers behind it, what they
 * hold under the counting model in use, the evidence, and the remedy (what the project can do, what
 * needs an operator). Plain functions on plain data, used by {@link auditQuota}. See `docs/audit.md`.
 *
 * @module
 */
import { AUDIT_RESOURCES, addUsage, statusOf, taskStateOf, zeroUsage, type AuditResource, type Usage } from './count.js';
import { deleting, neverScheduled, type Holding } from './model.js';
import { REMEDIES } from '../core/counting.js';
import { ORPHAN_MAPPING_REMEDY, type QuotaFinding, type QuotaFindingKind, type Server } from '../core/types.js';

/** The kinds of finding. */
export type FindingKind = QuotaFindingKind;

/** One cause of drift (the plain shape shared with the delete and guard errors). */
export type Finding = QuotaFinding;

/** What {@link findCauses} needs. */
export interface FindingsInput {
  servers: readonly Server[];
  holdings: readonly Holding[];
  ghostIds: ReadonlySet<string>;
  /** Reported usage above what the listed servers can hold (positive parts only). */
  excess: Partial<Record<AuditResource, number>>;
  /** A server not the caller's (its `ownedBy` said no). */
  foreign: (s: Server) => boolean;
  /** Epoch ms now, how long a delete may take before it is stuck, and how long a build may. */
  nowMs: number;
  stuckAfterMs: number;
  stuckBuildAfterMs: number;
  /** The listing could not show servers of a down cell (Nova below 2.69). */
  downCellsInvisible: boolean;
  model: string;
}

/** Time since the server's `updated` (or, with `field: 'created'`, its `created`), ms; undefined without a valid time. */
function ageOf(s: Server, nowMs: number, field: 'updated' | 'created' = 'updated'): number | undefined {
  const v = s[field];
  const t = typeof v === 'string' ? Date.parse(v) : Number.NaN;
  return Number.isFinite(t) ? Math.max(0, nowMs - t) : undefined;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The findings, in a fixed order of kinds; kinds with nothing behind them are left out. */
export function findCauses(input: FindingsInput): Finding[] {
  const { servers, holdings } = input;
  const groups = new Map<ServerKind, number[]>();
  const put = (k: ServerKind, i: number): void => {
    groups.set(k, [...(groups.get(k) ?? []), i]);
  };
  servers.forEach((s, i) => {
    const status = statusOf(s);
    if (input.ghostIds.has(s.id)) put('orphan-mapping', i);
    else if (deleting(s)) put((ageOf(s, input.nowMs) ?? 0) >= input.stuckAfterMs ? 'stuck-deleting' : 'delete-in-flight', i);
    // Nova's own bound (`[compute] instance_build_timeout`) counts from the instance's created_at.
    else if (status === 'BUILD') put((ageOf(s, input.nowMs, 'created') ?? 0) >= input.stuckBuildAfterMs ? 'stuck-build' : 'build-in-flight', i);
    else if (status === 'UNKNOWN') put('down-cell', i);
    else if (neverScheduled(s)) put('never-scheduled', i);
    else if (status === 'VERIFY_RESIZE') put('resize-double', i);
    else if (status === 'SHELVED_OFFLOADED' || status === 'SHELVED') put('shelved', i);
    if (input.foreign(s)) put('foreign-usage', i);
  });
  const held = (idx: number[]): Usage => {
    const u = zeroUsage();
    for (const i of idx) addUsage(u, holdings[i]!.min);
    return u;
  };
  const out: Finding[] = [];
  for (const kind of ORDER) {
    const idx = groups.get(kind);
    if (!idx) continue;
    const ids = idx.map((i) => servers[i]!.id);
    const r = REMEDY[kind];
    out.push({
      kind,
      transient: r.transient,
      needsOperator: r.needsOperator,
      serverIds: ids,
      holds: held(idx),
      evidence: r.evidence(idx.map((i) => servers[i]!), input),
      projectCan: r.project,
      operatorCan: r.operator,
    });
  }
  if (input.downCellsInvisible) {
    out.push({
      kind: 'down-cell',
      transient: false,
      // A limit of the listing (Nova before 2.69), not evidence of a cell that does not answer.
      needsOperator: false,
      serverIds: [],
      holds: zeroUsage(),
      evidence: 'Nova does not support microversion 2.69: servers of a cell that does not answer are left out of the listing, so the audit cannot tell whether any are missing',
      projectCan: REMEDY['down-cell'].project,
      operatorCan: REMEDY['down-cell'].operator,
    });
  }
  const excess = zeroUsage();
  for (const res of AUDIT_RESOURCES) excess[res] = Math.max(0, input.excess[res] ?? 0);
  if (AUDIT_RESOURCES.some((res) => excess[res] > 0)) {
    const parts = AUDIT_RESOURCES.filter((res) => excess[res] > 0).map((res) => `${res} ${excess[res]}`);
    const allocationOnly = excess.instances === 0 && input.model !== 'legacy';
    out.push({
      kind: 'stale-usage',
      transient: false,
      needsOperator: true,
      serverIds: [],
      holds: excess,
      evidence:
        `Nova reports more than every listed server can hold under ${input.model} counting (${parts.join(', ')}): usage with no server behind it` +
        (allocationOnly ? ' (cores and RAM only: likely allocations placement kept for servers that are gone)' : ''),
      projectCan: REMEDIES['stale-usage'].projectCan,
      operatorCan: allocationOnly
        ? '`nova-manage placement audit --delete` (orphaned allocations), then `nova-manage placement heal_allocations`'
        : REMEDIES['stale-usage'].operatorCan,
    });
  }
  return out;
}

type ServerKind = Exclude<FindingKind, 'stale-usage' | 'leaked-allocation'>;

const ORDER: readonly ServerKind[] = ['build-in-flight', 'stuck-build', 'delete-in-flight', 'stuck-deleting', 'orphan-mapping', 'never-scheduled', 'resize-double', 'shelved', 'down-cell', 'foreign-usage'];

interface Remedy {
  transient: boolean;
  /** Only an operator can end it (see `QuotaFinding.needsOperator`). */
  needsOperator: boolean;
  evidence: (servers: Server[], input: FindingsInput) => string;
  project: string;
  operator: string;
}

const REMEDY: Record<ServerKind, Remedy> = {
  'build-in-flight': {
    transient: true,
    needsOperator: false,
    evidence: (s) => `${plural(s.length, 'server is', 'servers are')} in BUILD: Nova counts each once it is placed`,
    project: 'wait; a server in BUILD for long can be deleted',
    operator: '',
  },
  'stuck-build': {
    transient: false,
    needsOperator: true,
    evidence: (s, i) =>
      `${plural(s.length, 'server has', 'servers have')} been in BUILD for longer than ${Math.round(i.stuckBuildAfterMs / 1000)} s since ${s.length === 1 ? 'its' : 'their'} creation (${s.map((x) => `${x.id}${taskStateOf(x) ? ` ${taskStateOf(x)}` : ''}`).join(', ')}): stuck, not under way; ${s.length === 1 ? 'it holds' : 'they hold'} quota`,
    project: 'delete it (a delete of a BUILD server is allowed); create again',
    operator:
      'find why the build did not finish (`openstack server event list <id>`, the nova-conductor and nova-compute logs of its request id); `[compute] instance_build_timeout` puts such builds in ERROR',
  },
  'delete-in-flight': {
    transient: true,
    needsOperator: false,
    evidence: (s) => `${plural(s.length, 'server is', 'servers are')} being deleted (status DELETED or task_state deleting): counted until the host finishes`,
    project: 'wait',
    operator: '',
  },
  'stuck-deleting': {
    transient: false,
    needsOperator: true,
    evidence: (s, i) =>
      `${plural(s.length, 'server has', 'servers have')} been deleting for longer than ${Math.round(i.stuckAfterMs / 1000)} s (${s.map((x) => `${x.id} ${statusOf(x)}${taskStateOf(x) ? `/${taskStateOf(x)}` : ''}`).join(', ')}): the record still holds its quota`,
    project: REMEDIES['stuck-deleting'].projectCan,
    operator: REMEDIES['stuck-deleting'].operatorCan,
  },
  'orphan-mapping': {
    transient: false,
    needsOperator: true,
    evidence: (s) => `${plural(s.length, 'listed server answers', 'listed servers answer')} 404 on ${s.length === 1 ? 'its' : 'their'} own GET: an instance mapping without a reachable instance`,
    project: ORPHAN_MAPPING_REMEDY.projectCan,
    operator: ORPHAN_MAPPING_REMEDY.operatorCan,
  },
  'never-scheduled': {
    transient: false,
    needsOperator: false,
    evidence: (s) => `${plural(s.length, 'server', 'servers')} in ERROR with "No valid host was found" (cell0): an instance always, cores and RAM under legacy counting`,
    project: 'delete it (a capacity problem, not quota); retry later',
    operator: '',
  },
  'resize-double': {
    transient: false,
    needsOperator: false,
    evidence: (s) => `${plural(s.length, 'server waits', 'servers wait')} in VERIFY_RESIZE: counting from placement holds the old and the new flavor`,
    project: 'confirm or revert the resize (`openstack server resize confirm|revert`)',
    operator: '`[DEFAULT] resize_confirm_window` confirms resizes automatically',
  },
  shelved: {
    transient: false,
    needsOperator: false,
    evidence: (s) => `${plural(s.length, 'server is', 'servers are')} shelved: an instance always, cores and RAM under legacy counting`,
    project: 'unshelve or delete it',
    operator: '',
  },
  'down-cell': {
    transient: false,
    needsOperator: true,
    evidence: (s) => `${plural(s.length, 'listed server has', 'listed servers have')} status UNKNOWN: a cell does not answer (the audit is partial)`,
    project: REMEDIES['down-cell'].projectCan,
    operator: REMEDIES['down-cell'].operatorCan,
  },
  'foreign-usage': {
    transient: false,
    needsOperator: false,
    evidence: (s) => `${plural(s.length, 'server', 'servers')} of the project that the caller's filter leaves out hold quota too`,
    project: 'delete them if they are leftovers, or count them in the quota you plan for',
    operator: '',
  },
};
