/**
 * Markdown tables and target lines of the benchmarks.
 *
 * @module
 */

/** A markdown table from a header and rows of cells. */
export function markdownTable(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'number' ? formatNumber(c) : c)));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => String(r[i] ?? '').length)));
  const line = (r: readonly string[]): string => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map((r) => line(r.map(String)))].join('\n');
}

/** A number for a table: integers as is, others with 2 significant decimals. */
export function formatNumber(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x)) return String(x);
  if (Math.abs(x) >= 100) return x.toFixed(0);
  if (Math.abs(x) >= 10) return x.toFixed(1);
  if (Math.abs(x) >= 0.1) return x.toFixed(2);
  return x.toPrecision(2);
}

/** One target: what it asks, what was measured, and whether it held. */
export interface TargetResult {
  target: string;
  measured: string;
  held: boolean;
  /** Why it was missed, when it was. */
  reason?: string;
  /** Set when this run did not measure the target (a quick run's smaller size): why, and which run does. */
  skipped?: string;
}

/** `held:` / `MISSED:` / `not run:` lines. */
export function formatTargets(targets: readonly TargetResult[]): string {
  return targets
    .map((t) =>
      t.skipped !== undefined
        ? `- not run: ${t.target} — ${t.skipped}`
        : `- ${t.held ? 'held' : 'MISSED'}: ${t.target} — measured ${t.measured}${!t.held && t.reason ? ` (${t.reason})` : ''}`,
    )
    .join('\n');
}
