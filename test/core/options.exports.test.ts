/**
 * Every export of `nova-guard`, `nova-guard/testing`, `nova-guard/redis` and `nova-guard/sqlite` that takes an options
 * object refuses an unknown option name with a ValidationError naming it, before any request; and a
 * new export (function, class, method) that is neither in the table of calls nor in the list of
 * those that take no options fails this file, so a new function cannot forget its check.
 */
import { describe, expect, it } from 'vitest';
import * as main from '../../src/index.js';
import * as testingEntry from '../../src/testing/index.js';
import * as redisEntry from '../../src/redis/index.js';
import * as sqliteEntry from '../../src/sqlite/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova } from '../helpers.js';

const BOGUS = 'bogusOptionName';
const ENTRIES = { 'nova-guard': main, 'nova-guard/testing': testingEntry, 'nova-guard/redis': redisEntry, 'nova-guard/sqlite': sqliteEntry } as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

/** `options` plus the unknown name. */
const bogus = <T extends object>(options: T): T => ({ ...options, [BOGUS]: 1 }) as T;

/** What a call gets: a client whose transport fails (and counts) every request, and a FakeNova. */
interface Env {
  /** Export `name` of `entry`, as the entry point exports it now. */
  x: (entry: keyof typeof ENTRIES, name: string) => Any;
  client: Any;
  /** URLs of every request any client of this call sent. */
  requests: string[];
  adapter: (config: { url?: string }) => Promise<never>;
  nova: () => Promise<FakeNova>;
}

const NOVA_URL = 'http://nova.invalid/v2.1';
const KEYSTONE_URL = 'http://keystone.invalid:5000/v3';
const aborted = (): AbortSignal => AbortSignal.abort();

/** A cloud from the environment alone (no clouds.yaml is read). */
function envCloud(env: Env): Any {
  return env.x('nova-guard', 'loadCloudConfig')({
    env: { OS_AUTH_URL: KEYSTONE_URL, OS_TOKEN: 't', OS_PROJECT_ID: 'p' },
    cwd: '/nonexistent-nova-guard-test',
    homeDir: '/nonexistent-nova-guard-test',
    systemDirs: [],
  });
}

/**
 * One call per export (or method) that takes options, with a valid minimal set and the unknown
 * name; keyed `entry:Export`, `entry:Class.prototype.method` or `entry:Class.staticMethod`.
 */
