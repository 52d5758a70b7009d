/**
 * Output formats like the `openstack` command's (cliff's formatters): `-f table|json|value|yaml`,
 * and for lists `-f csv` with `--quote`; `-c COLUMN` (repeatable), `--noindent` (json) and
 * `--max-width` (table).
 *
 * - A list (cliff `Lister`) is a header row and rows. `table` draws a bordered table (numbers right-,
 *   text left-aligned, like cliff's `TableFormatter`); `json` is a list of objects keyed by the
 *   column headers (indent 2, or one line with `--noindent`, as Python's `json.dumps(indent=None)`
 *   writes it); `value` prints each row's values separated by spaces; `yaml` is a list of mappings
 *   with sorted keys (PyYAML's `safe_dump` default); `csv` is a header line and one line per row,
 *   RFC 4180 quoting ({@link csvLine}: by default every field but numbers quoted, as cliff's
 *   `--quote nonnumeric`).
 * - One object (cliff `ShowOne`) is a `Field`/`Value` table; `json` and `yaml` an object; `value` one
 *   value a line; `shell` (where the command offers it) `NAME="value"` lines, for `eval` in a shell.
 * - `-c` keeps the named columns (or fields) in the order the command has them; names that are not
 *   columns are ignored, and when none is a column the command fails (exit 1) naming the columns,
 *   as cliff's `_generate_columns_and_selector` does.
 *
 * @module
 */
import { Option, type Command } from 'commander';
import { stringify } from 'yaml';
import { terminalSafe } from '../core/table.js';
import { parseIntFlag } from './common.js';

/** A cell: numbers stay numbers in json/yaml. */
export type Cell = string | number | boolean | null;

/** A number of Nova's as a cell: unlimited as -1 (as Nova writes it), unknown as null. */
export const limitCell = (n: number | null | undefined): Cell => (n === undefined ? null : n === Number.POSITIVE_INFINITY ? -1 : n);

/** The format flags of a command. */
export interface FormatFlags {
  format?: string;
  column?: string[];
  noindent?: boolean;
  maxWidth?: string;
  /** `-f shell`'s variable name prefix (`--prefix`). */
  prefix?: string;
  /** `-f csv`'s quoting (`--quote`): see {@link CsvQuote}. */
  quote?: string;
}

/**
 * When `-f csv` quotes a field (cliff's `--quote`, Python's `csv.QUOTE_*`): `nonnumeric` (the
 * default) every field but numbers; `all` every field; `minimal` only a field that must be (it
 * holds a `,`, a `"`, a CR or a LF); `none` none (such a field is still quoted: RFC 4180 has no
 * other way to keep it one field).
 */
export type CsvQuote = 'all' | 'minimal' | 'none' | 'nonnumeric';

/** The `--quote` choices of `-f csv`. */
export const CSV_QUOTES: readonly CsvQuote[] = ['all', 'minimal', 'none', 'nonnumeric'];

/**
 * One CSV line (RFC 4180): fields separated by `,`; a quoted field is wrapped in `"` with each `"`
 * doubled. A field that holds a `,`, a `"`, a CR or a LF is always quoted; otherwise `quote` says
 * (see {@link CsvQuote}); null is an empty field (quoted with `all`). Control characters other than
 * tab, CR and LF are shown as `\u001b` escapes ({@link terminalSafe}).
 */
