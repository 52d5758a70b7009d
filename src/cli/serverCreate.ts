/**
 * `nova-guard server create NAME --flavor F --image I [--network ID]... [--nic none|auto|net-id=ID]
 * [--key-name K] [--user-data FILE] [--property k=v]... [--wait] [--ledger URL] [--max-wait D]
 * [-f table|json|value|yaml] [-c COLUMN]...`: `openstack server create` through the quota guard
 * (`QuotaGuard.createServer`: headroom before every POST, quota 403 backoff, the claim tag on the
 * server, the search for a server whose POST's answer was lost, and with `--wait` the wait for
 * ACTIVE with late quota faults retried).
 *
 * Printed as `openstack server create` prints it: the server's Field/Value table (or `-f`/`-c`;
 * `-f value -c id` prints only the id). Flavor and image by name or id (`serverLookup.ts`). Exit
 * codes as `openstack`'s: 0 created (with `--wait`: ACTIVE); 1 a failure (quota never fits, the wait
 * for quota ran out, the server went to ERROR: deleted by the guard, an unknown flavor or image); 2
 * bad usage before any request (an unknown flag, a missing `--flavor`/`--image`, `--nic none` with
 * `--network`, a `--property` without `=`, an unsupported `--ledger` URL); 130, 143, 129 when
 * SIGINT (Ctrl-C), SIGTERM or SIGHUP stops it (`interrupt.ts`, docs/cli-signals.md): a server Nova
 * accepted is kept and its id printed on stderr at once with the command that deletes it; a POST with
 * no answer yet is said at once (the name to look for, the command, how long the command waits for
 * the answer); a second signal ends the process, naming the server or the name; nothing is left
 * running.
 *
 * Networks: `--network ID` (repeatable) is `networks: [{ uuid }]`; `--nic none` / `--nic auto` the
 * microversion 2.37 values (the command asks for 2.37 unless `--os-compute-api-version` says
 * otherwise); without either, `auto` (as openstack does at 2.37 and later).
 *
 * `--ledger URL` (or `NOVA_GUARD_LEDGER`): the quota ledger shared with other processes (`openLedger`).
 * A Redis ledger whose host name does not resolve is a typo until shown otherwise: exit 1 before any
 * request (`ledgerHost.ts`); a Redis that refuses the connection or goes away later is an outage the
 * guard rides out (its one warning says what creates do meanwhile).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { AbortError, ValidationError } from '../errors/index.js';
import { CLAIM_ID_KEY, CLAIM_TAG_KEY, CreateOutcomeUnknownError, QuotaGuard, type QuotaGuardOptions, type QuotaWaitInfo } from '../guard/index.js';
import type { NovaClient } from '../nova/client.js';
import type { CreateServerBody, Server } from '../core/types.js';
import { addDurationOption, cliLogger, ledgerFlag } from './common.js';
import { ColumnError, addFormatOptions, checkFormatFlags, formatOne, type FormatFlags } from './format.js';
import { findFlavor, findImage } from './serverLookup.js';
import { serverFields } from './serverView.js';
import { terminalSafe } from '../core/table.js';
import { redactUrlSecrets } from '../core/redact.js';
import type { LoggerOption } from '../core/logger.js';
import { signalWords, watchStopSignals } from './interrupt.js';
import type { ClientGetter } from './common.js';
import { deleteCommand, keptLines, mayExistLines, pendingLines, watchCreates } from './createSignals.js';
import { cliLedgerFix, ledgerSource } from './ledgerError.js';
import { checkLedgerHost } from './ledgerHost.js';

/** What `server create` asks of the client: microversion 2.37, for `networks: 'none' | 'auto'`. */
export const CREATE_MICROVERSION = '2.37';

interface CreateFlags extends FormatFlags {
  flavor?: string;
  image?: string;
  network?: string[];
  nic?: string[];
  keyName?: string;
  userData?: string;
  property?: string[];
  wait?: boolean;
  ledger?: string;
  /** `--max-wait` (old spelling `--max-wait-ms`), in ms. */
  maxWait?: number;
}

