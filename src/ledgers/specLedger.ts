/**
 * A ledger named by a string (`ledger: 'sqlite:…' | 'redis://…'`, or the `NOVA_GUARD_LEDGER`
 * environment variable), as a `QuotaGuard` uses it: the guard checks the string at construction
 * (a bad URL: `ValidationError` before any connection) and opens the ledger before its first
 * request, once it knows its client's endpoint and project (`bindScope`), through a
 * {@link SpecLedger}; the guard owns that ledger and closes it in `close()`.
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { ledgerScope, sameScope, type LedgerScope } from '../core/endpoint.js';
import type { ResourceAmounts } from '../core/types.js';
import { LedgerConfigError, ValidationError } from '../errors/index.js';
import { InProcessQuotaLedger, defaultHolder, scopeMismatch } from '../ledger/index.js';
import type { AcquireRequest, Acquisition, ClaimEnd, FreedCredit, LedgerClaim, LedgerPeek, LedgerPlace, LimitsRead, QuotaLedger, UncountedRead } from '../ledger/index.js';
import type { NovaClient } from '../nova/client.js';
import { missingProjectError } from './configError.js';
import { LEDGER_ENV, openLedger, parseLedgerSpec } from './open.js';

/** The ledger string of the environment (`NOVA_GUARD_LEDGER`), if any. */
function envSpec(): string | undefined {
  const v = process.env[LEDGER_ENV];
  return v === undefined || v.trim() === '' ? undefined : v;
}

/**
 * The ledger a guard uses for its `ledger` option: the object given, or for a string (or, with no
 * `ledger`, `NOVA_GUARD_LEDGER`) a {@link SpecLedger} the guard owns (`owned`).
 * @throws `ValidationError` for a string that is not a ledger spec.
 */
export function ledgerOption(ledger: unknown, clock: Clock, logger: Logger, client?: NovaClient): { ledger: unknown; owned: SpecLedger | undefined } {
  let spec = ledger;
  if (spec === undefined) spec = envSpec();
  if (typeof spec !== 'string') return { ledger, owned: undefined };
  const from = ledger === undefined ? 'NOVA_GUARD_LEDGER' : 'ledger';
  let kind: 'sqlite' | 'redis' | 'in-process';
  try {
    kind = parseLedgerSpec(spec).kind;
  } catch (error) {
    throw new ValidationError(`${from}: ${(error as Error).message}`);
  }
  if (kind === 'in-process') return { ledger: undefined, owned: undefined };
  const owned = new SpecLedger(spec, kind, clock, logger, client, from);
  return { ledger: owned, owned };
}

/**
 * Open the ledger `spec` names for `scope` (`openLedger`; `'in-process'` or none: an in-process ledger
 * of the scope); with the guard's `client`, by the ledger's `forClient` (its fleet watcher on by
 * default). Rejects with a `LedgerConfigError` when it cannot work (`openLedger`).
 */
async function openFor(spec: string, scope: LedgerScope, clock: Clock, logger: Logger, client: NovaClient | undefined): Promise<QuotaLedger> {
  const opened = await openLedger(spec, { endpoint: scope.endpoint, projectId: scope.projectId, clock, logger, ...(client === undefined ? {} : { client }) });
  return opened ?? new InProcessQuotaLedger({ clock, endpoint: scope.endpoint, projectId: scope.projectId });
}

/**
 * A ledger named by a string, opened when the guard binds it to its client's endpoint and project
 * (`bindScope`, before the guard's first request); every call waits for the opening. A call before
 * `bindScope` (a client without a project id) rejects with a `ValidationError`: the guard falls back
 * to its in-process ledger for that call and warns.
 */
export class SpecLedger implements QuotaLedger {
  readonly kind: string;
  readonly holder = defaultHolder();
  #scope: LedgerScope | undefined;
  #opening: Promise<QuotaLedger> | undefined;
  #opened: QuotaLedger | undefined;
  readonly #listeners = new Map<() => void, (() => void) | undefined>();
  #closed = false;

