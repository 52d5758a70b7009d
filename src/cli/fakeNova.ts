/**
 * `nova-guard fake-nova [--port 0] [--cores 20] [--build-delay-ms 500ms] [--delete-delay-ms 3s] ...`:
 * run the fake Nova standalone, for trying the CLI and for testing workers written in other
 * languages. Runs until SIGINT or SIGTERM. Listens on a free port by default (`--port 0`; Nova's
 * 8774 is often taken, or is a real Nova) and prints the URL it bound and the
 * `export OS_ENDPOINT=... OS_TOKEN=...` line to paste into another shell; a taken `--port` is a
 * {@link ConfigError} (exit 1) suggesting `--port 0` (a free port). Delay flags take bare ms or a
 * unit (`500ms`, `5s`).
 *
 * @module
 */
import type { Command } from 'commander';
import { FakeNova, type FakeNovaOptions } from '../testing/index.js';
import { ConfigError } from '../errors/index.js';
import { parseDurationFlag, parseIntFlag } from './common.js';

function int(value: string | undefined, flag: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  return parseIntFlag(value, flag, min);
}

/** Register `fake-nova` on the root program. */
export function registerFakeNovaCommand(program: Command): void {
  program
    .command('fake-nova')
    .description('run the fake Nova on 127.0.0.1 (for trying nova-guard and testing workers)')
    .option('--port <port>', 'port to listen on (default 0: a free port; the URL is printed)', '0')
    .option('--cores <n>', 'core quota (maxTotalCores); -1 = unlimited', '20')
    .option('--instances <n>', 'instance quota; -1 = unlimited', '10')
    .option('--ram <mib>', 'RAM quota in MiB; -1 = unlimited', '51200')
    .option('--build-delay-ms <duration>', 'time a server stays in BUILD: ms, or 500ms, 5s', '500')
    .option('--delete-delay-ms <duration>', 'time a server stays in task_state deleting: ms, or 500ms, 5s', '3000')
    .option('--soft-delete', 'soft-delete servers (reclaim_instance_interval > 0)')
    .action(async (flags: Record<string, string | boolean | undefined>) => {
      const options: FakeNovaOptions = {
        port: int(flags['port'] as string, '--port', 0)!,
        maxTotalCores: int(flags['cores'] as string, '--cores', -1)!,
        maxTotalInstances: int(flags['instances'] as string, '--instances', -1)!,
        maxTotalRAMSize: int(flags['ram'] as string, '--ram', -1)!,
        buildDelayMs: parseDurationFlag(flags['buildDelayMs'] as string, '--build-delay-ms', { allowZero: true }),
        deleteDelayMs: parseDurationFlag(flags['deleteDelayMs'] as string, '--delete-delay-ms', { allowZero: true }),
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
      const stopped = new Promise<void>((resolve) => {
        const stop = (): void => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      console.log(`fake Nova listening on ${nova.endpoint} (project ${nova.projectId})`);
      console.log('In another shell:');
      console.log(`  export OS_ENDPOINT=${nova.endpoint} OS_TOKEN=fake:${nova.projectId}`);
      console.log('  nova-guard limits            # or: node dist/cli/main.js limits, in a clone of nova-guard');
      console.log('  id=$(nova-guard server create try --flavor m1.tiny --image cirros-0.6.2-x86_64-disk --nic none --wait -f value -c id)');
      console.log('  nova-guard server delete --wait --interval-ms 500ms "$id"');
      await stopped;
      await nova.close();
    });
}