const collect = (v: string, prev: string[] = []): string[] => [...prev, v];

/** The `networks` member from `--network` and `--nic`. @throws {@link ValidationError}. */
export function networksOf(network: readonly string[] = [], nic: readonly string[] = []): CreateServerBody['networks'] {
  const special = nic.filter((n) => n === 'none' || n === 'auto');
  const netIds = [...network];
  for (const n of nic) {
    if (n === 'none' || n === 'auto') continue;
    const m = /^net-id=([^,]+)$/.exec(n);
    if (!m) throw new ValidationError(`--nic ${JSON.stringify(n)}: give none, auto or net-id=NETWORK_ID (nova-guard takes network ids only)`);
    netIds.push(m[1]!);
  }
  if (special.length > 0 && (special.length > 1 || netIds.length > 0)) {
    throw new ValidationError(`--nic ${special[0]} cannot be combined with ${netIds.length > 0 ? '--network or --nic net-id' : `--nic ${special[1]}`}: give either --nic none, --nic auto, or networks`);
  }
  if (special.length === 1) return special[0] as 'none' | 'auto';
  if (netIds.length === 0) return 'auto';
  return netIds.map((uuid) => ({ uuid }));
}

/** `--property k=v` pairs as metadata. @throws {@link ValidationError} for one without `=` or an empty key. */
export function propertiesOf(props: readonly string[] = []): Record<string, string> | undefined {
  if (props.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const p of props) {
    const i = p.indexOf('=');
    if (i <= 0) throw new ValidationError(`--property ${JSON.stringify(p)}: give key=value`);
    out[p.slice(0, i)] = p.slice(i + 1);
  }
  return out;
}

/**
 * The stderr line of one wait of `server create`, by its reason ({@link QuotaWaitInfo.reason}):
 * - `short`: `waiting 2 s for quota headroom: cores needs 4, 0 free`;
 * - `queued`: `waiting 2 s for the creates queued ahead: cores needs 6 with theirs, 4 free`;
 * - on the waits where the guard checked why it is short (`shortfallCause`), the `short` and
 *   `queued` lines end with what it found: `; the project's servers hold this quota (a busy fleet)`,
 *   or `; Nova's books are wrong (stale-usage): ...` with what an operator can do;
 * - `ledger-settling`: `waiting 2 s for the quota ledger URL to admit: the quota has room, but the
 *   ledger admits nothing yet (it settles after Redis started or restarted)`;
 * - `ledger-out-of-reach`: `waiting 2 s for the quota ledger URL, out of reach: no create is
 *   admitted without it for now (...)`: the shortfalls are no reading of the quota and are not shown
 *   as "0 free"; the guard's one warning of the outage (printed before) says until when: the time
 *   left of the 3 s it waits for a ledger never reached (it may be starting; the waits end then),
 *   while claims may be live for one that was.
 * `ledger` is the `--ledger`/`NOVA_GUARD_LEDGER` string, printed with its password redacted.
 */
export function waitLine(w: Pick<QuotaWaitInfo, 'delayMs' | 'shortfalls' | 'ledgerOutOfReach' | 'reason' | 'shortfallCause' | 'finding'>, ledger?: string): string {
  const secs = `${Math.round(w.delayMs / 100) / 10} s`;
  const which = ledger === undefined ? 'the quota ledger' : `the quota ledger ${redactUrlSecrets(ledger)}`;
  const free = (s: QuotaWaitInfo['shortfalls'][number]): string => `${s.headroom === Number.POSITIVE_INFINITY ? 'unlimited' : s.headroom} free`;
  if (w.ledgerOutOfReach || w.reason === 'ledger-out-of-reach') {
    return `waiting ${secs} for ${which}, out of reach: no create is admitted without it for now (the warning above says until when)`;
  }
  if (w.reason === 'ledger-settling' || w.shortfalls.length === 0) {
    return `waiting ${secs} for ${which} to admit: the quota has room, but the ledger admits nothing yet (it settles after Redis started or restarted)`;
  }
  if (w.reason === 'queued') return `waiting ${secs} for the creates queued ahead: ${w.shortfalls.map((s) => `${s.resource} needs ${s.needed} with theirs, ${free(s)}`).join(', ')}${whyShort(w)}`;
  return `waiting ${secs} for quota headroom: ${w.shortfalls.map((s) => `${s.resource} needs ${s.needed}, ${free(s)}`).join(', ')}${whyShort(w)}`;
}

