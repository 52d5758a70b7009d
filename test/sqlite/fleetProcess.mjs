// One process of test/sqlite/fleetProcesses.test.ts: a NovaClient on a FakeNova (HTTP) with a
// SqliteQuotaLedger.forClient(..., { fleetWatcher: true }) on the test's directory and a QuotaGuard
// on that ledger. It reports, every 20 ms until told `go`, whether it watches or consumes; on `go`
// it runs its jobs (a guarded create, whose ACTIVE wait the fleet answers, then a delete waited to
// the 404) and answers with what it sent to Nova and its fleet counters. Imports the built package
// (dist/, through the package's own name). Config: JSON in argv[2].
import process from 'node:process';
import { setInterval, clearInterval } from 'node:timers';
import { URL } from 'node:url';
import axios from 'axios';
import { NovaClient, QuotaGuard } from 'nova-guard';
import { SqliteQuotaLedger } from 'nova-guard/sqlite';

const cfg = JSON.parse(process.argv[2]);
const sent = [];
const http = axios.getAdapter('http');
const adapter = (config) => {
  sent.push(`${(config.method ?? 'get').toUpperCase()} ${new URL(config.url ?? '', config.baseURL ?? cfg.endpoint).pathname.replace(/^\/v2\.1/, '')}`);
  return http(config);
};
const client = new NovaClient({ endpoint: cfg.endpoint, token: `admin:${cfg.projectId}`, microversion: '2.79', adapter });
const ledger = await SqliteQuotaLedger.forClient(client, { path: cfg.dir, holder: cfg.holder, fleetWatcher: true, fleetLeaseTtlMs: cfg.ttlMs });
const guard = new QuotaGuard(client, { ledger, activeIntervalMs: 100, minDelayMs: 20, baseDelayMs: 50, maxDelayMs: 400, maxWaitMs: 30_000 });
const fleet = ledger.fleetWatcher;
const state = setInterval(() => process.send?.({ watching: fleet.watching, consuming: fleet.consuming }), 20);
process.on('message', async (m) => {
  if (!m.go) return;
  clearInterval(state);
  const wasWatching = fleet.watching;
  const before = sent.length;
  const outcomes = [];
  try {
    for (let j = 0; j < cfg.jobs; j++) {
      const server = await guard.createServer({ name: `${cfg.holder}-${j}`, flavorRef: '1', imageRef: 'img', networks: 'none' });
      outcomes.push((await client.deleteServer(server.id, { wait: true, intervalMs: 100, timeoutMs: 30_000 })).outcome);
    }
  } catch (e) {
    outcomes.push(`${e?.name}: ${e?.message}`);
  }
  const result = { wasWatching, watching: fleet.watching, sent: sent.slice(before), outcomes, stats: { ...fleet.stats } };
  await guard.close();
  await ledger.close();
  process.send?.({ result }, () => process.exit(0));
});
