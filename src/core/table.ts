/**
 * Plain-text tables for the command line: columns padded to their widest cell, two spaces apart.
 *
 * @module
 */

/**
 * `text` with its control characters shown as `\\u001b` escapes, so that text from Nova (a server
 * name any project member chose, a fault message) cannot move the cursor, clear the screen or rewrite
 * earlier lines of an operator's terminal. Newlines and tabs are kept unless `inline`.
 */
export function terminalSafe(text: string, inline = false): string {
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  const re = inline ? /[\u0000-\u001f\u007f-\u009f]/g : /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
  return text.replace(re, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Render rows (the first is the header) as lines with padded columns; trailing spaces trimmed. Cells
 * are {@link terminalSafe} (a newline in a server name cannot break the table either).
 */
export function renderTable(rows: ReadonlyArray<ReadonlyArray<string>>, indent = ''): string {
  const safe = rows.map((row) => row.map((cell) => terminalSafe(cell, true)));
  const widths: number[] = [];
  for (const row of safe) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return safe.map((row) => indent + row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
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
