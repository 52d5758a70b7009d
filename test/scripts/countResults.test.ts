// scripts/count-results.mjs: CI's closing line, and the failed tests named just above it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function run(reports: unknown[]): { out: string; code: number } {
  const dir = mkdtempSync(join(tmpdir(), 'count-results-'));
  dirs.push(dir);
  const files = reports.map((r, i) => {
    const f = join(dir, `r${i}.json`);
    writeFileSync(f, typeof r === 'string' ? r : JSON.stringify(r));
    return f;
  });
  try {
    return { out: execFileSync(process.execPath, ['scripts/count-results.mjs', ...files], { encoding: 'utf8' }), code: 0 };
  } catch (e) {
    const err = e as { stdout: string; status: number };
    return { out: err.stdout, code: err.status };
  }
}

describe('count-results', () => {
  it('names each failed test and a file that failed outside its tests above the closing line', () => {
    const { out, code } = run([
      {
        testResults: [
          {
            name: '/ci/repo/test/integration/quota.test.ts',
            status: 'failed',
            assertionResults: [
              { status: 'failed', fullName: 'quota > races', failureMessages: ['AssertionError: expected 1 to be 2\n  at x'] },
              { status: 'passed' },
              { status: 'skipped' },
            ],
          },
          { name: '/ci/repo/test/a.test.ts', status: 'failed', message: 'SyntaxError: boom\nstack', assertionResults: [] },
        ],
      },
    ]);
    expect(code).toBe(1);
    const lines = out.trimEnd().split('\n');
    expect(lines.at(-1)).toBe('1 passed, 2 failed, 1 skipped');
    expect(out).toContain('test/integration/quota.test.ts > quota > races\n    AssertionError: expected 1 to be 2\n');
    expect(out).toContain('test/a.test.ts (the file failed outside its tests: SyntaxError: boom)');
    expect(out).not.toContain('at x');
  });

  it('prints no Failed block on a green run, and counts an unreadable report as a failure', () => {
    const green = run([{ testResults: [{ name: '/r/test/x.test.ts', status: 'passed', assertionResults: [{ status: 'passed' }] }] }]);
    expect(green).toEqual({ out: '1 passed, 0 failed\n', code: 0 });
    const broken = run(['not json']);
    expect(broken.code).toBe(1);
    expect(broken.out.trimEnd().split('\n').at(-1)).toBe('0 passed, 1 failed');
  });
});
