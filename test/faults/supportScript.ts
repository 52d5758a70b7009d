/**
 * A scripted front for FakeNova, for the guard's property tests: FakeNova's in-process adapter with
 * the answers to `POST /servers` and `GET /limits` taken, in arrival order, from a script (a
 * generated sequence). Every other request, and every request after the script is used up, goes to
 * FakeNova unchanged. Each `POST /servers` is recorded with the guard's claim tag (server metadata
 * `nova-guard-claim`), so the POSTs of one guarded call can be told apart from another's.
 */
import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';
import type { FakeNova } from '../../src/testing/index.js';

/** What a `POST /servers` is answered. `lost-*`: Nova makes the server, then the answer is lost so. */
export const POST_ANSWERS = [
  'ok',
  'quota legacy',
  'quota pre-liberty',
  'quota unified',
  'quota ports',
  'quota bare',
  'quota 413 legacy',
  'quota permanent',
  'policy 403',
  '429 Retry-After',
  '429 no Retry-After',
  '413 overLimit',
  '500',
  '503',
  'reset',
  'hang',
  '2xx garbled',
  '202 without server',
  'lost reset',
  'lost 500',
  'lost hang',
  'lost 2xx garbled',
] as const;
export type PostAnswer = (typeof POST_ANSWERS)[number];

/** What a `GET /limits` is answered: FakeNova's own, or a body of another shape, or a failure. */
export const LIMITS_ANSWERS = ['fake', 'other shape', 'no absolute', 'strings', 'unlimited', 'full', 'limit 0 used above', 'html 200', '500'] as const;
export type LimitsAnswer = (typeof LIMITS_ANSWERS)[number];

/** What a search (`GET /servers/detail`) is answered: FakeNova's own, or a failure the client does not retry. */
export const SEARCH_ANSWERS = ['fake', 'garbled 200', 'proxy 404', '500'] as const;
export type SearchAnswer = (typeof SEARCH_ANSWERS)[number];

/** How the guard must read a POST answer (see `src/guard/retryPolicy.ts` and `lostCreate.ts`). */
export type AnswerKind = 'created' | 'quota' | 'final' | 'rate-limit' | 'lost';

/** The kind of `a`: a server made, a transient quota error, a final error, a rate limit, or an answer lost with nothing made. */
export function kindOf(a: PostAnswer): AnswerKind {
  if (a === 'ok' || a.startsWith('lost ')) return 'created';
  if (a === 'quota permanent' || a === 'policy 403') return 'final';
  if (a.startsWith('quota')) return 'quota';
  if (a === '429 Retry-After' || a === '429 no Retry-After' || a === '413 overLimit') return 'rate-limit';
  return 'lost';
}

const QUOTA_MESSAGES: Partial<Record<PostAnswer, string>> = {
  'quota legacy': 'Quota exceeded for cores, ram: Requested 2, 2048, but already used 19, 1024 of 20, 51200 cores, ram',
  'quota pre-liberty': 'Quota exceeded for instances: Requested 1, but already used 10 of 10 instances',
  'quota unified': 'Project demo is over a limit for [Resource class:VCPU is over limit of 20 due to current usage 19 and delta 2]',
  'quota ports': 'Maximum number of ports exceeded',
  'quota bare': 'Quota exceeded, too many servers.',
  'quota permanent': 'Quota exceeded for cores: Requested 2, but already used 0 of 1 cores',
};

const HTML = '<html><body><h1>Welcome</h1></body></html>';

/** One recorded `POST /servers`. */
export interface ScriptedPost {
  tag: string | undefined;
  /** The body's metadata `caller`, set by the test to tell its callers apart. */
  caller: string | undefined;
  answer: PostAnswer;
}

type Reply = { status: number; body?: unknown; headers?: Record<string, string> };

function postReply(a: PostAnswer): Reply | 'reset' | 'hang' {
  const msg = QUOTA_MESSAGES[a];
  if (a === 'quota 413 legacy') return { status: 413, body: { overLimit: { code: 413, message: 'Quota exceeded for cores: Requested 2, but already used 19 of 20 cores' } } };
  if (msg !== undefined) return { status: 403, body: { forbidden: { code: 403, message: msg } } };
  switch (a) {
    case 'policy 403':
      return { status: 403, body: { forbidden: { code: 403, message: 'Policy doesn\'t allow os_compute_api:servers:create to be performed.' } } };
    case '429 Retry-After':
      return { status: 429, body: { overLimit: { code: 429, message: 'This request was rate-limited.', retryAfter: '1' } }, headers: { 'retry-after': '1' } };
    case '429 no Retry-After':
      return { status: 429, body: '' };
    case '413 overLimit':
      return { status: 413, body: { overLimit: { code: 413, message: 'This request was rate-limited.', retryAfter: '2' } }, headers: { 'retry-after': '2' } };
    case '500':
    case 'lost 500':
      return { status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } } };
    case '503':
      return { status: 503, body: '<html><body>503 Service Unavailable</body></html>', headers: { 'content-type': 'text/html' } };
    case 'reset':
    case 'lost reset':
      return 'reset';
    case 'hang':
    case 'lost hang':
      return 'hang';
    case '2xx garbled':
    case 'lost 2xx garbled':
      return { status: 202, body: '{"server": {"id": ' };
    case '202 without server':
      return { status: 202, body: {} };
    default:
      throw new Error(`no reply for ${a}`);
  }
}

