/**
 * The built CLI (dist/cli/main.js) as a child process: piped, or in a pseudo-terminal through
 * util-linux `script`. The build is refreshed first when a file under src/ is newer than it
 * (one build at a time across test files: a lock directory).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = `${REPO}dist/cli/main.js`;

function newestMs(dir: string): number {
  let max = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    max = Math.max(max, e.isDirectory() ? newestMs(p) : statSync(p).mtimeMs);
  }
  return max;
}

function builtMs(): number {
  try {
    return statSync(CLI).mtimeMs;
  } catch {
    return 0;
  }
}

/** Build dist/ when it is missing or older than src/ (a lock directory keeps builds one at a time). */
export async function ensureBuilt(): Promise<void> {
  const lock = `${REPO}.cli-build.lock`;
  for (;;) {
    if (builtMs() >= newestMs(`${REPO}src`)) return;
    try {
      mkdirSync(lock);
    } catch {
      await sleep(200);
      continue;
    }
    try {
      if (builtMs() < newestMs(`${REPO}src`)) execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: REPO, stdio: 'ignore' });
      return;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

export interface BinaryRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Time from the start to the first byte on stderr, in ms (undefined: none). */
  firstStderrMs: number | undefined;
  /** Time from the start to the first byte on stdout, in ms (undefined: none). */
  firstStdoutMs: number | undefined;
}

/** The environment without the caller's OS_* / NOVA_* variables, with `env` over it. */
export function cleanEnv(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('OS_') && !k.startsWith('NOVA_')) out[k] = v;
  return { ...out, XDG_CONFIG_HOME: '/nonexistent', XDG_CONFIG_DIRS: '/nonexistent', ...env };
}

/** Run the CLI piped (stdout and stderr are pipes, not terminals). */
export function runPiped(args: string[], env: Record<string, string>, onStart?: (pid: number) => void): Promise<BinaryRun> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, [CLI, ...args], { env: cleanEnv(env), cwd: '/' });
    if (child.pid !== undefined) onStart?.(child.pid);
    let stdout = '';
    let stderr = '';
    let firstStderrMs: number | undefined;
    let firstStdoutMs: number | undefined;
    child.stdout.on('data', (d: Buffer) => {
      firstStdoutMs ??= performance.now() - started;
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      firstStderrMs ??= performance.now() - started;
      stderr += d.toString();
    });
    child.on('close', (code) => resolve({ code, stdout, stderr, firstStderrMs, firstStdoutMs }));
  });
}

/** True when util-linux `script` can give the CLI a pseudo-terminal here. */
export const hasScript = spawnSync('script', ['-qec', 'true', '/dev/null'], { stdio: 'ignore' }).status === 0;

/** Run the CLI in a pseudo-terminal (`script -qec`): stdout and stderr are the terminal, merged. */
export function runInTerminal(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, CLI, ...args].map(quote).join(' ');
  return new Promise((resolve) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...cleanEnv(env), COLUMNS: '120', TERM: 'xterm' }, cwd: '/' });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code, output: output.replace(/\r\n/g, '\n') }));
  });
}

/** Run the CLI piped until stderr matches `pattern` (then SIGTERM) or `limitMs` passes; the time of the match in ms. */
export function runUntilStderr(args: string[], env: Record<string, string>, pattern: RegExp, limitMs = 15_000): Promise<{ stderr: string; matchedMs: number | undefined }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, [CLI, ...args], { env: cleanEnv(env), cwd: '/' });
    let stderr = '';
    let matchedMs: number | undefined;
    const limit = setTimeout(() => child.kill('SIGTERM'), limitMs);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (matchedMs === undefined && pattern.test(stderr)) {
        matchedMs = performance.now() - started;
        child.kill('SIGTERM');
      }
    });
    child.on('close', () => {
      clearTimeout(limit);
      resolve({ stderr, matchedMs });
    });
  });
}
