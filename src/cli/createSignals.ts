/**
 * What `server create` knows of its POSTs when a signal stops it, and the lines it prints then
 * (`interrupt.ts` for the signals themselves).
 *
 * `QuotaGuard.createServer` never hands the caller's signal to `POST /servers` (an abort must not
 * hide a server Nova created) and has no hook for the POST itself; so the command looks at its own
 * client's `createServer` and `deleteServer` while the guard runs ({@link watchCreates}): when a POST
 * was sent, whether it has answered, the id it answered with, and whether the guard is deleting
 * that server again (a build that failed with a quota fault). The guard's verdicts stay the guard's:
 * the `AbortError` naming the kept server, `CreateOutcomeUnknownError` naming the claim tag.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import { exactNamePattern } from '../guard/claimTag.js';
import { terminalSafe } from '../core/table.js';

/** What the client's POSTs of one `server create` have done so far. */
export interface CreateWatch {
  /** POSTs sent. */
  readonly posts: number;
  /** POSTs sent and not yet answered (answer or error). */
  readonly postsInFlight: number;
  /** When the last POST was sent, on the client's clock (ms). */
  readonly lastPostAtMs: number | undefined;
  /** The id the last POST answered with, while the guard is not deleting that server. */
  readonly serverId: string | undefined;
  /** A server the guard is deleting (with wait) at this moment, if any. */
  readonly deletingId: string | undefined;
  /** Put the client's methods back. */
  restore(): void;
}

/** Look at `client`'s `createServer` and `deleteServer` calls until {@link CreateWatch.restore}. */
export function watchCreates(client: NovaClient): CreateWatch {
  const post = client.createServer;
  const del = client.deleteServer;
  const w = { posts: 0, postsInFlight: 0, lastPostAtMs: undefined as number | undefined, serverId: undefined as string | undefined, deletingId: undefined as string | undefined };
  client.createServer = async (...args: Parameters<NovaClient['createServer']>) => {
    w.posts++;
    w.postsInFlight++;
    w.serverId = undefined;
    w.lastPostAtMs = client.clock.now();
    try {
      const server = await post.apply(client, args);
      w.serverId = server.id;
      return server;
    } finally {
      w.postsInFlight--;
    }
  };
  client.deleteServer = async (...args: Parameters<NovaClient['deleteServer']>) => {
    const id = args[0];
    const ours = id === w.serverId;
    if (ours) w.deletingId = id;
    try {
      const outcome = await del.apply(client, args);
      if (ours && w.serverId === id) w.serverId = undefined;
      return outcome;
    } finally {
      if (ours && w.deletingId === id) w.deletingId = undefined;
    }
  };
  return {
    get posts() {
      return w.posts;
    },
    get postsInFlight() {
      return w.postsInFlight;
    },
    get lastPostAtMs() {
      return w.lastPostAtMs;
    },
    get serverId() {
      return w.deletingId === undefined ? w.serverId : undefined;
    },
    get deletingId() {
      return w.deletingId;
    },
    restore() {
      // Own properties over the prototype's methods: removing them puts the methods back.
      delete (client as Partial<Pick<NovaClient, 'createServer' | 'deleteServer'>>).createServer;
      delete (client as Partial<Pick<NovaClient, 'createServer' | 'deleteServer'>>).deleteServer;
    },
  };
}

/** `s` quoted for a POSIX shell. */
export function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The command that deletes server `id` and waits until it is gone. */
export const deleteCommand = (id: string): string => `nova-guard server delete --wait ${id}`;

/** The command that lists the servers named exactly `name` (`--name` is a regular expression). */
export const listCommand = (name: string): string => terminalSafe(`nova-guard server list --name ${shellQuote(exactNamePattern(name))}`, true);

/** A created server that is kept: its id and the command that deletes it. */
export function keptLines(id: string): string {
  return `Server ${id} was created and is NOT deleted (it may still be building): delete it with\n  ${deleteCommand(id)}`;
}

/**
 * A POST with no answer yet at the first signal: what is known and what happens next.
 * `waitMs`: what is left of the request's time limit.
 */
export function pendingLines(name: string, sentMsAgo: number, waitMs: number, claimId: string | undefined): string {
  const safe = terminalSafe(JSON.stringify(name), true);
  return (
    `POST /servers for ${safe} was sent ${seconds(sentMsAgo)} ago and Nova has not answered yet: the server may exist.\n` +
    `Waiting up to ${seconds(waitMs)} more for Nova's answer (then one search by name), to name the server; signal again to stop now.\n` +
    `To find it yourself:\n  ${listCommand(name)}${claimId === undefined ? '' : `\n(the one whose properties, in nova-guard server show, carry nova-guard-claim-id=${claimId})`}`
  );
}

/** The outcome of the create is not known when the command stops: the name and the commands. */
export function mayExistLines(name: string, mark: string | undefined): string {
  const safe = terminalSafe(JSON.stringify(name), true);
  return (
    `A server named ${safe} may exist or appear shortly (Nova never answered its POST /servers): look for it with\n  ${listCommand(name)}` +
    `${mark === undefined ? '' : `\n(the one whose properties, in nova-guard server show, carry ${mark})`}\nand delete it with\n  nova-guard server delete --wait SERVER_ID`
  );
}

function seconds(ms: number): string {
  return `${Math.max(0, Math.round(ms / 100) / 10)} s`;
}
