/**
 * The verdict of a quota audit, per resource and overall, and the sentence that says what it means.
 * Plain functions on plain data; used by {@link auditQuota}.
 *
 * @module
 */
import type { AuditResource, Usage } from './count.js';
import type { AuditVerdict, ResourceAudit } from './types.js';
import { AUDIT_RESOURCES } from './count.js';

/** What `describeAudit` needs. Each resource's `drift` and `verdict` are filled in by it. */
export interface VerdictInput {
  resources: Record<AuditResource, ResourceAudit>;
  /** Both reported readings agree. */
  stable: boolean;
  /** Number of listed servers. */
  serverCount: number;
  /** Some flavors could not be read: counted cores and RAM are a lower bound. */
  countIncomplete: boolean;
  /** Number of ghosts found. */
  ghosts: number;
  /**
   * The part of the count Nova may rightly leave out (servers of a cell that does not answer; cores
   * and RAM of servers never scheduled under counting from placement): not under-reporting. Default zero.
   */
  mayBeUncounted?: Usage | undefined;
  /**
   * The part Nova may rightly count above the listed flavors under the counting model in use (the old
   * flavor of a VERIFY_RESIZE server under counting from placement; `Infinity` when its size is
   * unknown): not over-reporting. Default zero.
   */
  mayBeExtra?: Usage | undefined;
  /** The counting model the audit explains the usage with, for the summary. */
  model?: string | undefined;
  /** Why the audit is partial (it could not see everything); appended to the summary. Default none. */
  partialReasons?: readonly string[] | undefined;
}

/**
 * One resource's verdict: `inconclusive` when a reading is missing, the readings differ, or (cores,
 * RAM) the count is incomplete; `over-reported` when reported > counted + mayBeExtra; `under-reported` when
 * reported < counted − countedInBuild − mayBeUncounted (a BUILD server may not have an instance row
 * yet, so Nova may rightly not count it; see {@link VerdictInput.mayBeUncounted}); `consistent` otherwise.
 */
export function resourceVerdict(
  r: ResourceAudit,
  resource: AuditResource,
  countIncomplete: boolean,
  mayBeUncounted = 0,
  mayBeExtra = 0,
): { verdict: AuditVerdict; drift: number | null } {
  const { reportedBefore: before, reportedAfter: after } = r;
  if (before === undefined || after === undefined || before !== after) return { verdict: 'inconclusive', drift: null };
  if (countIncomplete && resource !== 'instances') return { verdict: 'inconclusive', drift: null };
  const drift = before - r.counted;
  if (drift > mayBeExtra) return { verdict: 'over-reported', drift };
  if (before < r.counted - r.countedInBuild - mayBeUncounted) return { verdict: 'under-reported', drift };
  return { verdict: 'consistent', drift };
}

const UNIT: Record<AuditResource, (n: number) => string> = {
  cores: (n) => `${n} ${n === 1 ? 'core' : 'cores'}`,
  ramMiB: (n) => `${n} MiB RAM`,
  instances: (n) => `${n} ${n === 1 ? 'instance' : 'instances'}`,
};

function list(parts: string[]): string {
  if (parts.length <= 1) return parts.join('');
  return `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`;
}

function servers(n: number): string {
  return `${n} listed ${n === 1 ? 'server' : 'servers'}`;
}

function hold(n: number): string {
  return `${servers(n)} ${n === 1 ? 'holds' : 'hold'}`;
}

/**
 * Fill in each resource's `drift` and `verdict` (mutates `input.resources`) and return the overall
 * verdict with a sentence. Overall: `inconclusive` when the readings differ; else `over-reported` when
 * any resource is over-reported (the harmful case: it blocks creates), else `under-reported` when any
 * is under-reported, else `inconclusive` when any resource could not be judged, else `consistent`.
 */
export function describeAudit(input: VerdictInput): { verdict: AuditVerdict; summary: string } {
  const described = describe(input);
  const partial = input.partialReasons ?? [];
  if (partial.length === 0) return described;
  return { verdict: described.verdict, summary: `${described.summary} Partial audit: ${partial.join('; ')}.` };
}

