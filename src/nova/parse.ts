/**
 * Reading the numbers of Nova's `GET /limits` and `GET /os-quota-sets/{project_id}/detail` bodies
 * (Nova API reference, "Limits" and "Quota Sets"): -1 means unlimited.
 *
 * @module
 */
import type { AbsoluteLimits, QuotaDetailItem, QuotaSetDetail } from '../core/types.js';

/** A limit value: -1 → `Infinity`, a finite number as it is, anything else → undefined. */
export function parseLimitValue(v: unknown): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
  return v === -1 ? Number.POSITIVE_INFINITY : v;
}

/** Parse the `absolute` block of `GET /limits`: -1 → Infinity, missing or non-numeric → undefined. */
export function parseAbsoluteLimits(absolute: unknown): AbsoluteLimits {
  const out: AbsoluteLimits = {};
  if (!absolute || typeof absolute !== 'object') return out;
  for (const [k, v] of Object.entries(absolute as Record<string, unknown>)) {
    const parsed = parseLimitValue(v);
    if (parsed !== undefined) out[k] = parsed;
  }
  return out;
}

/** Parse the `quota_set` object of `GET /os-quota-sets/{project_id}/detail`: each `limit` -1 → `Infinity`. */
export function parseQuotaSetDetail(quotaSet: Record<string, unknown>): QuotaSetDetail {
  const out: QuotaSetDetail = {};
  for (const [k, v] of Object.entries(quotaSet)) {
    if (v && typeof v === 'object') {
      const item = v as Record<string, unknown>;
      const d: QuotaDetailItem = {};
      const inUse = parseLimitValue(item['in_use']);
      const limit = parseLimitValue(item['limit']);
      const reserved = typeof item['reserved'] === 'number' ? item['reserved'] : undefined;
      if (inUse !== undefined) d.in_use = inUse;
      if (limit !== undefined) d.limit = limit;
      if (reserved !== undefined) d.reserved = reserved;
      out[k] = d;
    } else if (typeof v === 'string') {
      out[k] = v;
    }
  }
  return out;
}