  readonly #spec: string;

  /** The opened ledger's live holders as it last saw them; none before it is open. */
  members(): readonly string[] {
    return this.#opened?.members() ?? [];
  }

  /** The opened ledger's `placeTtlMs`; 0 before it is open (nothing of this process is in a store yet). */
  get placeTtlMs(): number {
    return this.#opened?.placeTtlMs ?? 0;
  }

  /**
   * @param spec - The ledger string (kept private: a Redis URL may hold a password).
   * @param kind - What `parseLedgerSpec` said of it.
   * @param client - The guard's client: a SQLite or Redis ledger is opened by its `forClient` (the fleet watcher on by default).
   * @param from - Where `spec` came from: the guard's `ledger` option or `NOVA_GUARD_LEDGER`.
   */
  constructor(
    spec: string,
    kind: string,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly client?: NovaClient,
    readonly from: 'ledger' | 'NOVA_GUARD_LEDGER' = 'ledger',
  ) {
    this.kind = kind;
    this.#spec = spec;
  }

  /** The endpoint and project, once bound. */
  get scope(): LedgerScope | undefined {
    return this.#scope;
  }

  /**
   * Binds the ledger to `scope` and starts opening it.
   * @throws `ValidationError` when already bound to another endpoint or project.
   */
  bindScope(scope: LedgerScope): void {
    if (this.#scope !== undefined) {
      if (!sameScope(this.#scope, scope)) throw scopeMismatch(this.kind, this.#scope, scope);
      return;
    }
    this.#scope = ledgerScope(scope.endpoint, scope.projectId);
    this.#open(this.#scope).catch(() => undefined); // a failed opening is reported by the calls that wait for it
  }

  /** Open the ledger for `scope`; a failed opening is tried again by the next call. */
  #open(scope: LedgerScope): Promise<QuotaLedger> {
    const opening = openFor(this.#spec, scope, this.clock, this.logger, this.client).then(
      (l) => {
        this.#opened = l;
        if (this.#closed) void l.close();
        for (const [listener] of this.#listeners) this.#listeners.set(listener, l.onFreed(listener));
        return l;
      },
      (error: unknown) => {
        // A ledger that cannot work for a reason of its setup (a module missing, a path that cannot
        // be created: LedgerConfigError) is the guard's to report. Any other failure to open (a
        // corrupt file) is down: the guard skips it at once, probes it, and a process it never
        // answered goes on alone after NEVER_REACHED_WAIT_MS instead of waiting for it up to maxWaitMs.
        throw error instanceof LedgerConfigError ? error : markedDown(error);
      },
    );
    this.#opening = opening;
    opening.catch(() => {
      if (this.#opening === opening) this.#opening = undefined;
    });
    return opening;
  }

  #ledger(): Promise<QuotaLedger> {
    if (this.#closed) return Promise.reject(new ValidationError(`the ${this.kind} ledger is closed`));
    if (this.#opening !== undefined) return this.#opening;
    if (this.#scope !== undefined) return this.#open(this.#scope);
    // A ledger named that cannot serve this client is a setup error (never a silent fallback).
    return Promise.reject(missingProjectError(this.kind));
  }

  /** The opened ledger's `acquire`. */
  async acquire(request: AcquireRequest, read: LimitsRead, signal: AbortSignal | undefined, uncounted?: UncountedRead): Promise<Acquisition> {
    return (await this.#ledger()).acquire(request, read, signal, uncounted);
  }
  /** The opened ledger's `peek`. */
  async peek(read: LimitsRead, signal: AbortSignal | undefined): Promise<LedgerPeek> {
    return (await this.#ledger()).peek(read, signal);
  }
  async leave(place: LedgerPlace): Promise<void> {
    if (this.#opened) await this.#opened.leave(place);
  }
  /** The opened ledger's budget; `undefined` before it opens. */
  callBudgetMs(): number | undefined {
    return this.#opened === undefined ? undefined : this.#opened.callBudgetMs();
  }
  /** The opened ledger's `everReached`; false before it opens. */
  everReached(): boolean {
    return this.#opened !== undefined && this.#opened.everReached();
  }
  /** The opened ledger's `probe` (opening it first: a failed opening is a failed probe). */
  async probe(): Promise<void> {
    await (await this.#ledger()).probe();
  }
  async claimAnyway(needs: ResourceAmounts, ttlMs: number): Promise<LedgerClaim> {
    return (await this.#ledger()).claimAnyway(needs, ttlMs);
  }
  async renew(claim: LedgerClaim, ttlMs: number): Promise<boolean> {
    return (await this.#ledger()).renew(claim, ttlMs);
  }
  async bind(claim: LedgerClaim, serverId: string): Promise<void> {
    if (this.#opened) await this.#opened.bind(claim, serverId);
  }
  async release(claim: LedgerClaim, end: ClaimEnd): Promise<void> {
    if (this.#opened) await this.#opened.release(claim, end);
  }
  async publishFreed(serverId: string, credit?: FreedCredit): Promise<void> {
    if (this.#opened) await this.#opened.publishFreed(serverId, credit);
    else for (const [listener] of this.#listeners) listener();
  }
  keptSeen(): number | undefined {
    return this.#opened?.keptSeen();
  }
  onFreed(listener: () => void): () => void {
    this.#listeners.set(listener, this.#opened?.onFreed(listener));
    return () => {
      this.#listeners.get(listener)?.();
      this.#listeners.delete(listener);
    };
  }
  /**
   * The opened ledger's `onWake` (every place comes from it: `acquire` waits for the opening); should
   * it not be open, every confirmed deletion (`onFreed`) wakes the place.
   */
  onWake(place: LedgerPlace, listener: () => void): () => void {
    const l = this.#opened;
    return l === undefined ? this.onFreed(listener) : l.onWake(place, listener);
  }
  /**
   * Close the opened ledger, which cannot work for a reason of its setup (the guard found a
   * `LedgerConfigError`): nothing of it is left running (a Redis connection retrying a refused
   * password would keep the process alive); the next call opens it again (a setup fixed meanwhile is
   * picked up). Calls already sent to it settle as it closes.
   */
  drop(): void {
    const l = this.#opened;
    if (l === undefined) return;
    this.#opened = undefined;
    if (this.#opening !== undefined) this.#opening = undefined;
    for (const [listener, off] of this.#listeners) {
      off?.();
      this.#listeners.set(listener, undefined);
    }
    void l.close().catch(() => undefined);
  }

  /** Closes the opened ledger (or the one still opening, once open). */
  async close(): Promise<void> {
    this.#closed = true;
    const l = this.#opened ?? (await this.#opening?.catch(() => undefined));
    await l?.close();
  }
  /** Never shows the ledger string (a Redis URL may hold a password). */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `SpecLedger { kind: ${JSON.stringify(this.kind)}, opened: ${this.#opened !== undefined} }`;
  }
  /** The opened ledger's JSON, or kind and holder. */
  toJSON(): Record<string, unknown> {
    return this.#opened && typeof (this.#opened as { toJSON?: unknown }).toJSON === 'function' ? (this.#opened as unknown as { toJSON(): Record<string, unknown> }).toJSON() : { kind: this.kind, holder: this.holder };
  }
}

/** `error` marked `ledgerDown` (`isLedgerDown`): the ledger it comes from cannot be reached. */
function markedDown(error: unknown): unknown {
  if (typeof error === 'object' && error !== null) {
    try {
      Object.defineProperty(error, 'ledgerDown', { value: true, configurable: true });
      return error;
    } catch {
      // a frozen error: wrap it below
    }
  }
  return Object.assign(new ValidationError(`the ledger cannot be opened: ${String((error as Error)?.message ?? error)}`), { ledgerDown: true });
}
