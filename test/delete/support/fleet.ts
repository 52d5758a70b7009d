/**
 * A fleet of one process (`InProcessFleet`) whose first client is the watcher and whose others consume,
 * for the tests of what a watcher's looks prove to the other hosts.
 */
import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';
import { expect, vi } from 'vitest';
import { InProcessFleet, type NovaClient } from '../../../src/index.js';
import type { FakeNova } from '../../../src/testing/index.js';
import { clientFor } from '../../helpers.js';

/** What a cut keeps of the ids Nova lists, in Nova's order. */
export type Cut = (ids: readonly string[]) => readonly string[];

/**
 * A client of `nova` whose brief listings (`GET /servers`) and whole-project detail listings (`GET
 * /servers/detail` with no `changes-since`) after the first keep only what `cut` keeps (no next link), its requests recorded (`METHOD /path`). `answer` may answer a request in Nova's
 * place (a proxy's page): return undefined to let it through.
 */
export function cutClient(
  nova: FakeNova,
  cut: Cut,
  answer: (method: string, path: string, config: InternalAxiosRequestConfig) => AxiosResponse | undefined = () => undefined,
): { client: NovaClient; sent: string[] } {
  const sent: string[] = [];
  let listings = 0;
  const adapter: AxiosAdapter = async (config) => {
    const url = new URL(config.url ?? '', config.baseURL ?? nova.endpoint);
    const path = url.pathname.replace(/^\/v2\.1/, '');
    const method = (config.method ?? 'get').toUpperCase();
    sent.push(`${method} ${path}`);
    const mine = answer(method, path, config);
    if (mine) return mine;
    const res = await nova.adapter(config);
    // The whole project's detail listing (no `changes-since`) stands in for a brief one when a round
    // wants status too: it is cut the same way.
    const whole = path === '/servers/detail' && (config.params as Record<string, unknown> | undefined)?.['changes-since'] === undefined;
    if (method !== 'GET' || (path !== '/servers' && !whole) || res.status !== 200 || ++listings === 1) return res;
    const raw = typeof res.data === 'string' ? res.data : JSON.stringify(res.data);
    const body = JSON.parse(raw) as { servers: Array<{ id: string }> };
    const kept = new Set(cut(body.servers.map((s) => s.id)));
    return { ...res, data: JSON.stringify({ servers: body.servers.filter((s) => kept.has(s.id)) }) };
  };
  return { client: clientFor(nova, { adapter }), sent };
}

/**
 * Join `watcher` then each of `consumers` to a new fleet (on fake timers: the first round runs) and
 * check the roles: the first client watches, every other consumes.
 */
export async function joinedFleet<C extends NovaClient[]>(
  watcher: NovaClient,
  ...consumers: C
): Promise<{ fleet: InProcessFleet; watcher: InProcessFleet.Member; consumers: { [K in keyof C]: InProcessFleet.Member } }> {
  const fleet = new InProcessFleet();
  const first = await fleet.join(watcher);
  const rest: InProcessFleet.Member[] = [];
  for (const client of consumers) rest.push(await fleet.join(client));
  await vi.advanceTimersByTimeAsync(0);
  expect([first.watching, ...rest.map((m) => m.consuming)]).toEqual([true, ...rest.map(() => true)]);
  return { fleet, watcher: first, consumers: rest as { [K in keyof C]: InProcessFleet.Member } };
}
