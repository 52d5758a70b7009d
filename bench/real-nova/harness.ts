/**
 * What the real-Nova benches share: the harness's settings (from `$REALNOVA_STATE/env`), the requests
 * nova-api logged between two marks, and a bench project with its own quota.
 *
 * @module
 */
import { existsSync, openSync, readFileSync, readSync, closeSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NovaClient, waitForActive } from 'nova-guard';

/** The repository root (this file is compiled to build/bench/real-nova/). */
export const REPO = join(import.meta.dirname, '..', '..', '..');
/** The harness's state folder. */
export const STATE = process.env['REALNOVA_STATE'] ?? join(REPO, '.real-nova');
/** Microversion every nova-guard client of the bench sends. */
export const MICROVERSION = '2.79';

/** The harness's settings (noauth2 mode). */
export interface Harness {
  endpoint: string;
  /** noauth2 base project; the benches add a suffix. */
  project: string;
  imageId: string;
  flavor1: string;
  flavor2: string;
}

/** Read `$REALNOVA_STATE/env` (the `export X=...` lines start.sh writes); the process env wins. */
export function harness(): Harness {
  const file = join(STATE, 'env');
  const vars: Record<string, string> = {};
  if (existsSync(file)) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const m = /^(?:export\s+)?([A-Z_0-9]+)=(.*)$/.exec(line.trim());
      if (m) vars[m[1]!] = m[2]!.replace(/^['"]|['"]$/g, '');
    }
  }
  const get = (k: string): string => {
    const v = process.env[k] ?? vars[k];
    if (!v) throw new Error(`${k} is not set: start the harness (scripts/real-nova/start.sh) first`);
    return v;
  };
  if ((process.env['REALNOVA_AUTH'] ?? vars['REALNOVA_AUTH']) !== 'noauth') throw new Error('the real-Nova bench runs on the noauth2 harness (unset REALNOVA_KEYSTONE)');
  return { endpoint: get('NOVA_ENDPOINT'), project: get('NOVA_PROJECT'), imageId: get('NOVA_IMAGE_ID'), flavor1: get('NOVA_FLAVOR_ID'), flavor2: get('NOVA_FLAVOR_ID_2VCPU') };
}

/** One request line of nova-api's request log. */
export interface LoggedRequest {
  method: string;
  /** Path with ids replaced by `{id}`, without the query, without `/v2.1`. */
  kind: string;
  status: number;
  /** `GET /servers/{id} 404` style key. */
  key: string;
}

/** eventlet's access line (`nova.osapi_compute.wsgi.server`): `"GET /v2.1/servers/<id> HTTP/1.1" status: 404`. */
const REQUEST_LINE = /nova\.osapi_compute\.wsgi\.server .*"(GET|POST|PUT|DELETE|HEAD|PATCH) (\S+) HTTP\/[\d.]+" status: (\d+)/;

/** Request lines from nova-api's log (nova.api.openstack.requestlog), read between marks. */
export class NovaApiLog {
  /** @param file - nova-api's log. @default `$REALNOVA_STATE/logs/nova-api.log` */
  constructor(readonly file = join(STATE, 'logs', 'nova-api.log')) {}

  /** The log's current end (a mark). */
  mark(): number {
    return statSync(this.file).size;
  }

  /** Requests logged from `from` up to `to` (default: now). */
  since(from: number, to = this.mark()): LoggedRequest[] {
    const fd = openSync(this.file, 'r');
    try {
      const buf = Buffer.alloc(Math.max(0, to - from));
      readSync(fd, buf, 0, buf.length, from);
      return buf
        .toString('utf8')
        .split('\n')
        .flatMap((line) => {
          const m = REQUEST_LINE.exec(line);
          if (!m) return [];
          const kind = m[2]!
            .split('?')[0]!
            .replace(/^\/v2\.1(?=\/|$)/, '')
            .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '{id}')
            .replace(/\/(nova-guard[^/]*|[0-9a-f]{32})(?=\/|$)/g, '/{project}') || '/';
          const status = Number(m[3]);
          return [{ method: m[1]!, kind, status, key: `${m[1]} ${kind}${m[2]!.includes('?') ? '?…' : ''} ${status}` }];
        });
    } finally {
      closeSync(fd);
    }
  }

  /** Wait until nova-api has written what it answered (its log is written at the end of each request). */
  async settle(): Promise<number> {
    let last = this.mark();
    for (;;) {
      await sleep(300);
      const now = this.mark();
      if (now === last) return now;
      last = now;
    }
  }
}

/** Count requests by key. */
export function byKind(requests: readonly LoggedRequest[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of requests) out[r.key] = (out[r.key] ?? 0) + 1;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/** A bench project under noauth2: admin and member tokens, quota, cleanup. */
export class BenchProject {
  readonly name: string;
  readonly adminToken: string;
  readonly memberToken: string;
  readonly admin: NovaClient;

  constructor(
    readonly nova: Harness,
    suffix: string,
  ) {
    this.name = `${nova.project}-${suffix}`;
    this.adminToken = `admin:${this.name}`;
    this.memberToken = `ci-bot:${this.name}`;
    this.admin = new NovaClient({ endpoint: nova.endpoint, token: this.adminToken, microversion: MICROVERSION, requestTimeoutMs: 120_000 });
  }

  /** `PUT /os-quota-sets/{project}` (Nova API reference, "Update Quotas"). */
  async setQuota(quota: Record<string, number>): Promise<void> {
    await this.admin.request({ method: 'PUT', path: `/os-quota-sets/${encodeURIComponent(this.name)}`, body: { quota_set: quota } });
  }

  /** Delete every server of the project and wait for each 404. */
  async cleanup(): Promise<void> {
    const ids = (await this.admin.listServers()).map((s) => s.id);
    if (ids.length > 0) await this.admin.deleteServers(ids, { wait: true, timeoutMs: 300_000 });
  }

  /** Create `n` servers of `flavorRef` (4 POSTs at a time) and wait until all are ACTIVE. */
  async createFleet(n: number, label: string, flavorRef = this.nova.flavor1): Promise<string[]> {
    const ids: string[] = [];
    const queue = Array.from({ length: n }, (_, i) => i);
    await Promise.all(
      Array.from({ length: Math.min(4, n) }, async () => {
        for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
          const s = await this.admin.createServer({ name: `bench-${label}-${i}`, flavorRef, imageRef: this.nova.imageId, networks: 'none' });
          ids.push(s.id);
        }
      }),
    );
    for (const id of ids) {
      const r = await waitForActive(this.admin, id, { intervalMs: 500, timeoutMs: 300_000 });
      if (r.outcome !== 'active') throw new Error(`fleet ${label}: server ${id} ended ${r.outcome}`);
    }
    return ids;
  }
}
