/**
 * Durations on the command line: `500ms`, `90s`, `30m`, `2h`, `1d`, `1w` to milliseconds, and
 * milliseconds back to a short human form for tables.
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * Parse a duration with a unit (`ms`, `s`, `m`, `h`, `d`, `w`; decimals allowed, e.g. `1.5h`) to whole
 * milliseconds. A bare number is not a duration here: the CLI's flags take bare milliseconds too
 * (`parseDurationFlag` in `src/cli/common.ts`, with a floor for `server reap --older-than`).
 * @throws {@link ValidationError} naming `flag` when the text is not such a duration.
 */
export function parseDuration(text: string | undefined, flag: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$/i.exec(text ?? '');
  if (!m) throw new ValidationError(`${flag} must be a duration with a unit, like 90s, 30m, 2h or 1d; got ${JSON.stringify(text)}`);
  return Math.round(Number(m[1]) * UNIT_MS[m[2]!.toLowerCase()]!);
}

/** A duration in ms as `850ms`, `42s`, `5m 3s`, `2h 5m`, `3d 4h`. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '-';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m}m ${s % 60}s` : `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h}h ${m % 60}m` : `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d}d ${h % 24}h` : `${d}d`;
}