/**
 * What the guard's check of the shortfall found (every `EXPLAIN_EVERY_WAITS`th wait, one listing
 * the guard sends because `server create` gives an `onWait`), in the words of
 * `QuotaWaitTimeoutError`'s message; `''` on the other waits.
 */
function whyShort(w: Pick<QuotaWaitInfo, 'shortfallCause' | 'finding'>): string {
  if (w.shortfallCause === 'busy-fleet') return "; the project's servers hold this quota (a busy fleet)";
  if (w.shortfallCause === 'wrong-books' && w.finding !== undefined) {
    return `; Nova's books are wrong (${w.finding.kind}): ${terminalSafe(w.finding.evidence, true)}${w.finding.operatorCan ? ` (an operator can: ${terminalSafe(w.finding.operatorCan, true)})` : ''}`;
  }
  return '';
}

/** Components whose warnings `server create` prints without `--debug`: the shared ledger's. */
const LEDGER_COMPONENTS: ReadonlySet<string> = new Set(['ledger', 'redis-ledger', 'sqlite-ledger']);

/**
 * The guard's logger in `server create`: under `--debug`, every line (as the client's); otherwise one
 * that prints only the warnings about the shared quota ledger, as `Warning: ...` lines on stderr
 * (`print`): a Redis ledger out of reach, a SQLite ledger that cannot load and falls back to the
 * in-process one. Without them a worker would not learn that its processes stopped sharing the
 * quota. The guard's other warnings repeat what the command prints itself (retries, Ctrl-C). Their
 * library words for where the ledger came from are the CLI's (`cliLedgerFix`, for `source`).
 * @param source - Where the ledger string came from. @default `ledgerSource()` (this process's argv and environment)
 */
export function createLogger(client: Pick<NovaClient, 'logger'>, print: (line: string) => void = (line) => console.error(line), source = ledgerSource()): LoggerOption {
  // A logger of its own (the client's carries the binding component 'nova', which the guard's would repeat).
  if (client.logger.isLevelEnabled('debug')) return cliLogger({ debug: true });
  const quiet = (): void => undefined;
  const warn = (message: string, fields: Record<string, unknown>): void => {
    if (LEDGER_COMPONENTS.has(String(fields['component'])) || 'ledger' in fields) print(`Warning: ${terminalSafe(cliLedgerFix(message, source), true)}`);
  };
  return { level: 'warn', debug: quiet, info: quiet, warn, error: warn };
}

