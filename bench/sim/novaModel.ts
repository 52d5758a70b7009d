/**
 * The Nova of the fleet simulation: a FakeNova (its options carry the compute side: scheduling,
 * BUILD, the delete and its `DELETED` window growing with the deletes in flight, legacy counting
 * from the create until the row is destroyed, the API quota check and conductor's recheck) behind
 * a front that models nova-api: every answer takes a drawn time that grows with the requests in
 * flight. The front also records what the simulation measures: every request by kind, the time
 * `GET /limits` answers took, and which job's POST Nova accepted when.
 *
 * The figures are those a real Nova 26.2 (fake virt driver, one API worker) showed on loopback,
 * see `docs/fleet-simulation.md`.
 *
 * @module
 */
import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';
import type { Clock } from 'nova-guard';
import type { FakeNovaOptions } from 'nova-guard/testing';
import { logNormal } from '../stats.js';

/** Nova's timings in the model, ms. */
export interface NovaModel {
  /** Part of the build during which the server is only a build request (not counted by Nova). */
  schedulingMs: number;
  /** POST accepted -> ACTIVE. */
  buildMs: number;
  /** DELETE accepted -> status DELETED. */
  deleteMs: number;
  /** `DELETED` window of a delete that is alone: drawn uniformly from this range. */
  windowAloneMs: readonly [number, number];
  /** Added to the window per other delete in flight: drawn uniformly from this range. */
  windowPerDeleteMs: readonly [number, number];
  /** Median nova-api service time of a request with nothing else in flight, by kind. */
  apiMedianMs: { read: number; list: number; create: number; delete: number };
  /** Log-normal spread (sigma) of the service time. */
  apiSigma: number;
  /** Added to the median per other request in flight (one API worker queueing). */
  apiPerInFlightMs: number;
}

/**
 * The real-Nova figures (fake virt driver, loopback, one API worker), as the model's defaults:
 * create -> ACTIVE about 0.3-0.7 s, DELETE -> DELETED about 0.2-0.3 s, the `DELETED` window
 * 0.1-0.2 s for one delete and seconds (up to about 12 s) for 40 at once, reads in tens of ms.
 */
export const REAL_NOVA_MODEL: NovaModel = {
  schedulingMs: 250,
  buildMs: 700,
  deleteMs: 250,
  windowAloneMs: [100, 200],
  windowPerDeleteMs: [100, 300],
  apiMedianMs: { read: 30, list: 60, create: 250, delete: 150 },
  apiSigma: 0.4,
  apiPerInFlightMs: 15,
};

/** The FakeNova options of the model, for a project of `quotaCores` cores (instances and RAM unlimited). */
export function fakeNovaOptions(model: NovaModel, quotaCores: number, random: () => number): FakeNovaOptions {
  const between = (r: readonly [number, number]): number => r[0] + random() * (r[1] - r[0]);
  return {
    maxTotalCores: quotaCores,
    maxTotalInstances: -1,
    maxTotalRAMSize: -1,
    schedulingDelayMs: model.schedulingMs,
    buildDelayMs: model.buildMs,
    deleteDelayMs: model.deleteMs,
    deletedWindowMs: (inFlight) => {
      let ms = between(model.windowAloneMs);
      for (let i = 1; i < inFlight; i++) ms += between(model.windowPerDeleteMs);
      return ms;
    },
  };
}

/** The kinds of request the simulation counts. */
export type RequestKind = 'create' | 'delete' | 'get' | 'list' | 'limits' | 'flavor' | 'other';

/** What the front saw. */
export interface FrontRecord {
  byKind: Record<RequestKind, number>;
  total: number;
  /** Total time GET /limits answers took (ms), and how many. */
  limitsWaitMs: number;
  /** Most requests in flight at once. */
  peakInFlight: number;
  /** Response body bytes by kind. */
  bytes: Record<RequestKind, number>;
}

/** A request's kind from its method and path (the path after `/v2.1`). */
export function kindOf(method: string, path: string): RequestKind {
  if (method === 'POST' && /\/servers$/.test(path)) return 'create';
  if (method === 'DELETE') return 'delete';
  if (method !== 'GET') return 'other';
  if (/\/limits$/.test(path)) return 'limits';
  if (/\/flavors/.test(path)) return 'flavor';
  if (/\/servers(\/detail)?$/.test(path)) return 'list';
  if (/\/servers\/[^/]+$/.test(path)) return 'get';
  return 'other';
}

/**
 * nova-api in front of a FakeNova adapter: each request waits half its drawn service time before
 * Nova handles it and half after (so Nova's state is read in the middle of the answer's time).
 * `onCreated(name, serverId, atMs)` is told of each POST Nova accepted (202), at the time Nova
 * handled it.
 */
export class NovaApiFront {
  readonly record: FrontRecord = {
    byKind: { create: 0, delete: 0, get: 0, list: 0, limits: 0, flavor: 0, other: 0 },
    total: 0,
    limitsWaitMs: 0,
    peakInFlight: 0,
    bytes: { create: 0, delete: 0, get: 0, list: 0, limits: 0, flavor: 0, other: 0 },
  };
  readonly adapter: AxiosAdapter;
  #inFlight = 0;

  constructor(
    inner: AxiosAdapter,
    private readonly model: NovaModel,
    private readonly clock: Clock,
    private readonly random: () => number,
    private readonly onCreated: (name: string, serverId: string, atMs: number) => void,
  ) {
    this.adapter = (config) => this.#call(inner, config);
  }

  async #call(inner: AxiosAdapter, config: InternalAxiosRequestConfig): Promise<AxiosResponse> {
    const method = (config.method ?? 'get').toUpperCase();
    const path = new URL(config.url ?? '', config.baseURL ?? 'http://x').pathname;
    const kind = kindOf(method, path);
    const r = this.record;
    r.byKind[kind]++;
    r.total++;
    this.#inFlight++;
    r.peakInFlight = Math.max(r.peakInFlight, this.#inFlight);
    const base = kind === 'create' ? this.model.apiMedianMs.create : kind === 'delete' ? this.model.apiMedianMs.delete : kind === 'list' ? this.model.apiMedianMs.list : this.model.apiMedianMs.read;
    const serviceMs = logNormal(this.random, base + this.model.apiPerInFlightMs * (this.#inFlight - 1), this.model.apiSigma);
    const t0 = this.clock.now();
    try {
      await this.#wait(serviceMs / 2);
      const res = await inner(config);
      r.bytes[kind] += typeof res.data === 'string' ? res.data.length : 0;
      if (kind === 'create' && res.status === 202) this.#created(config, res);
      await this.#wait(serviceMs / 2);
      return res;
    } catch (e) {
      await this.#wait(serviceMs / 2);
      throw e;
    } finally {
      this.#inFlight--;
      if (kind === 'limits') r.limitsWaitMs += this.clock.now() - t0;
    }
  }

  #created(config: InternalAxiosRequestConfig, res: AxiosResponse): void {
    try {
      const sent = JSON.parse(String(config.data)) as { server?: { name?: string } };
      const body = (typeof res.data === 'string' ? JSON.parse(res.data) : res.data) as { server?: { id?: string } };
      if (sent.server?.name && body.server?.id) this.onCreated(sent.server.name, body.server.id, this.clock.now());
    } catch {
      // not a body the simulation made: not tracked
    }
  }

  #wait(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimeout(resolve, ms));
  }
}