export function csvLine(cells: readonly Cell[], quote: CsvQuote = 'nonnumeric'): string {
  return cells
    .map((c) => {
      const v = c === null ? '' : terminalSafe(String(c));
      const must = /[",\r\n]/.test(v);
      const wanted = quote === 'all' || (quote === 'nonnumeric' && c !== null && typeof c !== 'number');
      return must || wanted ? `"${v.replace(/"/g, '""')}"` : v;
    })
    .join(',');
}

/**
 * Add `-f`, `-c`, `--noindent` and `--max-width` to a command; with `options.shell` (one object,
 * cliff `ShowOne`) also `-f shell` and `--prefix`; without it (a list, cliff `Lister`) also `-f csv`
 * and `--quote`.
 */
export function addFormatOptions(cmd: Command, options: { shell?: boolean } = {}): Command {
  if (options.shell) cmd.option('--prefix <prefix>', 'add a prefix to all variable names (-f shell)', '');
  else cmd.addOption(new Option('--quote <quote>', 'when to include quotes (-f csv)').choices(CSV_QUOTES).default('nonnumeric'));
  return cmd
    .addOption(new Option('-f, --format <format>', 'the output format').choices(['table', 'json', 'value', 'yaml', ...(options.shell ? ['shell'] : ['csv'])]).default('table'))
    .option('-c, --column <column>', 'specify the column(s) to include, can be repeated to show multiple columns', (v: string, prev: string[] = []) => [...prev, v])
    .option('--noindent', 'whether to disable indenting the JSON')
    .option('--max-width <integer>', 'maximum display width, <1 to disable (table)');
}

/** The columns `-c` keeps: their indexes in `headers`. @throws {@link ValidationError} when none matches. */
function selectColumns(headers: readonly string[], wanted: readonly string[] | undefined): number[] {
  if (!wanted || wanted.length === 0) return headers.map((_, i) => i);
  const keep = headers.map((h, i) => (wanted.includes(h) ? i : -1)).filter((i) => i >= 0);
  if (keep.length === 0) {
    throw new ColumnError(`No recognized column names in ${pyList(wanted)}. Recognized columns are ${pyTuple(headers)}.`);
  }
  return keep;
}

/** `-c` named no column: cliff fails with exit 1 (not a usage error). */
export class ColumnError extends Error {}

const pyList = (xs: readonly string[]): string => `[${xs.map((x) => `'${x}'`).join(', ')}]`;
const pyTuple = (xs: readonly string[]): string => `(${xs.map((x) => `'${x}'`).join(', ')}${xs.length === 1 ? ',' : ''})`;

/** JSON as Python's `json.dumps` writes it: `indent=2`, or one line with `", "` and `": "`. */
function pyJson(value: unknown, noindent: boolean | undefined): string {
  if (!noindent) return JSON.stringify(value, null, 2);
  const one = (v: unknown): string => {
    if (Array.isArray(v)) return `[${v.map(one).join(', ')}]`;
    if (v !== null && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${one(x)}`).join(', ')}}`;
    return JSON.stringify(v);
  };
  return one(value);
}

const text = (c: Cell): string => (c === null ? '' : terminalSafe(String(c), true));

/** Split `s` into lines of at most `w` characters (at spaces when it can). */
function wrap(s: string, w: number): string[] {
  if (s.length <= w) return [s];
  const out: string[] = [];
  let rest = s;
  while (rest.length > w) {
    let cut = rest.lastIndexOf(' ', w);
    if (cut <= 0) cut = w;
    out.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  if (rest) out.push(rest);
  return out;
}

/** A bordered table like cliff's (prettytable): `+---+`, `| x |`, numbers right-aligned. */
export function borderedTable(headers: readonly string[], rows: ReadonlyArray<readonly Cell[]>, maxWidth?: number): string {
  const right = headers.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number'));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => text(r[i] ?? null).length)));
  if (maxWidth !== undefined && maxWidth > 0) {
    // Shrink the widest column one character at a time (cliff's `_assign_max_widths` spreads the
    // shortfall over the wide columns); a column is never narrower than 8 or its header.
    const total = (): number => widths.reduce((a, b) => a + b + 3, 1);
    while (total() > maxWidth) {
      const i = widths.indexOf(Math.max(...widths));
      if (widths[i]! <= Math.max(8, headers[i]!.length)) break;
      widths[i]!--;
    }
  }
  const line = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  const render = (cells: readonly string[], alignRight: readonly boolean[]): string[] => {
    const wrapped = cells.map((c, i) => wrap(c, widths[i]!));
    const height = Math.max(...wrapped.map((w) => w.length));
    const lines: string[] = [];
    for (let k = 0; k < height; k++) {
      lines.push(`| ${wrapped.map((w, i) => (alignRight[i] ? (w[k] ?? '').padStart(widths[i]!) : (w[k] ?? '').padEnd(widths[i]!))).join(' | ')} |`);
    }
    return lines;
  };
  const out = [line, ...render(headers, headers.map(() => false)), line];
  for (const r of rows) out.push(...render(r.map(text), right));
  out.push(line);
  return out.join('\n');
}

/** Print a list (cliff `Lister`) in the chosen format. @throws {@link ColumnError}; ValidationError for a bad `--max-width`. */
export function formatList(headers: readonly string[], rows: ReadonlyArray<readonly Cell[]>, flags: FormatFlags): string {
  const keep = selectColumns(headers, flags.column);
  const h = keep.map((i) => headers[i]!);
  const rs = rows.map((r) => keep.map((i) => r[i] ?? null));
  switch (flags.format ?? 'table') {
    case 'json':
      return pyJson(rs.map((r) => Object.fromEntries(h.map((name, i) => [name, r[i]]))), flags.noindent);
    case 'yaml':
      return stringify(rs.map((r) => Object.fromEntries(h.map((name, i) => [name, r[i]]))), { sortMapEntries: true }).trimEnd();
    case 'value':
      return rs.map((r) => r.map(text).join(' ')).join('\n');
    case 'csv': {
      const quote = (flags.quote ?? 'nonnumeric') as CsvQuote;
      return [csvLine(h, quote), ...rs.map((r) => csvLine(r, quote))].join('\n');
    }
    default:
      return borderedTable(h, rs, maxWidthOf(flags));
  }
}

/** Print one object (cliff `ShowOne`) in the chosen format. */
export function formatOne(fields: ReadonlyArray<readonly [string, Cell]>, flags: FormatFlags): string {
  const keep = selectColumns(fields.map(([k]) => k), flags.column);
  const kept = keep.map((i) => fields[i]!);
  switch (flags.format ?? 'table') {
    case 'json':
      return pyJson(Object.fromEntries(kept), flags.noindent);
    case 'yaml':
      return stringify(Object.fromEntries(kept), { sortMapEntries: true }).trimEnd();
    case 'value':
      return kept.map(([, v]) => text(v)).join('\n');
    case 'shell':
      // cliff's ShellFormatter: NAME="value", names with '-' or ':' as '_', '"' escaped.
      return kept.map(([k, v]) => `${flags.prefix ?? ''}${k.replace(/[-:]/g, '_')}="${text(v).replace(/"/g, '\\"')}"`).join('\n');
    default:
      return borderedTable(['Field', 'Value'], kept.map(([k, v]) => [k, v]), maxWidthOf(flags));
  }
}

/** Check the format flags before any request. @throws ValidationError for a bad `--max-width`. */
export function checkFormatFlags(flags: FormatFlags): void {
  maxWidthOf(flags);
}

function maxWidthOf(flags: FormatFlags): number | undefined {
  if (flags.maxWidth === undefined) return undefined;
  return parseIntFlag(flags.maxWidth, '--max-width', Number.MIN_SAFE_INTEGER);
}
