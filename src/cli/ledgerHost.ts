/**
 * `server create`'s look at a Redis ledger's host name before any request: a name that does not
 * resolve (`ENOTFOUND`), from the first look to the last of {@link NEVER_REACHED_WAIT_MS} (the time
 * the guard would wait for a ledger never reached: a Redis container starting may register its name
 * within it), is a typo in `--ledger` / `NOVA_GUARD_LEDGER` far more often than an outage: a
 * {@link LedgerConfigError} (exit 1) naming the host and where it came from, before Nova or Keystone
 * is asked anything. Any other answer (the name resolves; a DNS server that fails or is slow,
 * `EAI_AGAIN`; an IP address; no answer within {@link LOOKUP_LIMIT_MS}) goes on: the guard rides out
 * a Redis it cannot reach in degraded mode, as the library does. Only the name is looked up; no
 * connection is made.
 *
 * @module
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import pTimeout from 'p-timeout';
import { pTimeoutTimers, sleep, systemClock, type Clock } from '../core/clock.js';
import { shownConnectionString } from '../core/redact.js';
import { LedgerConfigError } from '../errors/index.js';
import { NEVER_REACHED_WAIT_MS } from '../guard/degradedLedger.js';
import { parseLedgerSpec } from '../ledgers/index.js';
import { withSlowNotice } from './waitNotice.js';
import type { LedgerSource } from './ledgerError.js';

/** Longest wait for one answer of the resolver, in ms: past it the command goes on (a slow DNS is no typo). */
export const LOOKUP_LIMIT_MS = 2000;
/** Time between two looks at a name that did not resolve, in ms. */
export const LOOK_AGAIN_MS = 1000;

/** Options of {@link checkLedgerHost}. */
export interface LedgerHostOptions {
  /** @default systemClock */
  readonly clock?: Clock;
  /** How long a name that does not resolve is looked at again before the error, in ms. @default NEVER_REACHED_WAIT_MS (3000) */
  readonly windowMs?: number;
  /** The resolver: a function that resolves for a name that resolves, or rejects with the resolver's error (its `code`). @default `lookup` of `node:dns/promises` */
  readonly lookup?: (host: string) => Promise<unknown>;
}

/** The host name of a `redis://` / `rediss://` ledger string, or `undefined` (another ledger, an IP address). */
export function ledgerHostName(spec: string): string | undefined {
  const parsed = parseLedgerSpec(spec);
  if (parsed.kind !== 'redis') return undefined;
  let host: string;
  try {
    host = new URL(parsed.url).hostname;
  } catch {
    return undefined;
  }
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === '' || isIP(bare) !== 0 ? undefined : bare;
}

/** `true` when `host` does not resolve (`ENOTFOUND`); `false` for an address or any other outcome. */
async function notFound(host: string, clock: Clock, lookup: (host: string) => Promise<unknown>): Promise<boolean> {
  try {
    await pTimeout(lookup(host), { milliseconds: LOOKUP_LIMIT_MS, customTimers: pTimeoutTimers(clock) });
    return false;
  } catch (e) {
    return (e as { code?: unknown } | null)?.code === 'ENOTFOUND';
  }
}

/**
 * Look up the host name of the ledger string `spec` (see the module description); resolves when the
 * command may go on.
 * @param source - Where `spec` came from (`--ledger` or `NOVA_GUARD_LEDGER`), named by the error.
 * @throws {@link LedgerConfigError} (`reason: 'host-not-found'`) when the name did not resolve at any look within `windowMs`.
 */
export async function checkLedgerHost(spec: string, source: LedgerSource, { clock = systemClock, windowMs = NEVER_REACHED_WAIT_MS, lookup = dnsLookup }: LedgerHostOptions = {}): Promise<void> {
  const host = ledgerHostName(spec);
  if (host === undefined) return;
  const startMs = clock.now();
  const where = source === 'env' ? 'NOVA_GUARD_LEDGER' : '--ledger';
  const missing = await withSlowNotice(
    `the quota ledger host ${host} to resolve`,
    async () => {
      for (;;) {
        if (!(await notFound(host, clock, lookup))) return false;
        const leftMs = startMs + windowMs - clock.now();
        if (leftMs <= 0) return true;
        await sleep(clock, Math.min(LOOK_AGAIN_MS, leftMs));
      }
    },
    { clock },
  );
  if (!missing) return;
  throw new LedgerConfigError(`the Redis ledger's host name ${host} (${where} ${shownConnectionString(spec.trim())}) does not resolve (getaddrinfo ENOTFOUND ${host}, looked up for ${windowMs} ms)`, {
    kind: 'redis',
    reason: 'host-not-found',
    fix: `check the host name in ${where}, or use ${source === 'env' ? 'NOVA_GUARD_LEDGER=in-process (or unset it)' : '--ledger in-process'}`,
  });
}
