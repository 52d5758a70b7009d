/**
 * Confirming, for many deletions at once, that Nova has destroyed servers it already showed as
 * `DELETED` (the moment their quota is freed; see `confirmGoneMs` in `src/deleteServer.ts`).
 *
 * A plain listing (no `changes-since`) shows a server until Nova destroys it, its `DELETED` window
 * included, and never after (observed on Nova 26.2). So while two or more confirmations are pending
 * on one client, one brief listing (`GET /servers`, ids only) per tick answers all of them: a
 * pending server absent from it is gone. A single pending confirmation polls its own `GET /servers/{id}`
 * (404 = gone). A failed request is never taken as gone; the next tick tries again. The requests
 * share the client's `maxRequestsPerSecond` cap while two or more are pending.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import { AbortError } from '../errors/index.js';
import { TokenBucket } from '../transport/rateLimiter.js';
import { isServerNotFound } from '../transport/http.js';

interface Pending {
  serverId: string;
  deadline: number;
  settle: (gone: boolean) => void;
}

/** Time between ticks, in ms. */
export const CONFIRM_TICK_MS = 50;

/** One per client: see the module description. */
export class GoneConfirmer {
  readonly #client: NovaClient;
  readonly #pending = new Set<Pending>();
  readonly #bucket: TokenBucket;
  #timer: NodeJS.Timeout | undefined;
  #ticking = false;

  constructor(client: NovaClient) {
    this.#client = client;
    this.#bucket = new TokenBucket(client.maxRequestsPerSecond);
  }

  /**
   * Resolve true once `serverId` is confirmed destroyed, false when `budgetMs` passes first or it
   * shows a status other than DELETED. Rejects with {@link AbortError} when `signal` aborts.
   */
  confirm(serverId: string, budgetMs: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new AbortError(`Confirmation of server ${serverId}'s deletion was aborted`, { cause: signal.reason }));
        return;
      }
      const onAbort = (): void => {
        this.#pending.delete(entry);
        reject(new AbortError(`Confirmation of server ${serverId}'s deletion was aborted`, { cause: signal?.reason }));
        this.#schedule();
      };
      const entry: Pending = {
        serverId,
        deadline: performance.now() + budgetMs,
        settle: (gone) => {
          this.#pending.delete(entry);
          signal?.removeEventListener('abort', onAbort);
          resolve(gone);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.add(entry);
      this.#schedule();
    });
  }

  /** Pending confirmations (for tests and stats). */
  get pending(): number {
    return this.#pending.size;
  }

  #schedule(): void {
    if (this.#pending.size === 0) {
      if (this.#timer) clearTimeout(this.#timer);
      this.#timer = undefined;
      return;
    }
    if (this.#timer || this.#ticking) return;
    const delay = this.#pending.size > 1 ? Math.max(CONFIRM_TICK_MS, this.#bucket.delayFor(1)) : CONFIRM_TICK_MS;
    // Not unref'd: a pending confirmation is work the caller awaits, and must keep a CLI process alive.
    this.#timer = setTimeout(() => void this.#tick(), delay);
  }

  async #tick(): Promise<void> {
    this.#timer = undefined;
    this.#ticking = true;
    try {
      const now = performance.now();
      for (const p of [...this.#pending]) if (p.deadline <= now) p.settle(false);
      const pending = [...this.#pending];
      if (pending.length === 1) {
        await this.#confirmOne(pending[0]!);
      } else if (pending.length > 1) {
        this.#bucket.take(1);
        const requestTimeoutMs = Math.max(1, Math.min(this.#client.requestTimeoutMs, Math.max(...pending.map((p) => p.deadline)) - now));
        const { servers } = await this.#client.listServersWithMeta({}, { retry: false, requestTimeoutMs, brief: true });
        const listed = new Set(servers.map((s) => s.id));
        for (const p of pending) if (!listed.has(p.serverId)) p.settle(true);
      }
    } catch {
      // a failed request is never taken as gone: the next tick asks again
    } finally {
      this.#ticking = false;
      this.#schedule();
    }
  }

  async #confirmOne(p: Pending): Promise<void> {
    try {
      const requestTimeoutMs = Math.max(1, Math.min(this.#client.requestTimeoutMs, p.deadline - performance.now()));
      const server = await this.#client.getServer(p.serverId, { retry: false, requestTimeoutMs });
      if (String(server.status ?? '').toUpperCase() !== 'DELETED') p.settle(false);
    } catch (e) {
      if (isServerNotFound(e, p.serverId)) p.settle(true);
    }
  }
}

const confirmers = new WeakMap<NovaClient, GoneConfirmer>();

/** The client's {@link GoneConfirmer}. */
export function goneConfirmerOf(client: NovaClient): GoneConfirmer {
  let c = confirmers.get(client);
  if (!c) {
    c = new GoneConfirmer(client);
    confirmers.set(client, c);
  }
  return c;
}
