import { writeFileSync } from 'node:fs';
/**
 * Shared parts of the multi-process fleet tests (fleet.test.ts, fleetNetwork.test.ts): worker
 * "hosts" are child processes (fleetWorker.mjs, on the built package) sharing one FakeNova over
 * HTTP and one Redis. Builds dist/ when it is missing or older than src/.
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FakeNova, FakeServerView } from '../../src/testing/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WORKER = fileURLToPath(new URL('./fleetWorker.mjs', import.meta.url));

/** Wait `ms` on the real clock. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Newest mtime of the .ts files under `dir`. */
function newest(dir: string): number {
  let max = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    max = Math.max(max, e.isDirectory() ? newest(p) : e.name.endsWith('.ts') ? statSync(p).mtimeMs : 0);
  }
  return max;
}

/** The workers import dist/ (the package by its own name): build it when missing or older than src/. */
export function ensureBuilt(): void {
  const marker = join(ROOT, 'dist/redis/index.js');
  if (existsSync(marker) && statSync(marker).mtimeMs >= newest(join(ROOT, 'src'))) return;
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
}

/** What one host runs (see fleetWorker.mjs); an option left out takes the library's default. */
export interface HostConfig {
  holder: string;
  workers: number;
  jobs: number;
  /** How long a job "tests" on its server, ms. */
  runMs?: number;
  /** The ledger's Redis; `null`: no shared ledger (the guard's in-process one). */
  redisUrl?: string | null;
  leaseTtlMs?: number;
  ledgerTimeoutMs?: number;
  commandTimeoutMs?: number;
  limitsMaxAgeMs?: number;
  /** The ledger's `restartGraceMs`. */
  restartGraceMs?: number;
  /** The ledger's `placeTtlMs`. */
  placeTtlMs?: number;
  /** The guard's `maxWaitMs` (default 60000). */
  maxWaitMs?: number;
  /** The client's `requestTimeoutMs`. */
  requestTimeoutMs?: number;
  /** A ledger string for the guard (`sqlite:DIR`); wins over `redisUrl`. */
  ledger?: string;
  /** The guard's `ledgerFallback` (default: the library's, `'throw'`). */
  ledgerFallback?: 'throw' | 'in-process';
  /** Extra Node.js arguments of the host process (not sent to the worker). */
  nodeArgs?: string[];
}

/** What a host answers when its jobs are done. */
export interface HostResult {
  done: number;
  failed: number;
  errors: string[];
  stats: { quota403s: number; ledgerFallbacks: number; succeeded: number; degradedAdmissions?: number; ledgerOutages: number };
  /** How long each guarded create took, ms (in the order they ended). */
  createMs: number[];
  /** From the first job to the last, ms. */
  wallMs: number;
}

/** One running host. */
export interface Host {
  child: ChildProcess;
  /** Its pino lines (warn and above). */
  log: string[];
  result: Promise<HostResult>;
}

/** The hosts of one test file: spawn them on a fake, kill what is left after each test. */
export class Fleet {
  private readonly hosts: Host[] = [];

  /** @param defaults - Merged under each host's config (the test's own defaults). */
  constructor(private readonly defaults: () => Partial<HostConfig>) {}

  /** Start a host on `nova`. */
  host(nova: FakeNova, cfg: HostConfig): Host {
    const { nodeArgs, ...full } = { endpoint: nova.endpoint, projectId: nova.projectId, runMs: 100, ...this.defaults(), ...cfg };
    const child = fork(WORKER, [JSON.stringify(full)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit', 'ipc'], ...(nodeArgs ? { execArgv: [...process.execArgv, ...nodeArgs] } : {}) });
    const log: string[] = [];
    let rest = '';
    child.stdout!.on('data', (d: Buffer) => {
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop()!;
      log.push(...lines.filter((l) => l !== ''));
    });
    const result = new Promise<HostResult>((resolve, reject) => {
      child.once('message', (m) => {
        if (process.env.FLEET_LOG_DIR) writeFileSync(`${process.env.FLEET_LOG_DIR}/${cfg.holder}.log`, log.join('\n'));
        resolve(m as HostResult);
      });
      child.once('exit', (code, signal) => reject(new Error(`host ${cfg.holder} exited (${code ?? signal}) without a result; log:\n${log.join('\n')}`)));
    });
    result.catch(() => undefined);
    const h = { child, log, result };
    this.hosts.push(h);
    return h;
  }

  /** SIGKILL every host still running (after each test). */
  killAll(): void {
    for (const h of this.hosts.splice(0)) {
      if (h.child.exitCode === null && h.child.signalCode === null) {
        h.child.kill('SIGCONT');
        h.child.kill('SIGKILL');
      }
    }
  }
}

/** Quota 403s Nova answered to `POST /servers`. */
export const posts403 = (n: FakeNova): number => n.requests.filter((r) => r.method === 'POST' && r.path === '/servers' && r.status === 403).length;

/** Servers left that are not DELETED (a delete still finishing is not left). */
export const live = (n: FakeNova): FakeServerView[] => n.listServerStates().filter((s) => s.status !== 'DELETED');
