/**
 * An independent witness of when Nova counts and frees a server, for the churn's per-run bound and lags:
 * one mariadb client on the harness's socket, one `SELECT` of the project's instance rows in
 * `nova_cell1` every `intervalMs` (100 ms). A row that appears is a server Nova counts in its usage
 * (the cell's row is written after scheduling, and Nova counts cores from those rows); a row whose
 * `deleted` column is set is the 404 (the same transaction drops the usage). Times are epoch ms on this
 * machine's clock, as the workers stamp theirs: `seenAt` = the answer of the first query that showed it,
 * `goneAt` likewise, and `presentUntilSentAt` = the send time of the last query that still saw the row
 * (a worker reporting the server gone before that reported it too early).
 *
 * @module
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

/** What the witness saw of one instance row. */
export interface RowTrace {
  uuid: string;
  vcpus: number;
  name: string;
  /** First answer (epoch ms) that showed the row: Nova counts the server from about then. */
  seenAt: number;
  /** First answer that showed the row deleted (the 404 at Nova), if it did. */
  goneAt?: number;
  /** Send time of the last query that saw the row not deleted. */
  presentUntilSentAt: number;
  vmState: string;
  /** Some answer showed vm_state error (Nova's quota recheck, a failed build). */
  everError: boolean;
}

/** Polls the project's instance rows; `rows` fills as it goes. */
export class ProjectRowWatcher {
  readonly rows = new Map<string, RowTrace>();
  readonly #child: ChildProcessByStdio<Writable, Readable, Readable>;
  readonly #lines: AsyncIterator<string>;
  #running = false;
  #loop: Promise<void> | undefined;
  #stderr = '';
  failure: Error | undefined;

  constructor(
    socket: string,
    readonly project: string,
    readonly intervalMs = 100,
  ) {
    if (!/^[A-Za-z0-9_.-]+$/.test(project)) throw new Error(`ProjectRowWatcher: unexpected project name ${project}`);
    this.#child = spawn('mariadb', ['--no-defaults', `--socket=${socket}`, '-uroot', '-N', '-B', '-n', 'nova_cell1'], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child.stderr.setEncoding('utf8').on('data', (c: string) => (this.#stderr += c));
    this.#child.on('error', (e) => (this.#stderr += `${e.message}\n`));
    this.#lines = createInterface({ input: this.#child.stdout })[Symbol.asyncIterator]();
  }

  start(): void {
    this.#running = true;
    this.#loop = this.#run().catch((e: unknown) => {
      this.#running = false;
      this.failure = e instanceof Error ? e : new Error(String(e));
    });
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
    this.#child.stdin.end();
    if (this.#child.exitCode === null && this.#child.signalCode === null) await new Promise((resolve) => this.#child.once('close', resolve));
  }

  async #run(): Promise<void> {
    const query = `SELECT uuid, deleted, vcpus, display_name, IFNULL(vm_state, '-') FROM instances WHERE project_id = '${this.project}'; SELECT 'END';\n`;
    while (this.#running) {
      const sentAt = Date.now();
      this.#child.stdin.write(query);
      const answer: string[][] = [];
      for (;;) {
        const next = await this.#lines.next();
        if (next.done) throw new Error(`the mariadb client ended: ${this.#stderr.trim() || 'no message'}`);
        if (next.value === 'END') break;
        answer.push(next.value.split('\t'));
      }
      const at = Date.now();
      for (const [uuid, deleted, vcpus, name, vmState] of answer) {
        if (!uuid) continue;
        let r = this.rows.get(uuid);
        // A row deleted before the first look is an earlier run's (the project's name is reused).
        if (!r && deleted !== '0' && deleted !== 'NULL') continue;
        if (!r) this.rows.set(uuid, (r = { uuid, vcpus: Number(vcpus), name: name ?? '', seenAt: at, presentUntilSentAt: 0, vmState: vmState ?? '-', everError: false }));
        r.vmState = vmState ?? '-';
        if (r.vmState === 'error') r.everError = true;
        if (deleted !== '0' && deleted !== 'NULL') r.goneAt ??= at;
        else r.presentUntilSentAt = sentAt;
      }
      const wait = sentAt + this.intervalMs - Date.now();
      if (wait > 0) await sleep(wait);
    }
  }
}