/** Register `create` under the `server` command. */
export function registerServerCreateCommand(server: Command, getClient: ClientGetter): void {
  const cmd = addFormatOptions(
    server
      .command('create')
      .description('create a server through the quota guard (like `openstack server create`). Exit 0 created, 1 failed, 2 bad usage (nothing sent), 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP (a created server is named on stderr with the command that deletes it)')
      .argument('<server-name>', 'new server name')
      // Not commander's requiredOption: that check runs before the unknown-option check, so a
      // misspelt `--flavour m1.tiny` was reported as a missing --flavor instead of "did you mean".
      .option('--flavor <flavor>', 'create server with this flavor (name or ID; required)')
      .option('--image <image>', 'create server boot disk from this image (name or ID)')
      .option('--network <network-id>', 'create a NIC on this network (ID; repeat for more)', collect)
      .option('--nic <none|auto|net-id=ID>', "'none' (no network), 'auto' (auto-allocate) or net-id=ID (repeatable)", collect)
      .option('--key-name <key-name>', 'keypair to inject into this server')
      .option('--user-data <file>', 'user data file to serve from the metadata server')
      .option('--property <key=value>', 'set a property (metadata) on this server (repeat for more)', collect)
      .option('--wait', 'wait for the server to become ACTIVE (a quota fault on the way is retried by the guard)')
      .option('--ledger <url>', 'quota ledger shared with other processes: sqlite:[PATH] (this host), redis://host:port (many hosts); env NOVA_GUARD_LEDGER'),
    { shell: true },
  );
  addDurationOption(cmd, { flag: '--max-wait', old: ['--max-wait-ms'], description: 'longest wait for quota headroom and quota retries', shownDefault: '10m' });
  cmd.action(async (name: string, flags: CreateFlags) => {
    // Every flag before any request (and before any connection): bad usage is exit 2 with nothing sent.
    checkFormatFlags(flags);
    if (flags.flavor === undefined) throw new ValidationError('the following arguments are required: --flavor');
    if (flags.image === undefined) throw new ValidationError('the following arguments are required: --image (nova-guard boots from an image)');
    const networks = networksOf(flags.network, flags.nic);
    const metadata = propertiesOf(flags.property);
    const maxWaitMs = flags.maxWait;
    let userData: string | undefined;
    if (flags.userData !== undefined) {
      try {
        userData = readFileSync(flags.userData).toString('base64');
      } catch (e) {
        throw new Error(`Can't open '${flags.userData}': ${(e as Error).message}`, { cause: e });
      }
    }
    // The ledger string is checked now; the guard opens it for the client's endpoint and project
    // before its first request and closes it in close() (NOVA_GUARD_LEDGER when no --ledger).
    const ledgerSpec = ledgerFlag(flags.ledger);
    // A Redis host name that does not resolve: a typo, said before any request (exit 1).
    if (ledgerSpec !== undefined) await checkLedgerHost(ledgerSpec, ledgerSource());
    const flavorRef = flags.flavor;
    const client = await getClient({ microversion: CREATE_MICROVERSION });
    const [flavor, image] = await Promise.all([findFlavor(client, flavorRef), findImage(client, flags.image)]);
    const body: CreateServerBody = { name, flavorRef: flavor.id, imageRef: image.id, networks };
    if (metadata) body.metadata = metadata;
    if (flags.keyName !== undefined) body['key_name'] = flags.keyName;
    if (userData !== undefined) body['user_data'] = userData;
    const options: QuotaGuardOptions = {
      waitForActive: Boolean(flags.wait),
      logger: createLogger(client),
      onWait: (w) => console.error(waitLine(w, ledgerSpec)),
      onRetry: (r) => console.error(`retrying the create in ${Math.round(r.delayMs / 100) / 10} s (${r.reason}: ${terminalSafe(r.error.message, true)})`),
      // The logger prints the ledger's warnings (createLogger): Node's process warning would repeat them.
      onWarning: () => undefined,
    };
    if (ledgerSpec !== undefined) options.ledger = ledgerSpec;
    if (maxWaitMs !== undefined) options.maxWaitMs = maxWaitMs;
    const guard = new QuotaGuard(client, options);
    // SIGINT, SIGTERM, SIGHUP: stop; a server Nova accepted is kept and named, so the caller can
    // delete it; a POST with no answer yet is said at once, and its name on a second signal.
    const posts = watchCreates(client);
    let created: Server | undefined;
    let named: string | undefined;
    const claimId = (): string | undefined => guard.liveClaims().find((m) => m.key === CLAIM_ID_KEY)?.values[0];
    const known = (): string | undefined => created?.id ?? posts.serverId;
    const stop = watchStopSignals({
      first: (signal) => {
        const id = known();
        if (id !== undefined) {
          console.error(`Interrupted by ${signalWords(signal)}. ${keptLines(id)}`);
          named = id;
          // Once the guard has returned, only printing is left: end now.
          return created !== undefined;
        }
        if (posts.deletingId !== undefined) {
          console.error(`Interrupted by ${signalWords(signal)}: nova-guard is deleting server ${posts.deletingId} (its build failed); waiting for the deletion to end.`);
        } else if (posts.postsInFlight > 0) {
          const now = client.clock.now();
          const sentAt = posts.lastPostAtMs ?? now;
          console.error(`Interrupted by ${signalWords(signal)}. ${pendingLines(name, now - sentAt, sentAt + client.requestTimeoutMs - now, claimId())}`);
        } else {
          console.error(`Interrupted by ${signalWords(signal)}: stopping.`);
        }
      },
      again: (signal) => {
        const id = known();
        if (id !== undefined) console.error(`Stopped by ${signalWords(signal)}. ${keptLines(id)}`);
        else if (posts.deletingId !== undefined) console.error(`Stopped by ${signalWords(signal)} while deleting server ${posts.deletingId}: confirm it is gone with\n  ${deleteCommand(posts.deletingId)}`);
        else if (posts.postsInFlight > 0 || guard.unsettledCreates().length > 0) {
          const tag = guard.unsettledCreates()[0]?.claimTag;
          const id = claimId();
          console.error(`Stopped by ${signalWords(signal)}. ${mayExistLines(name, tag !== undefined ? `${CLAIM_TAG_KEY}=${tag}` : id !== undefined ? `${CLAIM_ID_KEY}=${id}` : undefined)}`);
        } else console.error(`Stopped by ${signalWords(signal)}: no POST /servers is unanswered: no server was left by this command.`);
      },
    });
    try {
      created = await guard.createServer(body, { signal: stop.signal, keepOnAbort: true });
    } catch (e) {
      if (stop.received !== undefined && (e instanceof AbortError || e instanceof CreateOutcomeUnknownError)) {
        if (e instanceof CreateOutcomeUnknownError) {
          console.error(mayExistLines(name, `${CLAIM_TAG_KEY}=${e.claimTag}`));
        } else if (e.serverId !== undefined) {
          if (named !== e.serverId) console.error(keptLines(e.serverId));
        } else {
          console.error('Interrupted before Nova accepted a create: no server was created.');
        }
        process.exitCode = stop.exitCode;
        return;
      }
      throw e;
    } finally {
      posts.restore();
      // With a server, the listeners stay until it is printed (a signal then names it); a failing
      // close() still removes them.
      await guard.close().then(
        () => {
          if (created === undefined) stop.dispose();
        },
        (e: unknown) => {
          stop.dispose();
          throw e;
        },
      );
    }
    if (stop.received !== undefined) {
      // The signal came as the create finished: the server is kept all the same.
      if (named !== created.id) console.error(keptLines(created.id));
      stop.dispose();
      process.exitCode = stop.exitCode;
      return;
    }
    try {
      await showCreated(client, created, { flavor, image, flags });
    } finally {
      stop.dispose();
    }
  });
}

