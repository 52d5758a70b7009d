/**
 * The main entry (`nova-guard`, src/index.ts) is a small surface with one name per thing: at most 114
 * exported names (values and types; 110 until `InProcessFleet`, the fleet watcher of one process; 111 until
 * `Secret`, the type of the secrets `loadCloudConfig` gives; 112 until `LedgerConfigError`, the error of a
 * ledger that cannot work, which a caller must be able to catch by class; 113 until `waitForOthersRead`,
 * which a ledger of the user's own must call when it waits for another holder's `/limits` read),
 * none of the plumbing under the capabilities, and every name the README, examples/ and bench/ import.
 */
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as lib from '../src/index.js';

const INDEX = fileURLToPath(new URL('../src/index.ts', import.meta.url));

let names: string[] | undefined;

/** Every name src/index.ts exports, values and types alike, as the compiler resolves them. */
function exportedNames(): string[] {
  names ??= compile();
  return names;
}

function compile(): string[] {
  const program = ts.createProgram([INDEX], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, noEmit: true });
  const checker = program.getTypeChecker();
  const symbol = checker.getSymbolAtLocation(program.getSourceFile(INDEX)!)!;
  return checker.getExportsOfModule(symbol).map((s) => s.name);
}

describe('the main entry', () => {
  it('exports at most 114 names, values and types counted', () => {
    const all = exportedNames();
    expect(all.length).toBeGreaterThan(50);
    expect(all.length).toBeLessThanOrEqual(114);
  }, 60_000);

  it('leaves the plumbing out: delete engine, option checks, headroom arithmetic, ledger keys, telemetry and logging helpers', () => {
    const plumbing = [
      'DeleteEngine',
      'checkDeleteOptions',
      'confirmNotFound',
      'presenceMicroversion',
      'backoffDelayMs',
      'computeHeadroom',
      'checkFit',
      'describeShortfalls',
      'CLAIM_ID_KEY',
      'CLAIM_TOKEN_KEY',
      'CLAIM_HOLDER_KEY',
      'LOG_REDACT_PATHS',
      'withOperation',
      'newRequestId',
      'jitteredMs',
      'timeoutSignal',
      'onDeleteConfirmed',
      'parseAbsoluteLimits',
      'throwIfAborted',
      'driftTrend',
      'isPastScheduling',
      'EXPLAIN_EVERY_WAITS',
    ];
    expect(plumbing.filter((n) => n in lib)).toEqual([]);
  });

  it('one spelling per thing: no alias of ResourceAmounts or QuotaFinding, no second way to build a guard', () => {
    const all = exportedNames();
    expect(all).toEqual(expect.arrayContaining(['ResourceAmounts', 'QuotaFinding', 'QuotaFindingKind', 'QuotaGuard']));
    expect(all.filter((n) => ['QuotaNeeds', 'Usage', 'Finding', 'FindingKind', 'AuditResource', 'quotaGuard'].includes(n))).toEqual([]);
  }, 60_000);

  it('keeps what the README, examples/ and bench/ import from nova-guard', () => {
    const used = [
      'NovaClient',
      'KeystoneAuth',
      'QuotaGuard',
      'auditQuota',
      'formatAudit',
      'watchQuota',
      'reapServers',
      'Reaper',
      'readReaperState',
      'writeReaperState',
      'waitForActive',
      'waitForDelete',
      'deleteServer',
      'deleteServers',
      'parseQuotaMessage',
      'loadCloudConfig',
      'systemClock',
      'InProcessQuotaLedger',
      'waitForOthersRead',
      'NotFoundError',
      'NovaApiError',
      'QuotaExceededError',
      'QuotaNeverFitsError',
      'QuotaBuildFaultError',
    ];
    expect(used.filter((n) => !(n in lib))).toEqual([]);
  });
});
