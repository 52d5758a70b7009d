/**
 * Traces, metrics and the global request id, on standard interfaces: everything goes through
 * `@opentelemetry/api` and costs nothing until the application registers an OpenTelemetry SDK
 * (`trace.setGlobalTracerProvider`, `metrics.setGlobalMeterProvider`, or the Node SDK). nova-guard
 * never depends on an SDK.
 *
 * Spans (tracer `nova-guard`; with a context manager registered, e.g. the Node SDK's, the request
 * spans of an operation are children of its span, and the operation's span a child of the caller's):
 * - one `CLIENT` span per HTTP exchange (`GET`, `POST`, ...), with the HTTP semantic conventions
 *   `http.request.method`, `url.full` (secrets redacted), `server.address`, `server.port`,
 *   `http.response.status_code`, `error.type`, plus `openstack.request_id` (Nova's answer) and
 *   `openstack.global_request_id` (the id nova-guard sent);
 * - `nova_guard.delete_wait`: one `deleteServer` call, from its DELETE to the server confirmed gone;
 * - `nova_guard.guarded_create`: one guarded create, headroom waits and re-POSTs included.
 *
 * Metrics (meter `nova-guard`; durations in ms):
 * - counters `nova_guard.quota_403s_absorbed`, `nova_guard.creates` and `nova_guard.deletes`
 *   (attribute `nova_guard.outcome`), `nova_guard.reauthentications`;
 * - histograms `nova_guard.delete.duration` (DELETE to confirmed gone),
 *   `nova_guard.headroom_wait.duration` (time a create waited for quota headroom) and
 *   `nova_guard.request.duration` (one HTTP exchange; `http.request.method`,
 *   `http.response.status_code`, `server.address`);
 * - observable gauges `nova_guard.deletes.pending` and `nova_guard.creates.waiting`.
 *
 * Request id: every logical operation (one `deleteServer` call, one guarded create) runs with one
 * `req-<uuid>` sent as `X-OpenStack-Request-ID` on each of its requests. Nova (oslo.middleware
 * `RequestId`) accepts an inbound id of exactly that format as the global request id and logs it
 * beside its own, so a job can be followed into Nova's logs.
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { context, metrics, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Counter, type Histogram, type Meter, type Span } from '@opentelemetry/api';

/** Instrumentation scope name of nova-guard's tracer and meter. */
export const INSTRUMENTATION_SCOPE = 'nova-guard';

/** What one logical operation carries through its requests. */
export interface OperationContext {
  /** The `req-<uuid>` sent as `X-OpenStack-Request-ID`. */
  readonly requestId: string;
  /** Quota refusals (403/413 quota faults) answered to this operation so far. */
  quotaRefusals: number;
  /** The OpenTelemetry context of the operation's span, for its requests sent from elsewhere (the delete engine's polls). */
  otelContext?: Context | undefined;
}

const operations = new AsyncLocalStorage<OperationContext>();

/** A new global request id: `req-` and a random (v4) UUID, the format Nova accepts. */
export function newRequestId(): string {
  return `req-${randomUUID()}`;
}

/** The logical operation the caller runs in, if any. */
export function currentOperation(): OperationContext | undefined {
  return operations.getStore();
}

/**
 * Run `fn` as one logical operation: its requests share one `X-OpenStack-Request-ID`. Nested
 * calls keep the outer operation (a guarded create's cleanup DELETE carries the create's id).
 */
export function withOperation<T>(fn: (op: OperationContext) => Promise<T>): Promise<T> {
  const outer = operations.getStore();
  if (outer) return fn(outer);
  const op: OperationContext = { requestId: newRequestId(), quotaRefusals: 0 };
  return operations.run(op, () => fn(op));
}

/**
 * Run `fn` inside `op` (a shared poll of the delete engine, made for the first caller waiting on a
 * server, carries that caller's request id); as it is when `op` is undefined.
 */
export function inOperation<T>(op: OperationContext | undefined, fn: () => Promise<T>): Promise<T> {
  if (!op) return fn();
  const otel = op.otelContext;
  return operations.run(op, () => (otel ? context.with(otel, fn) : fn()));
}

interface Instruments {
  meter: Meter;
  quota403s: Counter;
  creates: Counter;
  deletes: Counter;
  reauth: Counter;
  deleteDuration: Histogram;
  headroomWait: Histogram;
  requestDuration: Histogram;
}

