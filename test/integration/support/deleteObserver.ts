/**
 * Independent witnesses of Nova's 404s, for tests that check when a client reports servers deleted.
 * Neither goes through the library or the counting proxy; both record on the test process's
 * `performance.now()` clock.
 *
 * - {@link HttpWitness}: when a client reports a server deleted, one `GET /servers/{id}` of our own,
 *   straight to Nova (raw fetch). A 200 there (any status, `DELETED` included) proves the report early.
 *   With `follow`, a server seen present is polled on until its 404 (for how early).
 * - {@link NovaDbWatcher} (the harness only): every ~50 ms one `SELECT` of the servers' rows in the
 *   harness's cell database. Nova answers 404 for a server, and stops counting its cores, RAM and
 *   instance, from the transaction that sets the row's `deleted` column (`instance.destroy()`), so the
 *   watcher sees each 404 as it happens, with `vm_state` `deleted` (API status `DELETED`) before it.
 *
 * Why a trace proves an early report. Nova answers from the state the row has when it serves the
 * request, some time between the request's send time and its answer. So a request sent at `s` that
 * found the server present shows the server still existed, still holding its cores, after `s`. A client
 * that reported it deleted at `r < s` reported it too early, whatever the polling granularity: coarse
 * polling can only miss an early report, never invent one. No tolerance is needed.
 *
 * Why not poll every server's GET every 50 ms: nova-api runs one worker here and serves a few dozen
 * GETs a second; 40 servers at 50 ms would be 800 a second. Tried with 4 GETs always open, it served
 * about 16 a second, so each server was seen only every ~3 s, and the load fell on the very Nova the
 * clients under test were measured on. The database query costs Nova nothing.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { REPO } from './cli.js';

/** What a witness saw of one server. */
export interface ServerTrace {
  id: string;
  /** Answers in order, consecutive equal ones merged: `active/deleting x3`, `DELETED x12`, `gone`. */
  sequence: Array<{ state: string; count: number; firstSentMs: number; lastSentMs: number }>;
  /** Send time of the last look that found the server present (it existed after that time). */
  lastPresentSentMs: number | undefined;
  /** Send and answer times of the first look that found it gone (404, or the row deleted). */
  firstGoneSentMs: number | undefined;
  firstGoneAnsweredMs: number | undefined;
  /** Looks taken, and failed ones. */
  looks: number;
  failures: number;
  /** Largest time between two consecutive looks, ms: the granularity for this server. */
  maxGapMs: number;
  /** Present again after gone (never expected). */
  reappeared: boolean;
}

function newTrace(id: string): ServerTrace {
  return {
    id,
    sequence: [],
    lastPresentSentMs: undefined,
    firstGoneSentMs: undefined,
    firstGoneAnsweredMs: undefined,
    looks: 0,
    failures: 0,
    maxGapMs: 0,
    reappeared: false,
  };
}

/** Record one look: `state` is `'gone'`, `'failed: ...'`, or the state of a present server. */
function record(trace: ServerTrace, state: string, sentMs: number, answeredMs: number): void {
  const prev = trace.sequence.at(-1);
  if (prev) trace.maxGapMs = Math.max(trace.maxGapMs, sentMs - prev.lastSentMs);
  trace.looks++;
  if (state === 'gone') {
    if (trace.firstGoneSentMs === undefined) {
      trace.firstGoneSentMs = sentMs;
      trace.firstGoneAnsweredMs = answeredMs;
    }
  } else if (state.startsWith('failed')) {
    trace.failures++;
  } else {
    if (trace.lastPresentSentMs === undefined || sentMs > trace.lastPresentSentMs) trace.lastPresentSentMs = sentMs;
    if (trace.firstGoneSentMs !== undefined) trace.reappeared = true;
  }
  if (prev?.state === state) {
    prev.count++;
    prev.lastSentMs = sentMs;
  } else trace.sequence.push({ state, count: 1, firstSentMs: sentMs, lastSentMs: sentMs });
}

/** Ids whose trace shows them present on a look sent after `atMs`. */
function presentAfter(traces: Iterable<ServerTrace>, atMs: number): string[] {
  return [...traces].filter((t) => t.lastPresentSentMs !== undefined && t.lastPresentSentMs > atMs).map((t) => t.id);
}

