/**
 * `POST /servers/{id}/action` of the fake: `forceDelete`, `restore`, `lock`, `unlock`, `os-stop`,
 * `os-start`. Sources: `nova/api/openstack/compute/deferred_delete.py`, `lock_server.py`,
 * `servers.py`; conflict text from `common.raise_http_conflict_for_instance_invalid_state`.
 *
 * @module
 */
import { checkCreateQuota } from '../quota.js';
import { fault, type Reply } from '../respond.js';
import type { ServerRecord } from '../state.js';
import { atLeast } from '../views.js';
import type { Ctx, Engine } from './context.js';
import { findServer, lockedConflict, notFound } from './servers.js';

function invalidState(r: ServerRecord, action: string): Reply {
  const [attr, state] = r.taskState ? ['task_state', r.taskState] : ['vm_state', r.vmState];
  return fault(409, `Cannot '${action}' instance ${r.id} while it is in ${attr} ${state}`, r.id);
}

/** `POST /servers/{id}/action`. */
export function serverAction(e: Engine, ctx: Ctx, id: string): Reply {
  if (ctx.bodyMalformed) return fault(400, 'Malformed request body');
  const body = ctx.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return fault(400, 'The request body is invalid');
  const action = Object.keys(body as object)[0];
  if (action === undefined) return fault(400, 'There is no such action: None');
  const known = ['forceDelete', 'restore', 'lock', 'unlock', 'os-stop', 'os-start'];
  if (!known.includes(action)) return fault(400, `There is no such action: ${action}`);
  const r = findServer(e, id);
  if (!r) return notFound(id);
  const arg = (body as Record<string, unknown>)[action];
  const accepted: Reply = { status: 202, serverId: id };
  switch (action) {
    case 'forceDelete': {
      const locked = lockedConflict(r, ctx);
      if (locked) return locked;
      e.compute.requestDelete(r, true);
      return accepted;
    }
    case 'restore': {
      if (r.vmState !== 'soft-delete') return invalidState(r, 'restore');
      const verdict = checkCreateQuota(r.flavor, 1, 1, e.countedUsage(), e.quota.limits);
      if (!verdict.ok) {
        e.store.record.quota403s++;
        return fault(403, verdict.message, id);
      }
      e.compute.restore(r);
      return accepted;
    }
    case 'lock': {
      const reason =
        atLeast(ctx.version, 73) && arg && typeof arg === 'object' && 'locked_reason' in arg
          ? String((arg as Record<string, unknown>).locked_reason)
          : null;
      e.store.update(r, { locked: true, lockedReason: reason });
      return accepted;
    }
    case 'unlock':
      e.store.update(r, { locked: false, lockedReason: null });
      return accepted;
    case 'os-stop': {
      const locked = lockedConflict(r, ctx);
      if (locked) return locked;
      if (r.vmState !== 'active' && r.vmState !== 'error') return invalidState(r, 'stop');
      e.store.update(r, { vmState: 'stopped', status: 'SHUTOFF', powerState: 4 });
      return accepted;
    }
    default: {
      const locked = lockedConflict(r, ctx);
      if (locked) return locked;
      if (r.vmState !== 'stopped') return invalidState(r, 'start');
      e.store.update(r, { vmState: 'active', status: 'ACTIVE', powerState: 1 });
      return accepted;
    }
  }
}
