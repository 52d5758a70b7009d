/**
 * The in-process front of a fake: an axios adapter that hands each request to the fake's
 * {@link WireHandler} without a socket, and settles the way axios's own `node:http` adapter does
 * (axios `lib/adapters/http.js`), so client code under test cannot tell the difference:
 *
 * - a response: `{ status, statusText, headers: AxiosHeaders, data, config, request }`, `data` the
 *   body as text (`responseEncoding`, default UTF-8, BOM stripped), a `Buffer` for
 *   `responseType: 'arraybuffer'`, a stream for `'stream'`; axios then applies `transformResponse`
 *   and `validateStatus` rejects with `ERR_BAD_REQUEST` (4xx) or `ERR_BAD_RESPONSE` (5xx);
 * - a reset connection rejects with an `AxiosError` of code `ECONNRESET` ("socket hang up"), a
 *   closed fake (or another host) with `ECONNREFUSED`;
 * - `config.signal` (or a `cancelToken`) aborting rejects with axios's `CanceledError`
 *   (`ERR_CANCELED`); a hung request waits for exactly that;
 * - `config.timeout` rejects with `ECONNABORTED` (`ETIMEDOUT` with `transitional.clarifyTimeoutError`),
 *   timed on the global timers (a whole-request limit; axios's is the socket's idle time);
 * - `maxContentLength` / `maxBodyLength` reject as axios does (`ERR_BAD_RESPONSE` / `ERR_BAD_REQUEST`).
 *
 * Not modelled: redirects (the fakes never send one), compression, proxies, upload/download progress
 * events, and request bodies other than text, `Buffer`, `ArrayBuffer`/typed arrays and
 * `URLSearchParams`. A delayed reply waits on the global timers, so `vi.useFakeTimers()` drives it.
 *
 * @module
 */
import { STATUS_CODES } from 'node:http';
import { Readable } from 'node:stream';
import axios, {
  AxiosError,
  AxiosHeaders,
  CanceledError,
  type AxiosAdapter,
  type AxiosResponse,
  type InternalAxiosRequestConfig,
} from 'axios';
import { systemClock, type TimerHandle } from '../../core/clock.js';
import type { WireHandler, WireReply } from './types.js';

/** What stands in for axios's `ClientRequest` in `response.request` and `error.request`. */
export interface InProcessRequest {
  method: string;
  /** Path and query. */
  path: string;
  /** `host:port`. */
  host: string;
  protocol: string;
  /** Set when the client gave up (signal, cancel token or timeout). */
  aborted: boolean;
}

/** A network error shaped as `node:http` raises it, then wrapped as axios's http adapter does. */
function socketError(code: string, message: string, config: InternalAxiosRequestConfig, request: InProcessRequest): AxiosError {
  const err = Object.assign(new Error(message), { code });
  return AxiosError.from(err, undefined, config, request);
}

function requestBody(data: unknown): Buffer | undefined {
  if (data === undefined || data === null) return undefined;
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof URLSearchParams) return Buffer.from(data.toString(), 'utf8');
  return undefined;
}