function limitsReply(a: LimitsAnswer): Reply | undefined {
  const abs = (absolute: Record<string, unknown>): Reply => ({ status: 200, body: { limits: { rate: [], absolute } } });
  switch (a) {
    case 'fake':
      return undefined;
    case 'other shape':
      return { status: 200, body: { quota_set: { cores: 20 } } };
    case 'no absolute':
      return { status: 200, body: { limits: { rate: [] } } };
    case 'strings':
      return abs({ maxTotalCores: '20', totalCoresUsed: 'x', maxTotalInstances: null });
    case 'unlimited':
      return abs({ maxTotalCores: -1, totalCoresUsed: 3, maxTotalInstances: -1, totalInstancesUsed: 1, maxTotalRAMSize: -1, totalRAMUsed: 0 });
    case 'full':
      return abs({ maxTotalCores: 20, totalCoresUsed: 20, maxTotalInstances: 10, totalInstancesUsed: 10, maxTotalRAMSize: 51200, totalRAMUsed: 51200 });
    case 'limit 0 used above':
      return abs({ maxTotalCores: 0, totalCoresUsed: 4, maxTotalInstances: 10, totalInstancesUsed: 0, maxTotalRAMSize: 51200, totalRAMUsed: 0 });
    case 'html 200':
      return { status: 200, body: HTML, headers: { 'content-type': 'text/html' } };
    case '500':
      return { status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } } };
  }
}

const netError = (code: string, message: string, name = 'Error'): Error => Object.assign(new Error(message), { code, name });

/** Resolves never; rejects as axios does when the request's signal aborts (the client's request time limit). */
function hang(config: InternalAxiosRequestConfig): Promise<never> {
  return new Promise((_, reject) => {
    const s = config.signal as AbortSignal | undefined;
    s?.addEventListener('abort', () => reject(netError('ERR_CANCELED', 'canceled', 'CanceledError')), { once: true });
  });
}

/** The scripted front: see the module description. */
export class ScriptedFront {
  readonly posts: ScriptedPost[] = [];
  constructor(
    private readonly nova: FakeNova,
    private readonly postScript: PostAnswer[],
    private readonly limitsScript: LimitsAnswer[],
    private readonly searchScript: SearchAnswer[] = [],
  ) {}

  /** The answers to the POSTs of `caller`, in order. */
  postsOf(caller: string): PostAnswer[] {
    return this.posts.filter((p) => p.caller === caller).map((p) => p.answer);
  }

  readonly adapter: AxiosAdapter = async (config: InternalAxiosRequestConfig): Promise<AxiosResponse> => {
    const method = String(config.method ?? 'get').toUpperCase();
    const path = new URL(String(config.url), 'http://x').pathname;
    const reply = (r: Reply): AxiosResponse => ({
      status: r.status,
      statusText: String(r.status),
      headers: { 'content-type': 'application/json', 'x-openstack-request-id': 'req-scripted', ...(r.headers ?? {}) },
      data: r.body === undefined ? '' : typeof r.body === 'string' ? r.body : JSON.stringify(r.body),
      config,
      request: {},
    });
    if (method === 'GET' && path.endsWith('/limits')) {
      const r = limitsReply(this.limitsScript.shift() ?? 'fake');
      return r ? reply(r) : this.nova.adapter(config);
    }
    if (method === 'GET' && path.endsWith('/servers/detail')) {
      const a = this.searchScript.shift() ?? 'fake';
      if (a === 'garbled 200') return reply({ status: 200, body: HTML, headers: { 'content-type': 'text/html' } });
      if (a === 'proxy 404') return reply({ status: 404, body: HTML, headers: { 'content-type': 'text/html' } });
      if (a === '500') return reply({ status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } } });
      return this.nova.adapter(config);
    }
    if (method === 'POST' && path.endsWith('/servers')) {
      const answer = this.postScript.shift() ?? 'ok';
      const posted = (typeof config.data === 'string' ? JSON.parse(config.data) : config.data) as { server?: { metadata?: Record<string, string> } };
      this.posts.push({ tag: posted.server?.metadata?.['nova-guard-claim'], caller: posted.server?.metadata?.['caller'], answer });
      if (answer === 'ok') return this.nova.adapter(config);
      if (answer.startsWith('lost ')) {
        // Nova makes the server; the answer never reaches the client as sent.
        const { signal: _signal, ...rest } = config;
        await this.nova.adapter(rest as InternalAxiosRequestConfig);
      }
      const r = postReply(answer);
      if (r === 'reset') throw netError('ECONNRESET', 'socket hang up');
      if (r === 'hang') return hang(config);
      return reply(r);
    }
    return this.nova.adapter(config);
  };
}
