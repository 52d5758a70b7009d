/**
 * `formatAudit(audit)`: a {@link QuotaAudit} as the plain-text report `nova-guard quota audit`
 * prints: the three readings and the count per resource as a table, servers by status, suspects,
 * ghosts, notes, and the verdict in words. For logs, demos and cron mail.
 *
 * @module
 */
import { formatDuration } from '../core/duration.js';
import { renderTable, terminalSafe } from '../core/table.js';
import type { QuotaAudit, ResourceAudit } from './audit.js';
import { AUDIT_RESOURCES, type AuditResource } from './count.js';

const LABEL: Record<AuditResource, string> = { cores: 'cores', ramMiB: 'ramMiB', instances: 'instances' };

function num(n: number | undefined): string {
  if (n === undefined) return '-';
  return n === Number.POSITIVE_INFINITY ? 'unlimited' : String(n);
}

function drift(r: ResourceAudit): string {
  if (r.drift === null) return '?';
  return r.drift > 0 ? `+${r.drift}` : String(r.drift);
}

/**
 * The human report of an audit (what `quota audit` prints without `--json`), lines joined with `\n`.
 * Control characters in text from Nova (server names, statuses, messages) are shown as `\\u001b`.
 */
export function formatAudit(audit: QuotaAudit): string {
  const out: string[] = [];
  const pages = audit.pages === 1 ? '1 page' : `${audit.pages} pages`;
  const listed = audit.servers.length === 1 ? '1 server' : `${audit.servers.length} servers`;
  out.push(`Quota audit: ${listed} listed (${pages}), ${audit.stable ? 'readings stable' : 'readings CHANGED during the audit'}`);
  out.push('');
  out.push(
    renderTable([
      ['resource', 'reported before', 'counted', 'reported after', 'limit', 'drift', 'verdict'],
      ...AUDIT_RESOURCES.map((res) => {
        const r = audit.resources[res];
        return [LABEL[res], num(r.reportedBefore), String(r.counted), num(r.reportedAfter), num(r.limit), drift(r), r.verdict];
      }),
    ]),
  );
  out.push('');
  const statuses = Object.entries(audit.byStatus);
  out.push(`Servers by status: ${statuses.length ? statuses.map(([s, n]) => `${s} ${n}`).join(', ') : 'none'}`);
  out.push('');
  out.push(`Suspects (not ACTIVE or ERROR, or a task in progress): ${audit.suspects.length || 'none'}`);
  if (audit.suspects.length) {
    out.push(
      renderTable(
        [
          ['id', 'name', 'status', 'task_state', 'age', 'counted', 'why'],
          ...audit.suspects.map((s) => [s.id, s.name ?? '-', s.status, s.taskState ?? '-', formatDuration(s.ageMs), s.counted ? 'yes' : 'no', s.reasons.join(', ')]),
        ],
        '  ',
      ),
    );
  }
  out.push(`Ghosts (listed, but GET answers 404): ${audit.ghostsChecked ? audit.ghosts.length || 'none' : 'not checked'}`);
  if (audit.ghosts.length) {
    out.push(
      renderTable(
        [
          ['id', 'name', 'status', 'cores', 'ramMiB', 'request id'],
          ...audit.ghosts.map((g) => [g.id, g.name ?? '-', g.status, num(g.cores), num(g.ramMiB), g.requestId ?? '-']),
        ],
        '  ',
      ),
    );
  }
  for (const u of audit.uncounted) out.push(`Not counted: server ${u.serverId}: ${u.reason}`);
  if (audit.unscheduled.length) out.push(`Never scheduled (no valid host; no cores or RAM under counting from placement): ${audit.unscheduled.map((s) => s.id).join(', ')}`);
  const fit = audit.countingModel;
  out.push(`Counting model: ${fit.model} (${fit.basis}; resources outside the range: legacy ${fit.misfits.legacy ?? '-'}, placement ${fit.misfits.placement ?? '-'})`);
  out.push(`Findings: ${audit.findings.length || 'none'}`);
  if (audit.findings.length) {
    out.push(
      renderTable(
        [
          ['finding', 'kind', 'servers', 'holds (cores/ramMiB/instances)', 'project can', 'operator can'],
          ...audit.findings.map((f) => [
            f.kind,
            f.transient ? 'transient' : 'persistent',
            f.serverIds.length ? f.serverIds.join(' ') : '-',
            `${f.holds.cores}/${f.holds.ramMiB}/${f.holds.instances}`,
            f.projectCan,
            f.operatorCan || '-',
          ]),
        ],
        '  ',
      ),
    );
    for (const f of audit.findings) out.push(`  ${f.kind}: ${f.evidence}`);
  }
  for (const reason of audit.partialReasons) out.push(`PARTIAL: ${reason}`);
  for (const n of audit.notes) out.push(`Note: ${n}`);
  out.push('');
  out.push(`Verdict: ${audit.verdict}. ${audit.summary}`);
  // Statuses, reasons and notes come from Nova: no control character reaches the terminal.
  return terminalSafe(out.join('\n'));
}

