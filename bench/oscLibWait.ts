/**
 * The baseline of the fleet benchmark: osc-lib's `wait_for_delete` (`osc_lib/utils/__init__.py`),
 * exactly as it polls, one `GET /servers/{id}` per server:
 *
 * ```python
 * total_time = 0
 * while total_time < timeout:
 *     try:
 *         res = manager.get(res_id)
 *     except Exception as ex:
 *         if type(ex).__name__ in exception_name:   # NotFound
 *             return True
 *         raise
 *     status = getattr(res, status_field, '').lower()
 *     if status in error_status:                     # ['error']
 *         return False
 *     time.sleep(sleep_time)                         # 5 s
 *     total_time += sleep_time
 * return False
 * ```
 *
 * Only a 404 ends the wait (status DELETED does not), no retries, and the timeout counts sleeps only.
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { NotFoundError, type NovaClient } from 'nova-guard';

/** osc-lib's `wait_for_delete` over `client.getServer`: resolves true on 404, false on ERROR or timeout. */
export async function oscLibWaitForDelete(client: NovaClient, id: string, sleepTimeMs: number, timeoutMs: number): Promise<boolean> {
  let totalMs = 0;
  while (totalMs < timeoutMs) {
    try {
      const server = await client.getServer(id, { retry: false });
      if (String(server.status ?? '').toLowerCase() === 'error') return false;
    } catch (e) {
      if (e instanceof NotFoundError) return true;
      throw e;
    }
    await sleep(sleepTimeMs);
    totalMs += sleepTimeMs;
  }
  return false;
}
