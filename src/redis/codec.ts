/**
 * How the Redis ledger writes values into Redis and reads its answers: the kept reading (JSON),
 * needs as whole numbers, amounts from a script's reply.
 *
 * @module
 */
import type { ResourceAmounts } from '../core/index.js';
import { ValidationError } from '../errors/index.js';
import type { FreedCredit, LimitsReading } from '../ledger/index.js';

/**
 * A reading as kept in Redis: JSON, with an unlimited limit (`Infinity`, Nova's -1) written as
 * `"Infinity"` (plain JSON would turn it into `null`, which reads as no room at all).
 */
export function encodeReading(reading: LimitsReading): string {
  return JSON.stringify({ absolute: reading.absolute, requestId: reading.requestId }, (_key, value: unknown) => (value === Infinity ? 'Infinity' : value));
}

export function decodeReading(json: string): LimitsReading {
  return JSON.parse(json, (_key, value: unknown) => (value === 'Infinity' ? Infinity : value)) as LimitsReading;
}

export function needsArgs(where: string, n: ResourceAmounts): [number, number, number] {
  const v: [number, number, number] = [n.cores, n.ramMiB, n.instances];
  if (v.some((x) => typeof x !== 'number' || !Number.isFinite(x) || x < 0)) throw new ValidationError(`${where}: needs must be non-negative numbers, got ${JSON.stringify(n)}`);
  return v.map(Math.ceil) as [number, number, number];
}

/**
 * A `FreedCredit` as the FREED script's claim id and `keptSeq` arguments (`['', '']`: no credit).
 * @throws `ValidationError` when `claimId` is not a non-empty string or `keptSeq` not a whole number of at least 0.
 */
export function freedCreditArgs(credit: FreedCredit | undefined): [string, string] {
  if (credit === undefined) return ['', ''];
  const { claimId, keptSeq } = credit as { claimId?: unknown; keptSeq?: unknown };
  if (typeof claimId !== 'string' || claimId === '' || typeof keptSeq !== 'number' || !Number.isSafeInteger(keptSeq) || keptSeq < 0) {
    throw new ValidationError(`publishFreed: credit must be { claimId: a non-empty string, keptSeq: a whole number >= 0 }, got a claimId of type ${typeof claimId} and keptSeq ${typeof keptSeq === 'number' ? keptSeq : `of type ${typeof keptSeq}`}`);
  }
  return [claimId, String(keptSeq)];
}

export function amounts(a: unknown[], from: number): ResourceAmounts {
  return { cores: Number(a[from]), ramMiB: Number(a[from + 1]), instances: Number(a[from + 2]) };
}


/**
 * The holder names of a script's `holders()` answer (the live entries of the scope's `holders` set,
 * each `<uuid> <holder>`; a raw answer's entries are Buffers): the names, one per live ledger object.
 */
export function holderNames(entries: unknown): string[] {
  if (!Array.isArray(entries)) return [];
  return entries.map((e) => {
    const s = String(e);
    const space = s.indexOf(' ');
    return space < 0 ? s : s.slice(space + 1);
  });
}
