/** Run one of this package's CLI commands in-process, capturing stdout, stderr and the exit code. */
import { Command } from 'commander';
import { vi } from 'vitest';
import type { NovaClient } from '../../src/index.js';

export interface CliRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Build a program with `register(parent, getClient)` under the `parent` subcommand (`quota` or
 * `server`), run `argv`, and return what it printed and the exit code (`process.exitCode`, reset
 * afterwards). A thrown error (bad usage) rejects.
 */
export async function runCli(
  parent: 'quota' | 'server',
  register: (cmd: Command, getClient: () => Promise<NovaClient>) => void,
  client: NovaClient,
  argv: string[],
): Promise<CliRun> {
  const program = new Command('nova-guard').exitOverride();
  register(program.command(parent), () => Promise.resolve(client));
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
  process.exitCode = undefined;
  try {
    await program.parseAsync([parent, ...argv], { from: 'user' });
    return { exitCode: typeof process.exitCode === 'number' ? process.exitCode : 0, stdout: out.join('\n'), stderr: err.join('\n') };
  } finally {
    process.exitCode = undefined;
    log.mockRestore();
    error.mockRestore();
  }
}