/**
 * Print the created server as `openstack server create` does: the server as Nova shows it now (the
 * POST's answer has only id, links and adminPass), or with `--wait` as the wait last saw it. Unlike
 * openstack, never its `adminPass`: the server's password is a secret (the library's `createServer`
 * returns it to a caller that needs it).
 */
async function showCreated(client: NovaClient, created: Server, c: { flavor: { id: string; name: string }; image: { id: string; name?: string | undefined }; flags: CreateFlags }): Promise<void> {
  const { flavor, image, flags } = c;
  const names = { flavors: new Map([[flavor.id, flavor.name]]), images: image.name ? new Map([[image.id, image.name]]) : undefined };
  let out: string;
  try {
    // As openstack: the server as Nova shows it now (the POST's answer has only id, links and adminPass),
    // without its adminPass (a secret).
    const { adminPass: _secret, ...shown } = flags.wait ? created : await client.getServer(created.id);
    out = formatOne(serverFields(shown, names), flags);
  } catch (e) {
    if (e instanceof ColumnError) {
      // A `-c` that names no column of the server: the command fails, so the server it created
      // must not stay behind unseen (a worker script with a typo would leak one per run).
      console.error(`${e.message}\nDeleting server ${created.id}, created before the columns could be checked.`);
      await client.deleteServer(created.id, { wait: true });
    } else {
      console.error(`Server ${created.id} was created and is NOT deleted: delete it with\n  nova-guard server delete --wait ${created.id}`);
    }
    throw e;
  }
  console.log(out);
}
