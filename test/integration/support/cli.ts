/**
 * The built command line (dist/cli/main.js) for the suites that run it as a child process.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** The repository root. */
export const REPO = join(import.meta.dirname, '..', '..', '..');
/** The CLI entry point `npm run build` writes. */
export const CLI = join(REPO, 'dist', 'cli', 'main.js');

/** `npm run build`, so that {@link CLI} is the code under test; throws with the compiler's output. */
export async function buildCli(): Promise<void> {
  try {
    await promisify(execFile)('npm', ['run', 'build', '--silent'], { cwd: REPO, timeout: 180_000 });
  } catch (e) {
    const x = e as { stdout?: string; stderr?: string };
    throw new Error(`npm run build failed, so dist/cli/main.js cannot be tested:\n${x.stdout ?? ''}${x.stderr ?? ''}`, { cause: e });
  }
}

/**
 * The environment of a CLI child: this process's, with `NOVA_ENDPOINT` and `NOVA_TOKEN` set and every
 * `OS_*` variable removed (so that a cloud configured on the machine is never used).
 */
export function cliEnv(endpoint: string, token: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NOVA_ENDPOINT: endpoint, NOVA_TOKEN: token, ...extra };
  for (const k of Object.keys(env)) if (k.startsWith('OS_')) delete env[k];
  return env;
}
