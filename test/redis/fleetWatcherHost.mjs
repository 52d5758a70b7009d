// One host of test/redis/fleetFailover.test.ts: a NovaClient on a FakeNova (HTTP) with a
// RedisQuotaLedger.forClient(..., { fleetWatcher: true }). It only takes part in the election and
// watches for the fleet when elected; the test stops it (SIGSTOP) or kills it (SIGKILL). Imports the
// built package (dist/, through the package's own name). Config: JSON in argv[2].
import process from 'node:process';
import { setInterval, clearInterval } from 'node:timers';
import { NovaClient } from 'nova-guard';
import { RedisQuotaLedger } from 'nova-guard/redis';

const cfg = JSON.parse(process.argv[2]);
const client = new NovaClient({ endpoint: cfg.endpoint, token: `admin:${cfg.projectId}`, microversion: '2.79' });
const ledger = await RedisQuotaLedger.forClient(client, { url: cfg.redisUrl, holder: cfg.holder, fleetWatcher: true, fleetLeaseTtlMs: cfg.ttlMs });
// Keep the process alive (the watcher's timers are unref'd) and tell the test once it watches.
const alive = setInterval(() => {
  if (ledger.fleetWatcher.watching) process.send?.({ watching: true, epoch: ledger.fleetWatcher.epoch });
}, 20);
process.on('SIGTERM', () => {
  clearInterval(alive);
  void ledger.close().then(() => process.exit(0));
});
