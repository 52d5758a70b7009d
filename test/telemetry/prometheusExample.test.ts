/**
 * examples/prometheus.ts run on its own, as the README says: it serves `/metrics` until SIGINT or
 * SIGTERM (the exporter's server is unref()'d, so the example keeps the process alive itself), then
 * shuts the exporter down and exits 0. On the real clock: outcomes and generous bounds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The example as JavaScript under build/ (inside the repository, so its imports resolve from node_modules). */
function transpiled(): string {
  const source = readFileSync(`${REPO}examples/prometheus.ts`, 'utf8');
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
  const dir = `${REPO}build/test-examples`;
  mkdirSync(dir, { recursive: true });
  const file = `${dir}/prometheus-${process.pid}.mjs`;
  writeFileSync(file, outputText);
  return file;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as { port: number };
  await new Promise((resolve) => s.close(resolve));
  return port;
}

describe('examples/prometheus.ts on its own', () => {
  it('stays up serving /metrics until SIGTERM, then stops the exporter and exits 0', async () => {
    const port = await freePort();
    const script = transpiled();
    const child: ChildProcess = spawn(process.execPath, [script], { env: { ...process.env, PROMETHEUS_PORT: String(port) }, cwd: REPO });
    let stdout = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const exited = new Promise<void>((resolve) =>
      child.on('close', (code, signal) => {
        exit = { code, signal };
        resolve();
      }),
    );
    try {
      const started = performance.now();
      while (!stdout.includes('(Ctrl-C to stop)') && exit === undefined && performance.now() - started < 20_000) await sleep(50);
      expect(stdout).toBe(`nova-guard metrics on http://localhost:${port}/metrics (Ctrl-C to stop)\n`);
      // It used to exit right after that line: still running a while later, and serving.
      await sleep(500);
      expect(exit).toBeUndefined();
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      await res.text();
      child.kill('SIGTERM');
      await exited;
      expect(exit).toEqual({ code: 0, signal: null });
      expect(stdout).toContain('SIGTERM: metrics server stopped\n');
      // The exporter was shut down: nothing listens on the port any more.
      await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
    } finally {
      if (exit === undefined) child.kill('SIGKILL');
      rmSync(script, { force: true });
    }
  }, 30_000);
});