/** `active/deleting x3 > DELETED x12 > gone`. */
export function describeSequence(trace: ServerTrace | undefined): string {
  if (!trace || trace.sequence.length === 0) return 'not seen';
  return trace.sequence.map((s) => (s.count > 1 ? `${s.state} x${s.count}` : s.state)).join(' > ');
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Options of {@link HttpWitness}. */
export interface HttpWitnessOptions {
  /** Poll a server found present until its 404. Default false. */
  follow?: boolean;
  /** With `follow`: least time between two GETs of one server, ms. Default 500. */
  followIntervalMs?: number;
  /** GETs open at once. Default 2. */
  maxInFlight?: number;
}

/** One `GET /servers/{id}` straight to Nova when a server is reported deleted; see the module description. */
export class HttpWitness {
  readonly traces = new Map<string, ServerTrace>();
  /** When each server was reported (the time {@link HttpWitness.check} was called for it). */
  readonly reportedMs = new Map<string, number>();
  readonly #endpoint: string;
  readonly #token: string;
  readonly #follow: boolean;
  readonly #followIntervalMs: number;
  readonly #maxInFlight: number;
  /** Servers to look at, oldest look first; a server leaves once seen gone. */
  readonly #due = new Map<string, number>();
  #open = 0;
  #idle: Array<() => void> = [];

  constructor(endpoint: string, token: string, options: HttpWitnessOptions = {}) {
    this.#endpoint = endpoint.replace(/\/+$/, '');
    this.#token = token;
    this.#follow = options.follow ?? false;
    this.#followIntervalMs = options.followIntervalMs ?? 500;
    this.#maxInFlight = options.maxInFlight ?? 2;
  }

  /** A client reported `id` deleted now: look at it (once, or until its 404 with `follow`). */
  check(id: string): void {
    if (this.reportedMs.has(id)) return;
    this.reportedMs.set(id, performance.now());
    this.traces.set(id, newTrace(id));
    this.#due.set(id, Number.NEGATIVE_INFINITY);
    this.#pump();
  }

  /** Servers found present on a GET sent after their report. */
  early(): string[] {
    return [...this.traces.values()].filter((t) => t.lastPresentSentMs !== undefined && t.lastPresentSentMs > this.reportedMs.get(t.id)!).map((t) => t.id);
  }

  /** Ids found present on a GET sent after `atMs`. */
  presentAfter(atMs: number): string[] {
    return presentAfter(this.traces.values(), atMs);
  }

  /** Resolves once every look is done (with `follow`: every server found gone), or rejects after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (this.#due.size > 0 || this.#open > 0) {
      if (performance.now() > deadline) throw new Error(`HTTP witness: ${this.#due.size} server(s) not seen gone after ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        this.#idle.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }

  #pump(): void {
    while (this.#open < this.#maxInFlight) {
      let next: string | undefined;
      let nextAt = Number.POSITIVE_INFINITY;
      for (const [id, at] of this.#due) {
        if (at < nextAt) [next, nextAt] = [id, at];
      }
      if (next === undefined) return;
      const wait = nextAt - performance.now();
      if (wait > 0) {
        setTimeout(() => this.#pump(), wait);
        return;
      }
      this.#due.delete(next);
      this.#open++;
      void this.#look(next).finally(() => {
        this.#open--;
        for (const wake of this.#idle.splice(0)) wake();
        this.#pump();
      });
    }
  }

  async #look(id: string): Promise<void> {
    const trace = this.traces.get(id)!;
    const sentMs = performance.now();
    let state: string;
    try {
      const res = await fetch(`${this.#endpoint}/servers/${id}`, {
        headers: { 'X-Auth-Token': this.#token, 'OpenStack-API-Version': 'compute 2.79', Accept: 'application/json' },
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      if (res.status === 404) state = 'gone';
      else if (res.status === 200) {
        const server = (JSON.parse(text) as { server: { status?: string; 'OS-EXT-STS:task_state'?: string | null } }).server;
        const task = server['OS-EXT-STS:task_state'];
        state = `${server.status ?? '?'}${task ? `/${task}` : ''}`;
      } else state = `failed: HTTP ${res.status}`;
    } catch (error) {
      state = `failed: ${(error as Error).name}`;
    }
    record(trace, state, sentMs, performance.now());
    // Not gone yet: with follow, look again later; a failed look is retried either way.
    if (state !== 'gone' && (this.#follow || state.startsWith('failed'))) this.#due.set(id, sentMs + this.#followIntervalMs);
  }
}

/** The harness's MariaDB socket, when this run uses the harness (not an outside Nova). */
export function harnessDbSocket(): string | undefined {
  const socket = join(process.env['REALNOVA_STATE'] ?? join(REPO, '.real-nova'), 'mysql', 'mysqld.sock');
  return existsSync(socket) ? socket : undefined;
}

/** Options of {@link NovaDbWatcher}. */
export interface NovaDbWatcherOptions {
  /** Time from one query's start to the next, ms. Default 50. */
  intervalMs?: number;
  /** Database of the cell the servers are in. Default `nova_cell1`. */
  database?: string;
}

/** Polls the servers' rows in the harness's cell database; see the module description. */
export class NovaDbWatcher {
  readonly traces = new Map<string, ServerTrace>();
  readonly #ids: string[];
  readonly #intervalMs: number;
  readonly #child: ChildProcessByStdio<Writable, Readable, Readable>;
  readonly #lines: AsyncIterator<string>;
  #running = false;
  #loop: Promise<void> | undefined;
  #failure: Error | undefined;
  #stderr = '';

  constructor(socket: string, ids: readonly string[], options: NovaDbWatcherOptions = {}) {
    if (!ids.every((id) => /^[0-9a-f-]{36}$/.test(id))) throw new Error('NovaDbWatcher: ids must be UUIDs');
    this.#ids = [...ids];
    this.#intervalMs = options.intervalMs ?? 50;
    for (const id of ids) this.traces.set(id, newTrace(id));
    // One client for the whole watch: -n flushes each answer at once, -B -N print bare tab-separated rows.
    this.#child = spawn('mariadb', ['--no-defaults', `--socket=${socket}`, '-uroot', '-N', '-B', '-n', options.database ?? 'nova_cell1'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.#child.stderr.setEncoding('utf8').on('data', (chunk: string) => (this.#stderr += chunk));
    this.#child.on('error', (error) => (this.#stderr += `${error.message}\n`)); // e.g. no mariadb client: stdout ends, #run fails
    this.#lines = createInterface({ input: this.#child.stdout })[Symbol.asyncIterator]();
  }

  /** Start polling (returns at once). */
  start(): void {
    this.#running = true;
    this.#loop = this.#run().catch((error: unknown) => {
      this.#running = false;
      this.#failure = error instanceof Error ? error : new Error(String(error));
    });
  }

  /** Stop polling and end the database client. */
  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
    this.#child.stdin.end();
    if (this.#child.exitCode === null && this.#child.signalCode === null) await new Promise((resolve) => this.#child.once('close', resolve));
  }

  /** Ids whose row was present (not deleted) on a query sent after `atMs`. */
  presentAfter(atMs: number): string[] {
    return presentAfter(this.traces.values(), atMs);
  }

  /** Resolves once every row is deleted, or rejects after `timeoutMs` with what is left. */
  async whenAllGone(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const left = [...this.traces.values()].filter((t) => t.firstGoneSentMs === undefined);
      if (left.length === 0) return;
      if (!this.#running) throw new Error(`the Nova database watcher stopped: ${this.#failure?.message ?? 'stop() was called'}`);
      if (performance.now() > deadline) {
        throw new Error(`${left.length} server row(s) not deleted after ${timeoutMs} ms: ${left.map((t) => `${t.id} (${describeSequence(t)})`).join('; ')}`);
      }
      await sleep(50);
    }
  }

  async #run(): Promise<void> {
    const list = this.#ids.map((id) => `'${id}'`).join(',');
    const query = `SELECT uuid, deleted, IFNULL(vm_state, '-'), IFNULL(task_state, '-') FROM instances WHERE uuid IN (${list}); SELECT 'END';\n`;
    while (this.#running) {
      const sentMs = performance.now();
      this.#child.stdin.write(query);
      const rows = new Map<string, string>();
      for (;;) {
        const next = await this.#lines.next();
        if (next.done) throw new Error(`the mariadb client ended: ${this.#stderr.trim() || 'no message'}`);
        if (next.value === 'END') break;
        const [uuid, deleted, vmState, taskState] = next.value.split('\t');
        if (!uuid) continue;
        // API status DELETED is vm_state 'deleted'; the row's `deleted` column set is the 404.
        rows.set(uuid, deleted !== '0' && deleted !== 'NULL' ? 'gone' : vmState === 'deleted' ? 'DELETED' : `${vmState}${taskState !== '-' ? `/${taskState}` : ''}`);
      }
      const answeredMs = performance.now();
      for (const id of this.#ids) record(this.traces.get(id)!, rows.get(id) ?? 'failed: no row', sentMs, answeredMs);
      const wait = sentMs + this.#intervalMs - performance.now();
      if (wait > 0) await sleep(wait);
    }
  }
}
