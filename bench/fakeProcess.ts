/**
 * Parent side of `fakeHost.ts`: fork the child and talk to its FakeNova over IPC.
 *
 * @module
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { FakeNovaOptions, FakeServerInit } from 'nova-guard/testing';
import type { FakeQuotaRecord, FakeTimeline, HostRequest, RequestCounts } from './fakeHost.js';

export type { FakeQuotaRecord, FakeTimeline, RequestCounts } from './fakeHost.js';

/** A FakeNova running in a child process. */
export class FakeNovaProcess {
  readonly #child: ChildProcess;
  #seq = 0;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  /** Compute endpoint of the running fake (after {@link FakeNovaProcess.start}). */
  endpoint = '';
  /** Project id of the running fake. */
  projectId = '';

  private constructor(child: ChildProcess) {
    this.#child = child;
    child.on('message', (m: { seq: number; ok: boolean; result?: unknown; error?: string }) => {
      const p = this.#pending.get(m.seq);
      if (!p) return;
      this.#pending.delete(m.seq);
      if (m.ok) p.resolve(m.result);
      else p.reject(new Error(`fake host: ${m.error}`));
    });
    child.on('exit', (code) => {
      for (const p of this.#pending.values()) p.reject(new Error(`fake host exited (${code})`));
      this.#pending.clear();
    });
  }

  /** Fork the child (`fakeHost.js` next to this file). */
  static spawn(): FakeNovaProcess {
    const child = fork(new URL('./fakeHost.js', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    return new FakeNovaProcess(child);
  }

  #call<T>(req: HostRequest): Promise<T> {
    const seq = ++this.#seq;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(seq, { resolve: resolve as (v: unknown) => void, reject });
      this.#child.send({ seq, req });
    });
  }

  /** (Re)start the fake with `options`; with `stuckDeletes`, DELETE leaves servers in `deleting` until {@link destroyAt}. */
  async start(options: FakeNovaOptions, stuckDeletes = false): Promise<void> {
    const r = await this.#call<{ endpoint: string; projectId: string }>({ cmd: 'start', options, stuckDeletes });
    this.endpoint = r.endpoint;
    this.projectId = r.projectId;
  }

  /** Seed `n` servers; resolves their ids. */
  addServers(n: number, init: Partial<FakeServerInit> = {}): Promise<string[]> {
    return this.#call({ cmd: 'addServers', n, init });
  }

  /** Destroy a server at wall-clock time `atMs` (fire and forget). */
  destroyAt(id: string, atMs: number): void {
    this.#child.send({ req: { cmd: 'destroyAt', id, atMs } satisfies HostRequest });
  }

  /** Wall-clock destroy time of each server, or null when not destroyed (yet). */
  destroyTimes(ids: string[]): Promise<Record<string, number | null>> {
    return this.#call({ cmd: 'destroyTimes', ids });
  }

  /** Counts of the requests received since the last call, and forget them. */
  takeRequests(): Promise<RequestCounts> {
    return this.#call({ cmd: 'takeRequests' });
  }

  /** When each server's POST and first DELETE were accepted, and how many servers exist now (call before {@link takeRequests}). */
  timeline(): Promise<FakeTimeline> {
    return this.#call({ cmd: 'timeline' });
  }

  /** The fake's quota record since its start: most cores held at once, quota 403s, recheck ERRORs (`FakeNova.quotaRecord`). */
  quotaRecord(): Promise<FakeQuotaRecord> {
    return this.#call({ cmd: 'quotaRecord' });
  }

  /** Stop the fake and the child. */
  async close(): Promise<void> {
    await this.#call({ cmd: 'close' }).catch(() => undefined);
  }
}
