/**
 * A TCP proxy on 127.0.0.1 that puts a network between a client and a server on loopback: every
 * chunk is held for half the round trip in each direction (order kept), so a Redis behind it is
 * `rttMs` away. The round trip can be changed while connections are open, and the proxy can refuse
 * new connections or cut the open ones (a network partition). For the fleet-ledger tests and the
 * fleet churn bench.
 *
 * @module
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

/** A running proxy. */
export interface LatencyProxy {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /** `redis://127.0.0.1:<port>` (for a Redis behind it). */
  readonly url: string;
  /** Set the round trip added, in ms (half each way); applies to chunks sent from now on. */
  setRttMs(rttMs: number): void;
  /** Cut every open connection (RST) and refuse new ones until `heal()`. */
  partition(): void;
  /** Accept connections again after `partition()`. */
  heal(): void;
  /** Stop listening and cut every connection. */
  close(): Promise<void>;
}

/**
 * Start a proxy to `127.0.0.1:targetPort` adding `rttMs` of round trip.
 * @param listenPort - The port to listen on. @default 0 (a free one)
 */
export async function startLatencyProxy(targetPort: number, rttMs: number, listenPort = 0): Promise<LatencyProxy> {
  let oneWayMs = rttMs / 2;
  let refusing = false;
  const sockets = new Set<Socket>();
  /** Forward `from` to `to`, each chunk `oneWayMs` later than it came, never before the chunk ahead of it. */
  const pipe = (from: Socket, to: Socket): void => {
    let lastDue = 0;
    from.on('data', (chunk: Buffer) => {
      const due = Math.max(Date.now() + oneWayMs, lastDue);
      lastDue = due;
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, due - Date.now());
    });
    from.on('end', () => setTimeout(() => to.end(), Math.max(0, lastDue - Date.now())));
  };
  const server: Server = createServer((client) => {
    if (refusing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    pipe(client, upstream);
    pipe(upstream, client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  const cutAll = (): void => {
    for (const s of sockets) s.resetAndDestroy();
    sockets.clear();
  };
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    setRttMs(ms: number): void {
      oneWayMs = ms / 2;
    },
    partition(): void {
      refusing = true;
      cutAll();
    },
    heal(): void {
      refusing = false;
    },
    close(): Promise<void> {
      cutAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
