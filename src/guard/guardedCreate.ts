/**
 * One guarded create attempt of `QuotaGuard.createServer`, after the headroom check has claimed:
 * the POST, the wait for the server to leave BUILD, and the deletion of a server the guard gives up
 * on.
 *
 * - `POST /servers` (Nova API reference, "Create Server") is sent once per attempt, never with the
 *   caller's AbortSignal (an abort must not hide a server Nova created) and without the client's own
 *   retries: the guard's retry policy decides (`retryPolicy.ts`). It carries the call's claim tag;
 *   when its answer is lost the server is searched for and adopted, or the POST re-sent at once
 *   with the same tag when a search finds nothing (`lostCreate.ts`; a twin that lands later is
 *   deleted by the watch of the tag, `lateCreates.ts`). A rate limit or a refused
 *   connection keeps the claim for the re-send (`call.heldClaim`).
 * - With `waitForActive`: poll until the server leaves BUILD ({@link waitForActive}); the claim ends
 *   as `'counted'` at the first poll that shows the server past scheduling (`isPastScheduling`),
 *   since Nova counts it from then on. ERROR with a
 *   quota fault ({@link parseQuotaMessage} on `fault.message`: Nova's recheck text, or a
 *   build-aborted fault naming another quota) → delete with wait, then a retryable
 *   {@link QuotaBuildFaultError} whose `cause` is a {@link ServerBuildError}. Other ERROR, BUILD past
 *   `activeTimeoutMs`, an abort or a failed poll → delete with wait, then throw.
 * - Deletion uses `client.deleteServer(id, { ...deleteOptions, wait: true })` without the caller's
 *   signal, so an abort still cleans up.
 * - With the call's `keepOnAbort` (`GuardedCreateOptions`), an abort after Nova accepted the POST
 *   keeps the server instead: its claim ends as `'counted'`, it is the call's kept server (no watch
 *   deletes it) and the {@link AbortError} names it (`serverId`), so the caller can delete it (the
 *   CLI's Ctrl-C during `server create --wait`).
 *
 * @module
 */
import { AbortError, ForbiddenError, NovaNetworkError, QuotaExceededError, RateLimitError, isAbortError } from '../errors/index.js';
import { parseQuotaMessage } from '../errors/quotaMessage.js';
import type { CreateServerBody, Server } from '../core/types.js';
import { bindClaim, noteCounted, releaseClaim } from './ledgerUse.js';
import { CreateOutcomeUnknownError, QuotaBuildFaultError, ServerBuildError } from './errors.js';
import { postOrAdopt } from './lostCreate.js';
import { isPastScheduling, waitForActive } from './waitForActive.js';
import type { Claim, GuardState } from './state.js';
import type { GuardedCall } from './guardedCall.js';
import { RefusedAttempt, type PostRefusal } from './retryPolicy.js';

/** True when the POST did not reach Nova or Nova refused it for its rate: nothing was created. */
function refusalOf(error: unknown): PostRefusal | undefined {
  if (error instanceof RateLimitError) return 'rate-limited';
  if (error instanceof NovaNetworkError && error.code === 'ECONNREFUSED') return 'refused';
  return undefined;
}

/**
 * One attempt of a guarded create on its claim (see the module description): {@link CreateAttempt.run}
 * POSTs, then settles the server; every path ends the claim, except a refused POST, where
 * `call.heldClaim` keeps it for the re-send.
 */
export class CreateAttempt {
  readonly #g: GuardState;
  readonly #call: GuardedCall;
  readonly #body: CreateServerBody;
  readonly #claim: Claim;
  readonly #signal: AbortSignal | undefined;
  readonly #keepOnAbort: boolean;

  constructor(g: GuardState, call: GuardedCall, body: CreateServerBody, claim: Claim, signal: AbortSignal | undefined, keepOnAbort = false) {
    this.#g = g;
    this.#call = call;
    this.#body = body;
    this.#claim = claim;
    this.#signal = signal;
    this.#keepOnAbort = keepOnAbort;
  }

  /** POST, then (with `waitForActive`) wait for the server to leave BUILD. Resolves the server the call returns. */
  async run(): Promise<Server> {
    const server = await this.#attempt();
    // The one server of the call's claim tag that stays (`lateCreates.ts`).
    this.#call.keptServerId = server.id;
    return server;
  }

  async #attempt(): Promise<Server> {
    const g = this.#g;
    const call = this.#call;
    const claim = this.#claim;
    const signal = this.#signal;
    let server: Server;
    try {
      // The POST itself never takes the signal: an abort must not hide a server Nova created.
      server = await postOrAdopt(g, call, this.#body, claim, signal);
    } catch (e) {
      if (e instanceof CreateOutcomeUnknownError) {
        // A server may exist and Nova may count it.
        await releaseClaim(g, claim, 'counted');
        throw e;
      }
      const refusal = refusalOf(e);
      if (refusal) {
        call.heldClaim = claim;
        throw new RefusedAttempt(refusal, e);
      }
      await releaseClaim(g, claim, 'not-created');
      if (e instanceof QuotaExceededError) {
        g.stats.quota403s++;
        call.lastQuotaMessage = e.message;
        if (e.permanent) g.log.warn({ requestId: e.requestId, resources: e.resources }, 'permanent quota error: the request exceeds the limit itself');
      } else if (e instanceof ForbiddenError) {
        g.log.warn({ requestId: e.requestId, status: e.status }, 'create forbidden (not a quota error): not retried');
      }
      throw e;
    }
    await bindClaim(g, claim, server.id);
    if (signal?.aborted) {
      const aborted = new AbortError(undefined, { cause: signal.reason });
      return this.#keepOnAbort ? this.#keep(server, aborted) : this.#abandon(server, aborted);
    }
    if (!g.opts.waitForActive) {
      // Nobody waits for it: the lease is renewed at the guard's next reads instead (`limitsRead.ts`).
      claim.stopRenewal?.();
      claim.unwatched = true;
      return server;
    }
    return this.#settle(server);
  }

