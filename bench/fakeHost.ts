/**
 * Child process of the benchmarks: runs one FakeNova on loopback, so that the fake's CPU does not
 * share an event loop with the client being measured (on 2 cores: one for the fake, one for the
 * client). Driven over the IPC channel by `fakeProcess.ts`.
 *
 * FakeNova has no per-server delete latency, so every DELETE leaves the server stuck in
 * `task_state` `deleting` (default delete behaviour `never`) and the parent schedules each server's
 * destroy (`destroyAt`) at its drawn latency; the destroy time of every server is recorded here, on
 * the same wall clock as the parent's.
 *
 * @module
 */
import { appendFileSync } from 'node:fs';
import { FakeNova, type FakeNovaOptions, type FakeQuotaRecord, type FakeServerInit, type RecordedRequest } from 'nova-guard/testing';

export type { FakeQuotaRecord } from 'nova-guard/testing';

/** A request from the parent. */
export type HostRequest =
  | { cmd: 'start'; options: FakeNovaOptions; stuckDeletes: boolean }
  | { cmd: 'addServers'; n: number; init: Partial<FakeServerInit> }
  | { cmd: 'destroyAt'; id: string; atMs: number }
  | { cmd: 'destroyTimes'; ids: string[] }
  | { cmd: 'takeRequests' }
  | { cmd: 'timeline' }
  | { cmd: 'quotaRecord' }
  | { cmd: 'close' };

/** Counters of the requests the fake received since the last `takeRequests`. */
export interface RequestCounts {
  total: number;
  /** `GET /servers/detail` (every page). */
  listings: number;
  /** `GET /servers/detail` with a `marker` (pages after the first). */
  listingNextPages: number;
  /** `GET /servers` (the brief listing; every page). */
  briefListings: number;
  /** `GET /servers/{id}`. */
  serverGets: number;
  deletes: number;
  creates: number;
  /** `POST /servers` answered 403. */
  create403s: number;
  limits: number;
  other: number;
}

/** Count recorded requests by kind. */
export function countRequests(reqs: readonly RecordedRequest[]): RequestCounts {
  const c: RequestCounts = { total: 0, listings: 0, listingNextPages: 0, briefListings: 0, serverGets: 0, deletes: 0, creates: 0, create403s: 0, limits: 0, other: 0 };
  for (const r of reqs) {
    c.total++;
    if (r.method === 'GET' && r.path === '/servers/detail') {
      c.listings++;
      if (r.query.marker !== undefined) c.listingNextPages++;
    } else if (r.method === 'GET' && r.path === '/servers') c.briefListings++;
    else if (r.method === 'GET' && /^\/servers\/[^/]+$/.test(r.path)) c.serverGets++;
    else if (r.method === 'DELETE' && /^\/servers\/[^/]+$/.test(r.path)) c.deletes++;
    else if (r.method === 'POST' && r.path === '/servers') {
      c.creates++;
      if (r.status === 403) c.create403s++;
    } else if (r.method === 'GET' && r.path === '/limits') c.limits++;
    else c.other++;
  }
  return c;
}

/** Per server, when its `POST /servers` and its first DELETE were accepted (epoch ms); and the servers that still exist. */
export interface FakeTimeline {
  servers: Record<string, { postAtMs?: number; deleteAtMs?: number }>;
  serversLeft: number;
}

/** The timeline of the recorded requests (see {@link FakeTimeline}). */
export function timelineOf(reqs: readonly RecordedRequest[], serversLeft: number): FakeTimeline {
  const servers: FakeTimeline['servers'] = {};
  const ok = (r: RecordedRequest): boolean => r.status >= 200 && r.status < 300;
  for (const r of reqs) {
    if (r.serverId === undefined || !ok(r)) continue;
    const s = (servers[r.serverId] ??= {});
    if (r.method === 'POST' && r.path === '/servers') s.postAtMs ??= r.timeMs;
    else if (r.method === 'DELETE' && /^\/servers\/[^/]+$/.test(r.path)) s.deleteAtMs ??= r.timeMs;
  }
  return { servers, serversLeft };
}

let nova: FakeNova | undefined;
const destroyed = new Map<string, number>();
const timers = new Set<NodeJS.Timeout>();

async function handle(req: HostRequest): Promise<unknown> {
  switch (req.cmd) {
    case 'start': {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      destroyed.clear();
      await nova?.close();
      nova = await FakeNova.start(req.options);
      if (req.stuckDeletes) nova.setDefaultDeleteBehavior('never');
      return { endpoint: nova.endpoint, projectId: nova.projectId };
    }
    case 'addServers': {
      const ids: string[] = [];
      for (let i = 0; i < req.n; i++) ids.push(nova!.addServer({ name: `bench-${i}`, ...req.init }).id);
      return ids;
    }
    case 'destroyAt': {
      const t = setTimeout(() => {
        timers.delete(t);
        if (nova?.getServerState(req.id)) {
          nova.destroyServer(req.id);
          destroyed.set(req.id, Date.now());
        }
      }, Math.max(0, req.atMs - Date.now()));
      timers.add(t);
      return undefined;
    }
    case 'destroyTimes':
      return Object.fromEntries(req.ids.map((id) => [id, destroyed.get(id) ?? null]));
    case 'takeRequests': {
      const counts = countRequests(nova!.requests);
      // A debugging aid: every request of the run, one JSON line each, in the file NOVA_GUARD_BENCH_REQUESTS names.
      const dump = process.env['NOVA_GUARD_BENCH_REQUESTS'];
      if (dump && nova!.requests.length > 0) appendFileSync(dump, nova!.requests.map((r) => JSON.stringify(r)).join('\n') + '\n{"mark":"take"}\n');
      nova!.clearRequests();
      return counts;
    }
    case 'timeline':
      return timelineOf(nova!.requests, nova!.listServerStates().length);
    case 'quotaRecord':
      return nova!.quotaRecord() satisfies FakeQuotaRecord;
    case 'close':
      await nova?.close();
      setImmediate(() => process.exit(0));
      return undefined;
  }
}

process.on('message', (msg: { seq?: number; req: HostRequest }) => {
  handle(msg.req).then(
    (result) => msg.seq !== undefined && process.send?.({ seq: msg.seq, ok: true, result }),
    (e: unknown) => msg.seq !== undefined && process.send?.({ seq: msg.seq, ok: false, error: String((e as Error)?.stack ?? e) }),
  );
});
process.on('disconnect', () => process.exit(0));
