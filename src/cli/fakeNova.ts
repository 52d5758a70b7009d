/**
 * `nova-guard fake-nova [--port 0] [--cores 20] [--build-delay 500ms] [--delete-delay 3s] ...`:
 * run the fake Nova standalone, for trying the CLI and for testing workers written in other
 * languages. Runs until SIGINT or SIGTERM. Listens on a free port by default (`--port 0`; Nova's
 * 8774 is often taken, or is a real Nova) and prints the URL it bound and the
 * `export OS_ENDPOINT=... OS_TOKEN=...` line to paste into another shell; a taken `--port` is a
 * {@link ConfigError} (exit 1) suggesting `--port 0` (a free port). Delay flags take a unit (`500ms`,
 * `5s`; `--build-delay-ms` and `--delete-delay-ms` are old spellings that warn). When stopped it
 * prints one line ({@link stopAccount}): requests served, quota 403s sent, servers left.
 *
 * @module
 */
import type { Command } from 'commander';
import { FakeNova, type FakeNovaOptions } from '../testing/index.js';
import { ConfigError } from '../errors/index.js';
import { addDurationOption, parseIntFlag } from './common.js';

function int(value: string | undefined, flag: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  return parseIntFlag(value, flag, min);
}

/** Servers named by id in the account of {@link stopAccount} when there are at most this many. */
export const ACCOUNT_MAX_IDS = 5;

/**
 * The one line `fake-nova` prints when it stops: the requests it served, the quota 403s it sent
 * (its quota check refusing `POST /servers` or a restore; injected faults are not counted) and the
 * servers left (not deleted; with their ids when there are at most {@link ACCOUNT_MAX_IDS}).
 * @param how - what stopped it, e.g. `SIGTERM`.
 */
export function stopAccount(nova: Pick<FakeNova, 'requests' | 'quotaRecord' | 'listServerStates'>, how: string): string {
  const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;
  const left = nova.listServerStates().map((s) => s.id);
  const ids = left.length > 0 && left.length <= ACCOUNT_MAX_IDS ? `: ${left.join(', ')}` : '';
  return (
    `fake Nova stopped (${how}): ${plural(nova.requests.length, 'request')} served, ` +
    `${plural(nova.quotaRecord().quota403s, 'quota 403')} sent, ${plural(left.length, 'server')} left${ids}`
  );
}

/** Register `fake-nova` on the root program. */
export function registerFakeNovaCommand(program: Command): void {
  const cmd = program
    .command('fake-nova')
    .description('run the fake Nova on 127.0.0.1 (for trying nova-guard and testing workers); when stopped (SIGINT, SIGTERM) it prints one line: requests served, quota 403s sent, servers left')
    .option('--port <port>', 'port to listen on (default 0: a free port; the URL is printed)', '0')
    .option('--cores <n>', 'core quota (maxTotalCores); -1 = unlimited', '20')
    .option('--instances <n>', 'instance quota; -1 = unlimited', '10')
    .option('--ram <mib>', 'RAM quota in MiB; -1 = unlimited', '51200')
    .option('--soft-delete', 'soft-delete servers (reclaim_instance_interval > 0)');
  addDurationOption(cmd, { flag: '--build-delay', old: ['--build-delay-ms'], description: 'time a server stays in BUILD', allowZero: true, default: { ms: 500, text: '500ms' } });
  addDurationOption(cmd, { flag: '--delete-delay', old: ['--delete-delay-ms'], description: 'time a server stays in task_state deleting', allowZero: true, default: { ms: 3000, text: '3s' } });
  cmd.action(async (flags: Record<string, string | number | boolean | undefined>) => {
    const options: FakeNovaOptions = {
      port: int(flags['port'] as string, '--port', 0)!,
      maxTotalCores: int(flags['cores'] as string, '--cores', -1)!,
      maxTotalInstances: int(flags['instances'] as string, '--instances', -1)!,
      maxTotalRAMSize: int(flags['ram'] as string, '--ram', -1)!,
      buildDelayMs: flags['buildDelay'] as number,
      deleteDelayMs: flags['deleteDelay'] as number,
      softDelete: Boolean(flags['softDelete']),
    };
    let nova: FakeNova;
    try {
      nova = await FakeNova.start(options);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new ConfigError(`port ${options.port} on 127.0.0.1 is taken (EADDRINUSE): pass --port 0 for a free port, or another --port`, { cause: e });
      }
      throw e;
    }
    // Listen for the signals before saying anything: a caller may stop us as soon as it reads the lines.
    const stopped = new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    console.log(`fake Nova listening on ${nova.endpoint} (project ${nova.projectId})`);
    console.log('In another shell:');
    console.log(`  export OS_ENDPOINT=${nova.endpoint} OS_TOKEN=fake:${nova.projectId}`);
    console.log('  nova-guard limits            # or: node dist/cli/main.js limits, in a clone of nova-guard');
    console.log('  id=$(nova-guard server create try --flavor m1.tiny --image cirros-0.6.2-x86_64-disk --nic none --wait -f value -c id)');
    console.log('  nova-guard server delete --wait --interval 500ms "$id"');
    const signal = await stopped;
    // Said before closing (the servers left are those of the run), so a second signal during the close still has it.
    console.log(stopAccount(nova, signal));
    await nova.close();
  });
}