const TAKES_OPTIONS: Record<string, (env: Env) => unknown> = {
  // The destructive ones first.
  'nova-guard:reapServers': (e) => e.x('nova-guard', 'reapServers')(e.client, bogus({ prefix: 'x-', olderThanMs: 0, passIntervalMs: 0 })),
  'nova-guard:Reaper': (e) => new (e.x('nova-guard', 'Reaper'))(e.client, bogus({ prefix: 'x-', olderThanMs: 0 })),
  'nova-guard:Reaper.prototype.run': (e) => new (e.x('nova-guard', 'Reaper'))(e.client, { prefix: 'x-', olderThanMs: 0 }).run(bogus({ intervalMs: 1000, signal: aborted() })),
  'nova-guard:deleteServer': (e) => e.x('nova-guard', 'deleteServer')(e.client, '00000001-0000-4000-8000-000000000000', bogus({})),
  'nova-guard:deleteServers': (e) => e.x('nova-guard', 'deleteServers')(e.client, ['00000001-0000-4000-8000-000000000000'], bogus({})),
  'nova-guard:NovaClient.prototype.deleteServer': (e) => e.client.deleteServer('00000001-0000-4000-8000-000000000000', bogus({})),
  'nova-guard:NovaClient.prototype.deleteServers': (e) => e.client.deleteServers(['00000001-0000-4000-8000-000000000000'], bogus({})),
  'nova-guard:NovaClient.prototype.requestDelete': (e) => e.client.requestDelete('00000001-0000-4000-8000-000000000000', bogus({})),
  'nova-guard:NovaClient.prototype.forceDeleteServer': (e) => e.client.forceDeleteServer('00000001-0000-4000-8000-000000000000', bogus({})),
  'nova-guard:waitForDelete': (e) => e.x('nova-guard', 'waitForDelete')(e.client, '00000001-0000-4000-8000-000000000000', bogus({})),
  // Creates.
  'nova-guard:QuotaGuard': (e) => new (e.x('nova-guard', 'QuotaGuard'))(e.client, bogus({})),
  'nova-guard:QuotaGuard.prototype.createServer': (e) => new (e.x('nova-guard', 'QuotaGuard'))(e.client).createServer({ name: 'a', flavorRef: '1' }, bogus({})),
  'nova-guard:QuotaGuard.prototype.withQuotaGuard': (e) =>
    new (e.x('nova-guard', 'QuotaGuard'))(e.client).withQuotaGuard({ cores: 1, ramMiB: 1, instances: 1 }, () => Promise.resolve(1), bogus({})),
  'nova-guard:QuotaGuard.prototype.headroom': (e) => new (e.x('nova-guard', 'QuotaGuard'))(e.client).headroom(bogus({})),
  'nova-guard:NovaClient.prototype.createServer': (e) => e.client.createServer({ name: 'a', flavorRef: '1', networks: 'none' }, bogus({})),
  'nova-guard:waitForActive': (e) => e.x('nova-guard', 'waitForActive')(e.client, '00000001-0000-4000-8000-000000000000', bogus({})),
  'nova-guard:InProcessQuotaLedger': (e) => new (e.x('nova-guard', 'InProcessQuotaLedger'))(bogus({})),
  // Reads.
  'nova-guard:NovaClient': (e) => new (e.x('nova-guard', 'NovaClient'))(bogus({ endpoint: NOVA_URL, token: 't', adapter: e.adapter })),
  'nova-guard:NovaClient.prototype.request': (e) => e.client.request(bogus({ method: 'GET', path: '/limits' })),
  'nova-guard:NovaClient.prototype.getServer': (e) => e.client.getServer('00000001-0000-4000-8000-000000000000', bogus({})),
  'nova-guard:NovaClient.prototype.listServers': (e) => e.client.listServers({}, bogus({})),
  'nova-guard:NovaClient.prototype.listServersWithMeta': (e) => e.client.listServersWithMeta({}, bogus({})),
  'nova-guard:NovaClient.prototype.getFlavor': (e) => e.client.getFlavor('1', bogus({})),
  'nova-guard:NovaClient.prototype.listFlavors': (e) => e.client.listFlavors(bogus({})),
  'nova-guard:NovaClient.prototype.resolveMicroversion': (e) => e.client.resolveMicroversion(bogus({})),
  'nova-guard:NovaClient.prototype.getLimits': (e) => e.client.getLimits(bogus({})),
  'nova-guard:NovaClient.prototype.getQuotaSetDetail': (e) => e.client.getQuotaSetDetail('p', bogus({})),
  'nova-guard:auditQuota': (e) => e.x('nova-guard', 'auditQuota')(e.client, bogus({})),
  'nova-guard:watchQuota': (e) => e.x('nova-guard', 'watchQuota')(e.client, bogus({ samples: 1 })),
  // Credentials and configuration.
  'nova-guard:KeystoneAuth': (e) => new (e.x('nova-guard', 'KeystoneAuth'))(bogus({ method: 'token', token: 't', authUrl: KEYSTONE_URL, adapter: e.adapter })),
  'nova-guard:KeystoneAuth.prototype.getToken': (e) => new (e.x('nova-guard', 'KeystoneAuth'))({ method: 'token', token: 't', authUrl: KEYSTONE_URL, adapter: e.adapter }).getToken(bogus({})),
  'nova-guard:KeystoneAuth.prototype.getEndpoint': (e) =>
    new (e.x('nova-guard', 'KeystoneAuth'))({ method: 'token', token: 't', authUrl: KEYSTONE_URL, adapter: e.adapter }).getEndpoint(bogus({})),
  'nova-guard:loadCloudConfig': (e) => e.x('nova-guard', 'loadCloudConfig')(bogus({ env: {} })),
  'nova-guard:resolveClientOptions': (e) => e.x('nova-guard', 'resolveClientOptions')(envCloud(e), bogus({})),
  'nova-guard:NovaClient.fromCloud': (e) => e.x('nova-guard', 'NovaClient').fromCloud('no-such-cloud', bogus({})),
  'nova-guard:NovaClient.fromEnv': (e) => e.x('nova-guard', 'NovaClient').fromEnv({ OS_AUTH_URL: KEYSTONE_URL, OS_TOKEN: 't' }, bogus({})),
  // nova-guard/testing
  'nova-guard/testing:FakeNova.start': (e) => e.x('nova-guard/testing', 'FakeNova').start(bogus({})),
  'nova-guard/testing:FakeNova.prototype.addServer': async (e) => (await e.nova()).addServer(bogus({ name: 'a' })),
  'nova-guard/testing:FakeNova.prototype.inject': async (e) => (await e.nova()).inject(bogus({ path: '/limits', status: 500 })),
  'nova-guard/testing:FakeNova.prototype.setQuota': async (e) => (await e.nova()).setQuota(bogus({ cores: 1 })),
  'nova-guard/testing:FakeNova.prototype.setUsageDrift': async (e) => (await e.nova()).setUsageDrift(bogus({ cores: 1 })),
  'nova-guard/testing:FakeNova.prototype.setServerBehavior': async (e) => {
    const nova = await e.nova();
    return nova.setServerBehavior(nova.addServer({ name: 'a' }).id, bogus({ onDelete: 'never' }));
  },
  'nova-guard/testing:FakeNovaCauses.prototype.addNeverScheduled': async (e) => (await e.nova()).causes.addNeverScheduled(bogus({ name: 'a' })),
  'nova-guard/testing:FakeNovaCauses.prototype.staleUsage': async (e) => (await e.nova()).causes.staleUsage(bogus({ cores: 1 })),
  'nova-guard/testing:FakeNovaCauses.prototype.leakAllocation': async (e) => (await e.nova()).causes.leakAllocation(bogus({ cores: 1 })),
  'nova-guard/testing:FakeKeystone.start': (e) => e.x('nova-guard/testing', 'FakeKeystone').start(bogus({})),
  'nova-guard/testing:FakeKeystone.prototype.addProject': (e) => withKeystone(e, (k) => k.addProject(bogus({ name: 'p2' }))),
  'nova-guard/testing:FakeKeystone.prototype.addUser': (e) => withKeystone(e, (k) => k.addUser(bogus({ name: 'u2', password: 'pw' }))),
  'nova-guard/testing:FakeKeystone.prototype.addApplicationCredential': (e) =>
    withKeystone(e, (k) => k.addApplicationCredential(bogus({ name: 'ac', secret: 's', user: k.addUser({ name: 'u3', password: 'pw' }) }))),
  // nova-guard/redis
  'nova-guard/redis:RedisQuotaLedger': (e) => new (e.x('nova-guard/redis', 'RedisQuotaLedger'))(bogus({ url: 'redis://127.0.0.1:1', endpoint: NOVA_URL, projectId: 'p' })),
  'nova-guard/redis:RedisQuotaLedger.forClient': (e) => e.x('nova-guard/redis', 'RedisQuotaLedger').forClient(e.client, bogus({ url: 'redis://127.0.0.1:1', projectId: 'p' })),
  // nova-guard/sqlite (the path is never created: the names are checked first)
  'nova-guard/sqlite:SqliteQuotaLedger': (e) => new (e.x('nova-guard/sqlite', 'SqliteQuotaLedger'))(bogus({ path: '/nonexistent-nova-guard-test/l.sqlite', endpoint: NOVA_URL, projectId: 'p' })),
  'nova-guard/sqlite:SqliteQuotaLedger.forClient': (e) => e.x('nova-guard/sqlite', 'SqliteQuotaLedger').forClient(e.client, bogus({ path: '/nonexistent-nova-guard-test/l.sqlite' })),
};