  /** Wait for the new server to leave BUILD; delete it when the guard gives up on it (kept on an abort with `keepOnAbort`). */
  async #settle(created: Server): Promise<Server> {
    const g = this.#g;
    const claim = this.#claim;
    const id = created.id;
    let res;
    try {
      res = await waitForActive(g.client, id, {
        timeoutMs: g.opts.activeTimeoutMs,
        intervalMs: g.opts.activeIntervalMs,
        signal: this.#signal,
        // Nova counts the server once it is past scheduling: end the claim there, not at ACTIVE, so
        // its cores are not subtracted twice for the rest of the build.
        onBuild: (s) => (isPastScheduling(s) ? releaseClaim(g, claim, 'counted') : undefined),
      });
    } catch (e) {
      if (this.#keepOnAbort && (isAbortError(e) || e instanceof AbortError)) return this.#keep(created, e as Error);
      return this.#abandon(created, e);
    }
    if (res.outcome === 'active') {
      await releaseClaim(g, claim, 'counted');
      // ACTIVE: on a host, its cores and RAM counted however Nova counts (placement or legacy): its
      // deletion may be credited to a kept reading sent after the release (`freedCredits.ts`). Not at
      // the look past scheduling: a build that fails after it may leave an ERROR server that counts as
      // an instance only.
      noteCounted(g, claim);
      return { ...created, ...res.server } as Server;
    }
    if (res.outcome === 'gone') {
      await releaseClaim(g, claim, 'not-created');
      throw new ServerBuildError({ serverId: id, reason: 'gone', lastStatus: res.lastStatus, elapsedMs: res.elapsedMs, deleted: true });
    }
    const fault = res.server?.fault;
    const cleanupError = await this.#deleteCreated(id);
    const buildError = new ServerBuildError({
      serverId: id,
      reason: res.outcome,
      lastStatus: res.lastStatus,
      faultMessage: fault?.message,
      faultCode: fault?.code,
      elapsedMs: res.elapsedMs,
      deleted: cleanupError === undefined,
      cleanupError,
    });
    const parsed = res.outcome === 'error' ? parseQuotaMessage(fault?.message) : undefined;
    if (parsed && cleanupError === undefined) {
      g.stats.lateQuotaFaults++;
      this.#call.lastQuotaMessage = fault?.message;
      g.log.warn({ serverId: id, fault: fault?.message }, 'server went to ERROR with a quota fault: deleted it');
      throw new QuotaBuildFaultError({ serverId: id, faultMessage: fault?.message ?? '', resources: parsed.resources, permanent: parsed.permanent, cause: buildError });
    }
    g.log.warn({ serverId: id, outcome: res.outcome, fault: fault?.message, deleted: cleanupError === undefined }, 'server did not become ACTIVE');
    throw buildError;
  }

  /** The guard gives up on a created server (abort, failed poll): delete it, then throw. */
  async #abandon(created: Server, error: unknown): Promise<never> {
    const id = created.id;
    const cleanupError = await this.#deleteCreated(id);
    this.#g.log.warn({ serverId: id, deleted: cleanupError === undefined, posts: this.#call.posts }, 'giving up on a created server');
    if (isAbortError(error) || error instanceof AbortError) {
      throw new AbortError(
        cleanupError === undefined
          ? `The operation was aborted; server ${id} was deleted`
          : `The operation was aborted; server ${id} could NOT be deleted: ${cleanupError.message}`,
        { cause: (error as Error).cause ?? error },
      );
    }
    throw error;
  }

  /**
   * The caller aborted and asked to keep the server (`keepOnAbort`): end the claim as `'counted'`
   * (Nova counts the server), make it the call's kept server (a watch of the call's tag never deletes
   * it), and throw an {@link AbortError} naming it.
   */
  async #keep(created: Server, error: Error): Promise<never> {
    const call = this.#call;
    const id = created.id;
    await releaseClaim(this.#g, this.#claim, 'counted');
    call.keptServerId = id;
    call.settled = true;
    this.#g.log.warn({ serverId: id, posts: call.posts }, 'aborted: the created server is kept (keepOnAbort)');
    throw new AbortError(`The operation was aborted; server ${id} was created and is kept`, { cause: error.cause ?? error, serverId: id });
  }

  /** Delete a server the guard created, with wait, ignoring the caller's signal. Returns the failure, if any. */
  async #deleteCreated(id: string): Promise<Error | undefined> {
    const g = this.#g;
    g.stats.cleanups++;
    try {
      await g.client.deleteServer(id, { intervalMs: g.opts.activeIntervalMs, ...g.opts.deleteOptions, wait: true });
      await releaseClaim(g, this.#claim, 'not-created');
      return undefined;
    } catch (e) {
      await releaseClaim(g, this.#claim, 'counted');
      g.log.error({ serverId: id, err: (e as Error)?.message }, 'could not delete a server the guard created: it is left behind');
      return e instanceof Error ? e : new Error(String(e));
    }
  }
}
