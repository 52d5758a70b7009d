/**
 * `node build/bench/fleetSimMain.js [jobs] [hosts] [workersPerHost] [nova-guard|autopkgtest|fleet-watcher] [quotaCores]`: one
 * simulated day alone, printed as JSON (the section of `npm run bench` is `--only sim`). The quota defaults to the seed
 * fleet's 515 cores for its 240 workers, scaled with the workers (515 at 30 hosts x 8, 5,150 at 300 x 8).
 *
 * @module
 */
import { fleetSimConfig, timedFleetSim } from './fleetSim.js';

const [jobs, hosts, workers, policy, quota] = process.argv.slice(2);
// `[policy]`: `nova-guard`, `autopkgtest`, or `fleet-watcher` (nova-guard with the hosts sharing one fleet watcher).
const watcher = policy === 'fleet-watcher';
const cfg = fleetSimConfig({
  ...(watcher ? { fleetWatcher: true } : {}),
  ...(jobs ? { jobs: Number(jobs) } : {}),
  ...(hosts ? { hosts: Number(hosts) } : {}),
  ...(workers ? { workersPerHost: Number(workers) } : {}),
  // The seed fleet's 515 cores for its 240 workers, scaled with the workers (5,150 for 300 hosts x 8).
  ...(quota ? { quotaCores: Number(quota) } : hosts || workers ? { quotaCores: Math.round((515 * Number(hosts ?? 30) * Number(workers ?? 8)) / 240) } : {}),
  ...(policy && !watcher ? { policy: policy as 'nova-guard' | 'autopkgtest' } : {}),
});
timedFleetSim(cfg).then(
  (row) => console.log(JSON.stringify(row, null, 2)),
  (e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  },
);