async function withKeystone(e: Env, fn: (k: Any) => unknown): Promise<unknown> {
  const k = await e.x('nova-guard/testing', 'FakeKeystone').start();
  try {
    return fn(k);
  } finally {
    await k.close();
  }
}

const LEDGER_PROTOCOL = 'QuotaLedger protocol: called by QuotaGuard with the needs and claims it made, not caller options';
const INSTANCE_DATA = 'takes ids, numbers, strings or callbacks: no options object';
const TS_PRIVATE = 'TypeScript-private helper, not public';

/** Exports and methods that take no options object, each with the reason. */
const NO_OPTIONS: Record<string, string> = {
  'nova-guard:parseQuotaMessage': 'takes a message string',
  'nova-guard:Secret': 'takes the secret string',
  'nova-guard:Secret.of': 'takes a string or a Secret',
  'nova-guard:Secret.prototype.reveal': 'takes nothing',
  'nova-guard:Secret.prototype.toString': 'takes nothing',
  'nova-guard:Secret.prototype.toJSON': 'takes nothing',
  'nova-guard:isAbortError': 'takes an error',
  'nova-guard:waitForOthersRead': "takes a ledger's read function and a promise",
  'nova-guard:formatAudit': "formats an audit's result (data built by auditQuota), not options",
  'nova-guard:readReaperState': 'takes a file name; the state read is checked by checkState',
  'nova-guard:writeReaperState': "takes a file name and a Reaper's state (data it built)",
  'nova-guard:NovaClient.prototype.endpoint': 'takes a signal',
  'nova-guard:NovaClient.prototype.unconfirmedDeletes': 'takes nothing',
  'nova-guard:NovaClient.prototype.toJSON': 'takes nothing',
  'nova-guard:StaticTokenProvider': 'takes the token string',
  'nova-guard:StaticTokenProvider.prototype.getToken': 'ignores its argument: the token is fixed',
  'nova-guard:StaticTokenProvider.prototype.invalidate': INSTANCE_DATA,
  'nova-guard:StaticTokenProvider.prototype.secrets': 'takes nothing',
  'nova-guard:StaticTokenProvider.prototype.toJSON': 'takes nothing',
  'nova-guard:KeystoneAuth.prototype.invalidate': INSTANCE_DATA,
  'nova-guard:KeystoneAuth.prototype.getProjectId': 'takes nothing',
  'nova-guard:KeystoneAuth.prototype.tokenInfo': 'takes nothing',
  'nova-guard:KeystoneAuth.prototype.secrets': 'takes nothing',
  'nova-guard:KeystoneAuth.prototype.toJSON': 'takes nothing',
  'nova-guard:Reaper.prototype.pass': 'takes nothing',
  'nova-guard:QuotaGuard.prototype.unsettledCreates': 'takes nothing',
  'nova-guard:QuotaGuard.prototype.liveClaims': 'takes nothing',
  'nova-guard:QuotaGuard.prototype.close': 'takes nothing',
  'nova-guard:InProcessQuotaLedger.prototype.liveClaimIds': 'takes nothing',
  'nova-guard:InProcessFleet': 'takes nothing',
  'nova-guard:InProcessFleet.prototype.join': 'takes a client, no options',
  'nova-guard:InProcessFleet.prototype.close': 'takes nothing',
  'nova-guard/redis:RedisQuotaLedger.prototype.liveClaimIds': 'takes nothing',
  'nova-guard/sqlite:SqliteQuotaLedger.prototype.liveClaimIds': 'takes nothing',
  'nova-guard/sqlite:SqliteQuotaLedger.prototype.toJSON': 'takes nothing',
  'nova-guard/sqlite:isSqliteUnavailable': 'takes an error',
  'nova-guard/sqlite:defaultLedgerDir': 'takes an environment (a map of variables), not options',
  ...Object.fromEntries(
    // the port's members, and the backends' own join, limits, inFlight and admit (the steps of their acquire)
    ['join', 'leave', 'limits', 'inFlight', 'admit', 'claimAnyway', 'renew', 'bind', 'release', 'publishFreed', 'keptSeen', 'onFreed', 'onWake', 'close', 'bindScope', 'acquire', 'peek', 'callBudgetMs', 'probe', 'everReached', 'members'].flatMap((m) => [
      [`nova-guard:InProcessQuotaLedger.prototype.${m}`, LEDGER_PROTOCOL],
      [`nova-guard/redis:RedisQuotaLedger.prototype.${m}`, LEDGER_PROTOCOL],
      [`nova-guard/sqlite:SqliteQuotaLedger.prototype.${m}`, LEDGER_PROTOCOL],
    ]),
  ),
  'nova-guard/redis:RedisQuotaLedger.prototype.toJSON': 'takes nothing',
  'nova-guard/testing:realNovaDeletedWindowMs': 'takes a number',
  'nova-guard/testing:FakeNovaCauses': '@internal: FakeNova makes it (nova.causes)',
  'nova-guard/testing:FakeNovaCauses.prototype.row': TS_PRIVATE,
  'nova-guard/testing:FakeNovaCauses.prototype.flavor': TS_PRIVATE,
  ...Object.fromEntries(
    ['breakMapping', 'stickDeleting', 'shelveOffload', 'resizePending', 'downCell', 'placementUsages', 'countUsageFromPlacement'].map((m) => [`nova-guard/testing:FakeNovaCauses.prototype.${m}`, INSTANCE_DATA]),
  ),
  'nova-guard/testing:FakeNova': 'private constructor: FakeNova.start makes it',
  'nova-guard/testing:FakeNova.prototype.firstFlavorId': TS_PRIVATE,
  'nova-guard/testing:FakeNova.prototype.mustGet': TS_PRIVATE,
  ...Object.fromEntries(
    [
      'clearRequests',
      'requestsTo',
      'clearFaults',
      'getServerState',
      'listServerStates',
      'limits',
      'usage',
      'reportedUsage',
      'setDefaultDeleteBehavior',
      'failCreatesWithQuotaRecheck',
      'makeGhost',
      'countBuildInUsage',
      'quotaRecord',
      'clearQuotaRecord',
      'lock',
      'unlock',
      'destroyServer',
      'pendingTimers',
      'archiveDeletedRows',
      'close',
    ].map((m) => [`nova-guard/testing:FakeNova.prototype.${m}`, INSTANCE_DATA]),
  ),
  'nova-guard/testing:FakeKeystone': 'private constructor: FakeKeystone.start makes it',
  ...Object.fromEntries(
    ['stop', 'close', 'projectId', 'userId', 'applicationCredentialId', 'isValid', 'projectOf', 'expireToken', 'expireAllTokens', 'issuedTokens', 'failNextTokenRequests'].map((m) => [
      `nova-guard/testing:FakeKeystone.prototype.${m}`,
      INSTANCE_DATA,
    ]),
  ),
};