function lowerCaseHeaders(config: InternalAxiosRequestConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(AxiosHeaders.from(config.headers).toJSON())) {
    if (value === undefined || value === null) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

/** One fake's in-process front. */
export class AdapterBinding {
  /** The axios adapter: give it as `adapter` to a client aimed at {@link AdapterBinding.origin}. */
  readonly adapter: AxiosAdapter;
  private closed = false;
  private readonly open = new Set<() => void>();

  /**
   * @param origin - The only origin served (`http://127.0.0.1:PORT`); a request to another host
   *   is refused (`ECONNREFUSED`), as a socket aimed elsewhere would not reach this fake.
   * @param handler - The fake's handler, the same one its {@link HttpBinding} runs.
   */
  constructor(
    readonly origin: string,
    private readonly handler: WireHandler,
  ) {
    this.adapter = (config) => this.call(config);
  }

  /** Reset every open request (`ECONNRESET`, as a closed socket) and refuse new ones (`ECONNREFUSED`). */
  close(): void {
    this.closed = true;
    for (const reset of [...this.open]) reset();
    this.open.clear();
  }

  private call(config: InternalAxiosRequestConfig): Promise<AxiosResponse> {
    return new Promise<AxiosResponse>((resolve, reject) => {
      let url: URL;
      try {
        url = new URL(axios.getUri(config));
      } catch (e) {
        reject(AxiosError.from(e as Error, AxiosError.ERR_INVALID_URL, config));
        return;
      }
      const method = (config.method ?? 'get').toUpperCase();
      const request: InProcessRequest = { method, path: url.pathname + url.search, host: url.host, protocol: url.protocol, aborted: false };
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        reject(new AxiosError(`Unsupported protocol ${url.protocol}`, AxiosError.ERR_BAD_REQUEST, config));
        return;
      }
      if (this.closed || url.origin !== this.origin) {
        reject(socketError('ECONNREFUSED', `connect ECONNREFUSED ${url.host}`, config, request));
        return;
      }
      const body = requestBody(config.data);
      if (config.data !== undefined && config.data !== null && body === undefined) {
        reject(new AxiosError('Data after transformation must be a string, an ArrayBuffer, a Buffer, or a Stream', AxiosError.ERR_BAD_REQUEST, config));
        return;
      }
      const maxBody = config.maxBodyLength ?? -1;
      if (body && maxBody > -1 && body.length > maxBody) {
        reject(new AxiosError('Request body larger than maxBodyLength limit', AxiosError.ERR_BAD_REQUEST, config));
        return;
      }

      let settled = false;
      let timer: TimerHandle | undefined;
      const finish = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        systemClock.clearTimeout(timer);
        config.signal?.removeEventListener?.('abort', onAbort);
        config.cancelToken?.unsubscribe(onAbort);
        this.open.delete(onClose);
        fn();
      };
      const giveUp = (error: unknown): void =>
        finish(() => {
          request.aborted = true;
          reject(error);
        });
      function onAbort(reason?: unknown): void {
        const event = reason as { type?: unknown } | undefined;
        giveUp(!reason || event?.type ? new CanceledError(undefined, config, request) : reason);
      }
      const onClose = (): void => finish(() => reject(socketError('ECONNRESET', 'socket hang up', config, request)));

      if (config.signal?.aborted) {
        onAbort();
        return;
      }
      config.signal?.addEventListener?.('abort', onAbort);
      config.cancelToken?.subscribe(onAbort);
      if (config.timeout && config.timeout > 0) {
        const message = config.timeoutErrorMessage || `timeout of ${config.timeout}ms exceeded`;
        const code = config.transitional?.clarifyTimeoutError ? AxiosError.ETIMEDOUT : AxiosError.ECONNABORTED;
        timer = systemClock.setTimeout(() => giveUp(new AxiosError(message, code, config, request)), config.timeout);
      }
      this.open.add(onClose);

      const reply: WireReply = {
        get gone() {
          return settled;
        },
        send: (status, headers, payload) =>
          finish(() => {
            try {
              resolveResponse(resolve, reject, config, request, status, headers, payload ?? Buffer.alloc(0));
            } catch (e) {
              reject(AxiosError.from(e as Error, undefined, config, request));
            }
          }),
        reset: onClose,
      };
      try {
        this.handler({ method, url: request.path, headers: lowerCaseHeaders(config), body: Promise.resolve(body?.toString('utf8') ?? '') }, reply);
      } catch (e) {
        finish(() => reject(AxiosError.from(e as Error, undefined, config, request)));
      }
    });
  }
}

function resolveResponse(
  resolve: (r: AxiosResponse) => void,
  reject: (e: unknown) => void,
  config: InternalAxiosRequestConfig,
  request: InProcessRequest,
  status: number,
  sent: Record<string, string>,
  payload: Buffer,
): void {
  const headers = new AxiosHeaders();
  for (const [name, value] of Object.entries(sent)) headers.set(name.toLowerCase(), value);
  if (!headers.has('date')) headers.set('date', new Date().toUTCString());
  const maxContent = config.maxContentLength ?? -1;
  const responseType = config.responseType;
  if (responseType !== 'stream' && maxContent > -1 && payload.length > maxContent) {
    reject(new AxiosError(`maxContentLength size of ${maxContent} exceeded`, AxiosError.ERR_BAD_RESPONSE, config, request));
    return;
  }
  let data: unknown = payload;
  if (responseType === 'stream') data = Readable.from([payload]);
  else if (responseType !== 'arraybuffer') {
    const encoding = (config.responseEncoding ?? 'utf8') as BufferEncoding;
    let text = payload.toString(encoding);
    if (encoding === 'utf8' && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    data = text;
  }
  const response: AxiosResponse = { status, statusText: STATUS_CODES[status] ?? '', headers, config, request, data };
  const validate = config.validateStatus;
  if (!status || !validate || validate(status)) {
    resolve(response);
    return;
  }
  const code = status >= 400 && status < 500 ? AxiosError.ERR_BAD_REQUEST : AxiosError.ERR_BAD_RESPONSE;
  reject(new AxiosError(`Request failed with status code ${status}`, code, config, request, response));
}