let cached: Instruments | undefined;
let pendingDeletes = 0;
let waitingCreates = 0;

/** The instruments on the current global meter (made again when the application registers another provider). */
function instruments(): Instruments {
  const meter = metrics.getMeter(INSTRUMENTATION_SCOPE);
  if (cached?.meter === meter) return cached;
  // Durations in ms (the project's unit), carried as the instrument's unit, not in its name
  // (OpenTelemetry naming: `*.duration` with a unit). Prometheus exporters that append units
  // derive the suffix from it; @opentelemetry/exporter-prometheus writes it as `# UNIT ... ms`.
  const ms = { unit: 'ms' };
  meter
    .createObservableGauge('nova_guard.deletes.pending', { description: 'deleteServer calls between their DELETE and the server confirmed gone' })
    .addCallback((r) => r.observe(pendingDeletes));
  meter
    .createObservableGauge('nova_guard.creates.waiting', { description: 'guarded creates waiting for quota headroom' })
    .addCallback((r) => r.observe(waitingCreates));
  cached = {
    meter,
    quota403s: meter.createCounter('nova_guard.quota_403s_absorbed', { description: 'quota refusals of guarded creates that were waited out and retried' }),
    creates: meter.createCounter('nova_guard.creates', { description: 'guarded creates, by nova_guard.outcome (succeeded, failed)' }),
    deletes: meter.createCounter('nova_guard.deletes', { description: 'deleteServer calls, by nova_guard.outcome' }),
    reauth: meter.createCounter('nova_guard.reauthentications', { description: 'Keystone authentications after the first (expiry or a 401)' }),
    deleteDuration: meter.createHistogram('nova_guard.delete.duration', { ...ms, description: 'from DELETE to the server confirmed gone' }),
    headroomWait: meter.createHistogram('nova_guard.headroom_wait.duration', { ...ms, description: 'time a guarded create waited for quota headroom' }),
    requestDuration: meter.createHistogram('nova_guard.request.duration', { ...ms, description: 'one HTTP exchange with Nova or Keystone' }),
  };
  return cached;
}

function tracer() {
  return trace.getTracer(INSTRUMENTATION_SCOPE);
}

function errorType(error: unknown): string {
  return error instanceof Error ? error.constructor.name : typeof error;
}