const isClass = (v: unknown): v is new (...args: unknown[]) => unknown => typeof v === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(v));

/**
 * Every callable of the three entry points: each exported function and class, and each method
 * (prototype and static) of an exported class. Error classes are left out: their second argument
 * is the facts of an error nova-guard raises (status, request id, ...), not caller options.
 */
function surface(entries: Record<string, object> = ENTRIES): string[] {
  const out: string[] = [];
  for (const [entry, ns] of Object.entries(entries)) {
    for (const [name, v] of Object.entries(ns as Record<string, unknown>)) {
      if (typeof v !== 'function' || v.prototype instanceof Error) continue;
      out.push(`${entry}:${name}`);
      if (!isClass(v)) continue;
      for (const m of Object.getOwnPropertyNames(v.prototype)) {
        if (m !== 'constructor' && typeof Object.getOwnPropertyDescriptor(v.prototype, m)?.value === 'function') out.push(`${entry}:${name}.prototype.${m}`);
      }
      for (const m of Object.getOwnPropertyNames(v)) {
        if (typeof Object.getOwnPropertyDescriptor(v, m)?.value === 'function') out.push(`${entry}:${name}.${m}`);
      }
    }
  }
  return out;
}

/** The callables of `entries` in neither list. */
function unlisted(entries: Record<string, object> = ENTRIES): string[] {
  return surface(entries).filter((k) => !Object.hasOwn(TAKES_OPTIONS, k) && !Object.hasOwn(NO_OPTIONS, k));
}