function describe(input: VerdictInput): { verdict: AuditVerdict; summary: string } {
  const { resources } = input;
  for (const res of AUDIT_RESOURCES) {
    Object.assign(resources[res], resourceVerdict(resources[res], res, input.countIncomplete, input.mayBeUncounted?.[res] ?? 0, input.mayBeExtra?.[res] ?? 0));
  }
  const ofVerdict = (v: AuditVerdict): AuditResource[] => AUDIT_RESOURCES.filter((r) => resources[r].verdict === v);
  const ghostNote =
    input.ghosts > 0
      ? ` ${input.ghosts} listed ${input.ghosts === 1 ? 'server answers' : 'servers answer'} 404 on ${input.ghosts === 1 ? 'its' : 'their'} own GET (ghosts).`
      : '';

  if (!input.stable) {
    const changed = AUDIT_RESOURCES.filter((r) => resources[r].reportedBefore !== resources[r].reportedAfter).map(
      (r) => `${r} ${String(resources[r].reportedBefore)} → ${String(resources[r].reportedAfter)}`,
    );
    const what = changed.length > 0 ? ` (${changed.join(', ')})` : ' (quota-set detail)';
    return {
      verdict: 'inconclusive',
      summary:
        `Reported usage changed while the servers were listed${what}: servers were created or deleted during the audit, ` +
        `so the count cannot be compared; run it again when the fleet is quiet.${ghostNote}`,
    };
  }
  const over = ofVerdict('over-reported');
  const under = ofVerdict('under-reported');
  const diff = (r: AuditResource): string => `${UNIT[r](resources[r].reportedBefore!)} reported, ${resources[r].counted} counted`;
  if (over.length > 0) {
    const extra = list(over.map((r) => UNIT[r](resources[r].drift!)));
    return {
      verdict: 'over-reported',
      summary:
        `Nova reports ${extra} more than the ${hold(input.serverCount)} (${over.map(diff).join('; ')}): ` +
        `that quota is held by nothing the listing shows, and blocks creates until the usage is corrected.` +
        (under.length > 0 ? ` It also reports less ${list(under)} than counted.` : '') +
        ghostNote,
    };
  }
  if (under.length > 0) {
    const missing = list(under.map((r) => UNIT[r](-resources[r].drift!)));
    return {
      verdict: 'under-reported',
      summary:
        `Nova reports ${missing} less than the ${hold(input.serverCount)} (${under.map(diff).join('; ')}): ` +
        `servers it does not count (a cell that is down, placement counting) make room appear that the cloud may not have.` +
        ghostNote,
    };
  }
  const unknown = ofVerdict('inconclusive');
  if (unknown.length > 0) {
    const why = input.countIncomplete ? 'some flavors could not be read' : 'Nova did not report them';
    return {
      verdict: 'inconclusive',
      summary: `Usage of ${list(unknown)} could not be compared (${why}); the rest matches the ${servers(input.serverCount)}.${ghostNote}`,
    };
  }
  const build = AUDIT_RESOURCES.filter((r) => resources[r].drift! < 0);
  const onlyBuild = AUDIT_RESOURCES.every((r) => (input.mayBeUncounted?.[r] ?? 0) === 0);
  const buildNote =
    build.length === 0
      ? ''
      : onlyBuild
        ? ` Servers in BUILD hold ${list(build.map((r) => UNIT[r](-resources[r].drift!)))} that Nova does not count yet (normal until their instance rows exist).`
        : ` Nova does not count ${list(build.map((r) => UNIT[r](-resources[r].drift!)))} of the listed servers: servers in BUILD, ` +
          `servers never scheduled (no valid host: no cores or RAM under counting from placement) or in a cell that does not answer.`;
  const extra = AUDIT_RESOURCES.filter((r) => resources[r].drift! > 0);
  const extraNote =
    extra.length === 0
      ? ''
      : ` Nova counts ${list(extra.map((r) => UNIT[r](resources[r].drift!)))} more than the listed flavors, as ${input.model ?? 'its'} counting does (see the findings).`;
  return {
    verdict: 'consistent',
    summary:
      `Reported usage matches the ${servers(input.serverCount)}: ${list(AUDIT_RESOURCES.map((r) => UNIT[r](resources[r].reportedBefore!)))}.` +
      buildNote +
      extraNote +
      ghostNote,
  };
}
