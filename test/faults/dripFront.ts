/**
 * A scripted HTTP front on 127.0.0.1 for the fault matrix's "slow drip": a real socket (axios's
 * node:http adapter), because only a socket can send the headers and then trickle the body. It
 * passes every request through to an upstream fake (FakeNova's or FakeKeystone's HTTP endpoint),
 * except those matching an armed {@link DripSpec}: those are answered with the status and headers at
 * once, then a few bytes of body at a time, slower in total than the client's request time limit
 * (or never finishing). With `forward`, the request first reaches the upstream (it does its work,
 * e.g. Nova makes the server) and only its answer is replaced by the drip.
 *
 * Every response says `Connection: close`, so once a call has settled no socket of it should stay
 * open: {@link DripFront.openSockets} counts what is still connected.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Which requests drip, and how. */
export interface DripSpec {
  method: string;
  /** Matched against the request path (without the query). */
  path: string | RegExp;
  /** How many matching requests drip. @default 1 */
  times?: number;
  /** Status of the dripping answer. @default 200 */
  status?: number;
  /** The body trickled out. @default an unfinished JSON object that never ends */
  body?: string;
  /** End the response once `body` is out. @default false (the drip goes on until the client hangs up) */
  finish?: boolean;
  /** Bytes per write. @default 3 */
  chunkBytes?: number;
  /** ms between writes. @default 40 */
  everyMs?: number;
  /** Pass the request to the upstream first (its work is done), then drip instead of its answer. */
  forward?: boolean;
}

/** One request the front saw. */
export interface FrontRequest {
  method: string;
  path: string;
  dripped: boolean;
  /** True once the dripping response's socket closed (the client hung up, or the body ended). */
  closed: boolean;
}

const NEVER_ENDING = `{"server": {"id": "${'0123456789abcdef'.repeat(4096)}`;

/** The front: see the module description. */
export class DripFront {
  readonly requests: FrontRequest[] = [];
  readonly #sockets = new Set<Socket>();
  readonly #drips: Array<DripSpec & { left: number }> = [];
  readonly #timers = new Set<ReturnType<typeof setInterval>>();

  private constructor(
    readonly url: string,
    private readonly server: http.Server,
    private readonly upstream: URL,
  ) {}

  /** Start a front for `upstreamUrl` (scheme, host and port; any path is kept on requests as sent). */
  static async start(upstreamUrl: string): Promise<DripFront> {
    const upstream = new URL(upstreamUrl);
    const ref: { front?: DripFront } = {};
    const server = http.createServer((req, res) => ref.front!.handle(req, res));
    server.keepAliveTimeout = 100;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const front = new DripFront(`http://127.0.0.1:${port}`, server, upstream);
    ref.front = front;
    server.on('connection', (s: Socket) => {
      front.#sockets.add(s);
      s.on('close', () => front.#sockets.delete(s));
    });
    return front;
  }

  /** `upstreamUrl` with its origin replaced by this front's. */
  via(upstreamUrl: string): string {
    const u = new URL(upstreamUrl);
    return `${this.url}${u.pathname}${u.search}`.replace(/\/$/, '');
  }

  /** Arm a drip. */
  drip(spec: DripSpec): void {
    this.#drips.push({ ...spec, left: spec.times ?? 1 });
  }

  /** Sockets still connected to the front. */
  get openSockets(): number {
    return this.#sockets.size;
  }

  /** Drips still writing. */
  get activeDrips(): number {
    return this.#timers.size;
  }

  /** Requests that met a drip. */
  get dripped(): FrontRequest[] {
    return this.requests.filter((r) => r.dripped);
  }

  /** Stop: end every drip, drop every socket, close the server. */
  async close(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    this.#timers.clear();
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const method = String(req.method).toUpperCase();
    const path = new URL(String(req.url), 'http://x').pathname;
    const spec = this.#drips.find((d) => d.left > 0 && d.method === method && (typeof d.path === 'string' ? d.path === path : d.path.test(path)));
    const seen: FrontRequest = { method, path, dripped: spec !== undefined, closed: false };
    this.requests.push(seen);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (!spec) {
        this.forward(req, body, (status, headers, data) => {
          res.writeHead(status, { ...headers, connection: 'close' });
          res.end(data);
        }, () => res.destroy());
        return;
      }
      spec.left--;
      if (spec.forward) this.forward(req, body, () => this.startDrip(spec, res, seen), () => res.destroy());
      else this.startDrip(spec, res, seen);
    });
  }

  private startDrip(spec: DripSpec, res: http.ServerResponse, seen: FrontRequest): void {
    res.writeHead(spec.status ?? 200, { 'content-type': 'application/json', 'x-openstack-request-id': 'req-drip', connection: 'close' });
    res.flushHeaders();
    const body = spec.body ?? NEVER_ENDING;
    const step = spec.chunkBytes ?? 3;
    let at = 0;
    const timer = setInterval(() => {
      if (at < body.length) {
        res.write(body.slice(at, at + step));
        at += step;
      } else if (spec.finish) {
        res.end();
        stop();
      }
    }, spec.everyMs ?? 40);
    this.#timers.add(timer);
    const stop = (): void => {
      clearInterval(timer);
      this.#timers.delete(timer);
    };
    res.on('close', () => {
      seen.closed = true;
      stop();
    });
  }

  private forward(req: http.IncomingMessage, body: Buffer, done: (status: number, headers: http.IncomingHttpHeaders, data: Buffer) => void, failed: () => void): void {
    const up = http.request(
      {
        host: this.upstream.hostname,
        port: this.upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: this.upstream.host, connection: 'close' },
        agent: false,
      },
      (ures) => {
        const data: Buffer[] = [];
        ures.on('data', (c: Buffer) => data.push(c));
        ures.on('end', () => {
          const headers = { ...ures.headers };
          delete headers['transfer-encoding'];
          delete headers['content-length'];
          delete headers['connection'];
          done(ures.statusCode ?? 502, headers, Buffer.concat(data));
        });
        ures.on('error', failed);
      },
    );
    up.on('error', failed);
    up.end(body);
  }
}
