/**
 * `node build/bench/fleetSimMain.js [jobs] [hosts] [workersPerHost] [nova-guard|autopkgtest|fleet-watcher]`: one simulated day
 * alone, printed as JSON (the section of `npm run bench` is `--only sim`).
 *
 * @module
 */
import { fleetSimConfig, timedFleetSim } from './fleetSim.js';

const [jobs, hosts, workers, policy] = process.argv.slice(2);
// `[policy]`: `nova-guard`, `autopkgtest`, or `fleet-watcher` (nova-guard with the hosts sharing one fleet watcher).
const watcher = policy === 'fleet-watcher';
const cfg = fleetSimConfig({
  ...(watcher ? { fleetWatcher: true } : {}),
  ...(jobs ? { jobs: Number(jobs) } : {}),
  ...(hosts ? { hosts: Number(hosts) } : {}),
  ...(workers ? { workersPerHost: Number(workers) } : {}),
  ...(policy && !watcher ? { policy: policy as 'nova-guard' | 'autopkgtest' } : {}),
});
timedFleetSim(cfg).then(
  (row) => console.log(JSON.stringify(row, null, 2)),
  (e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  },
);