function makeEnv(): Env {
  const requests: string[] = [];
  const adapter = (config: { url?: string }): Promise<never> => {
    requests.push(String(config.url));
    return Promise.reject(new Error(`no request may be sent (${String(config.url)})`));
  };
  let nova: FakeNova | undefined;
  const env = {
    x: (entry: keyof typeof ENTRIES, name: string): Any => (ENTRIES[entry] as Record<string, unknown>)[name],
    client: new main.NovaClient({ endpoint: NOVA_URL, token: 't', projectId: 'p', adapter, retry: false }),
    requests,
    adapter,
    nova: async (): Promise<FakeNova> => (nova ??= await startNova()),
  };
  return env;
}

/** Run `call`, bounded in time (a call that ignored the bad option could wait for ever). */
async function outcome(call: () => unknown): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      (async () => call())(),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the call neither refused the option nor settled within 5 s')), 5000))),
    ]).then(
      (value) => ({ resolved: value }),
      (error: unknown) => error,
    );
  } finally {
    clearTimeout(timer);
  }
}

describe('every export that takes options refuses an unknown option name', () => {
  it('each function, class and method of nova-guard, nova-guard/testing, nova-guard/redis and nova-guard/sqlite is in the table of calls or in the list of those that take no options', () => {
    expect(unlisted(), 'add each to TAKES_OPTIONS (with a call that passes bogusOptionName) or to NO_OPTIONS (with the reason)').toEqual([]);
  });

  it('every name in the table of calls and in the list of those that take no options is still exported (no stale entry)', () => {
    const listed = [...Object.keys(TAKES_OPTIONS), ...Object.keys(NO_OPTIONS)];
    const all = new Set(surface());
    expect(listed.filter((k) => !all.has(k))).toEqual([]);
  });

  it('a new export, a new method of an exported class or a new static method is reported as unlisted', () => {
    class Widget {
      static make(): Widget {
        return new Widget();
      }
      spin(): void {}
    }
    const grown = { ...ENTRIES, 'nova-guard': { ...main, newHelper: (_options: object) => 1, Widget } };
    expect(unlisted(grown)).toEqual(['nova-guard:newHelper', 'nova-guard:Widget', 'nova-guard:Widget.prototype.spin', 'nova-guard:Widget.make']);
  });

  it('no entry is in both lists', () => {
    expect(Object.keys(TAKES_OPTIONS).filter((k) => Object.hasOwn(NO_OPTIONS, k))).toEqual([]);
  });

  it.for(Object.keys(TAKES_OPTIONS))('%s refuses bogusOptionName with a ValidationError, before any request', async (key) => {
    const env = makeEnv();
    const e = await outcome(() => TAKES_OPTIONS[key]!(env));
    expect(e).toBeInstanceOf(main.ValidationError);
    expect((e as Error).message).toContain(BOGUS);
    expect(env.requests).toEqual([]);
  });
});