function endWithError(span: Span, error: unknown): void {
  span.setAttribute('error.type', errorType(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  span.end();
}

/** One HTTP exchange being traced: see {@link startRequest}. */
export interface RequestTrace {
  /** The exchange got a response (any status). */
  response(status: number, openstackRequestId: string | undefined): void;
  /** The exchange got no response (`error`: the typed error). */
  failed(error: unknown): void;
}

/**
 * Start the span and the timing of one HTTP exchange.
 * @param urlFull - the request URL with secrets already redacted.
 * @param nowMs - the clock's `now()`, read again at the end.
 */
export function startRequest(method: string, urlFull: string, serverId: string | undefined, nowMs: () => number): RequestTrace {
  let address: string | undefined;
  let port: number | undefined;
  try {
    const u = new URL(urlFull);
    address = u.hostname;
    port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  } catch {
    // not a URL: no server attributes
  }
  const op = currentOperation();
  const attributes: Attributes = {
    'http.request.method': method,
    'url.full': urlFull,
    ...(address !== undefined ? { 'server.address': address, 'server.port': port } : {}),
    ...(op ? { 'openstack.global_request_id': op.requestId } : {}),
    ...(serverId !== undefined ? { 'openstack.server_id': serverId } : {}),
  };
  const span = tracer().startSpan(method, { kind: SpanKind.CLIENT, attributes });
  const started = nowMs();
  const metricAttrs: Attributes = { 'http.request.method': method, ...(address !== undefined ? { 'server.address': address } : {}) };
  return {
    response(status, openstackRequestId) {
      span.setAttribute('http.response.status_code', status);
      if (openstackRequestId !== undefined) span.setAttribute('openstack.request_id', openstackRequestId);
      if (status >= 400) {
        span.setAttribute('error.type', String(status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
      instruments().requestDuration.record(Math.max(0, nowMs() - started), { ...metricAttrs, 'http.response.status_code': status });
    },
    failed(error) {
      endWithError(span, error);
      instruments().requestDuration.record(Math.max(0, nowMs() - started), { ...metricAttrs, 'error.type': errorType(error) });
    },
  };
}

/** Count a quota refusal answered to the current operation (read by {@link traceGuardedCreate}). */
export function recordQuotaRefusal(): void {
  const op = currentOperation();
  if (op) op.quotaRefusals++;
}

/** Count one Keystone authentication after the first of a provider. */
export function recordReauthentication(): void {
  instruments().reauth.add(1);
}

/**
 * Run one `deleteServer` call as an operation (one request id) under the span
 * `nova_guard.delete_wait`; count it by outcome and, when the server was confirmed gone, record
 * `nova_guard.delete.duration`.
 */
export function traceDeleteWait<T extends { outcome: string }>(serverId: string, nowMs: () => number, fn: () => Promise<T>): Promise<T> {
  return withOperation(async (op) => {
    const span = tracer().startSpan('nova_guard.delete_wait', { attributes: { 'openstack.server_id': serverId, 'openstack.global_request_id': op.requestId } });
    const started = nowMs();
    pendingDeletes++;
    const inst = instruments();
    try {
      const ctx = trace.setSpan(context.active(), span);
      op.otelContext ??= ctx;
      const r = await context.with(ctx, fn);
      span.setAttribute('nova_guard.outcome', r.outcome);
      span.end();
      inst.deletes.add(1, { 'nova_guard.outcome': r.outcome });
      if (r.outcome === 'deleted' || r.outcome === 'soft-deleted') inst.deleteDuration.record(Math.max(0, nowMs() - started), { 'nova_guard.outcome': r.outcome });
      return r;
    } catch (error) {
      endWithError(span, error);
      inst.deletes.add(1, { 'nova_guard.outcome': 'failed', 'error.type': errorType(error) });
      throw error;
    } finally {
      pendingDeletes--;
    }
  });
}

/**
 * Run one guarded create as an operation (one request id) under the span
 * `nova_guard.guarded_create`; count it by outcome and count the quota refusals it absorbed (all
 * it saw when it succeeded; all but the last when it failed on one, as `isQuotaRefusal` tells).
 */
export function traceGuardedCreate<T>(fn: () => Promise<T>, isQuotaRefusal: (error: unknown) => boolean): Promise<T> {
  return withOperation(async (op) => {
    const span = tracer().startSpan('nova_guard.guarded_create', { attributes: { 'openstack.global_request_id': op.requestId } });
    const inst = instruments();
    const before = op.quotaRefusals;
    try {
      const r = await context.with(trace.setSpan(context.active(), span), fn);
      const absorbed = op.quotaRefusals - before;
      if (absorbed > 0) inst.quota403s.add(absorbed);
      span.setAttributes({ 'nova_guard.outcome': 'succeeded', 'nova_guard.quota_403s_absorbed': absorbed });
      span.end();
      inst.creates.add(1, { 'nova_guard.outcome': 'succeeded' });
      return r;
    } catch (error) {
      const seen = op.quotaRefusals - before;
      const absorbed = Math.max(0, seen - (isQuotaRefusal(error) ? 1 : 0));
      if (absorbed > 0) inst.quota403s.add(absorbed);
      span.setAttributes({ 'nova_guard.outcome': 'failed', 'nova_guard.quota_403s_absorbed': absorbed });
      endWithError(span, error);
      inst.creates.add(1, { 'nova_guard.outcome': 'failed', 'error.type': errorType(error) });
      throw error;
    }
  });
}

/**
 * How many guarded creates are waiting for quota headroom now (the `nova_guard.creates.waiting` gauge's value).
 * For tests: the suite checks that none is left waiting after a test file.
 * @internal
 */
export function waitingCreatesNow(): number {
  return waitingCreates;
}

/** Time a wait for quota headroom: `nova_guard.headroom_wait.duration` and the `nova_guard.creates.waiting` gauge. */
export async function traceHeadroomWait<T>(nowMs: () => number, fn: () => Promise<T>): Promise<T> {
  const started = nowMs();
  waitingCreates++;
  try {
    return await fn();
  } finally {
    waitingCreates--;
    instruments().headroomWait.record(Math.max(0, nowMs() - started));
  }
}
