/**
 * The fake's router: maps method and path (without `/v2.1`) to a handler. Unknown routes answer
 * 404 `itemNotFound` "The resource could not be found.", as Nova's Fault does for HTTPNotFound.
 *
 * @module
 */
import { fault, type Reply } from '../respond.js';
import type { Ctx, Engine } from './context.js';
import { serverAction } from './actions.js';
import {
  getLimits,
  listFlavors,
  revertQuotaSet,
  showFlavor,
  showQuotaSet,
  updateQuotaSet,
} from './misc.js';
import { createServer, deleteServer, listServers, showServer } from './servers.js';
import { listImages } from './images.js';

/** The server id in a `/servers/{id}[/...]` path, if any. */
export function serverIdOf(path: string): string | undefined {
  const m = /^\/servers\/([^/]+)(?:\/|$)/.exec(path);
  return m && m[1] !== 'detail' ? decodeURIComponent(m[1]!) : undefined;
}

/** Route one request. */
export function route(e: Engine, ctx: Ctx): Reply {
  const parts = ctx.path.split('/').filter(Boolean).map(decodeURIComponent);
  const m = ctx.method;
  const [a, b, c] = parts;
  const n = parts.length;
  if (a === 'servers') {
    if (n === 1 && m === 'GET') return listServers(e, ctx, false);
    if (n === 1 && m === 'POST') return createServer(e, ctx);
    if (n === 2 && b === 'detail' && m === 'GET') return listServers(e, ctx, true);
    if (n === 2 && m === 'GET') return showServer(e, ctx, b!);
    if (n === 2 && m === 'DELETE') return deleteServer(e, ctx, b!);
    if (n === 3 && c === 'action' && m === 'POST') return serverAction(e, ctx, b!);
  } else if (a === 'flavors') {
    if (n === 1 && m === 'GET') return listFlavors(e, ctx, false);
    if (n === 2 && b === 'detail' && m === 'GET') return listFlavors(e, ctx, true);
    if (n === 2 && m === 'GET') return showFlavor(e, ctx, b!);
  } else if (a === 'images' && m === 'GET' && (n === 1 || (n === 2 && b === 'detail'))) {
    return listImages(ctx, n === 2);
  } else if (a === 'limits' && n === 1 && m === 'GET') {
    return getLimits(e, ctx);
  } else if (a === 'os-quota-sets' && b !== undefined) {
    if (n === 2 && m === 'GET') return showQuotaSet(e, ctx, b, false);
    if (n === 3 && c === 'detail' && m === 'GET') return showQuotaSet(e, ctx, b, true);
    if (n === 2 && m === 'PUT') return updateQuotaSet(e, ctx, b);
    if (n === 2 && m === 'DELETE') return revertQuotaSet(e, ctx, b);
  }
  return fault(404, 'The resource could not be found.');
}
