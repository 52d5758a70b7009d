/**
 * A ledger string is turned into a ledger by code the guard imports directly (`src/ledgers`, below
 * `src/guard` in the layers): no module-level registry filled by importing a module for its side
 * effect (issue 30). Before, `src/index.ts` and `src/quotaGuard.ts` did `import './ledgers/index.js'`
 * so that `src/ledgers` would register a resolver with the guard, and a `QuotaGuard` imported without
 * them refused a ledger string.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

describe('ledger strings without a registry', () => {
  it('no module of src/ is imported for its side effect, and none keeps a resolver to be filled from above', () => {
    const sideEffects: string[] = [];
    const registries: string[] = [];
    for (const file of sources(SRC)) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/^\s*import\s+['"][^'"]+['"];?\s*$/gm)) sideEffects.push(`${file.slice(SRC.length + 1)}: ${m[0].trim()}`);
      if (/setLedgerSpecResolver|let resolver\b/.test(text)) registries.push(file.slice(SRC.length + 1));
    }
    expect(sideEffects).toEqual([]);
    expect(registries).toEqual([]);
  });

  it("the guard's ledger option opens a string through src/ledgers, which it imports itself", () => {
    const options = readFileSync(join(SRC, 'guard', 'options.ts'), 'utf8');
    expect(options).toMatch(/from '\.\.\/ledgers\/index\.js'/);
  });

  it('package.json tells bundlers that no module has a side effect (the stale entry for dist/ledgers/index.js is gone)', () => {
    const pkg = JSON.parse(readFileSync(join(SRC, '..', 'package.json'), 'utf8')) as { sideEffects?: unknown };
    expect(pkg.sideEffects).toBe(false);
  });
});
