/**
 * Plain-text tables for the command line: columns padded to their widest cell, two spaces apart.
 *
 * @module
 */

/** Render rows (the first is the header) as lines with padded columns; trailing spaces trimmed. */
export function renderTable(rows: ReadonlyArray<ReadonlyArray<string>>, indent = ''): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => indent + row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

/** A JSON.stringify replacer: `Infinity` (unlimited) becomes Nova's `-1`; errors become `{name, message}` plus their own fields. */
export function jsonReplacer(_key: string, value: unknown): unknown {
  if (value === Number.POSITIVE_INFINITY) return -1;
  if (value instanceof Error) {
    const own = Object.fromEntries(Object.entries(value).filter(([k]) => k !== 'cause'));
    return { ...own, name: value.name, message: value.message };
  }
  return value;
}
