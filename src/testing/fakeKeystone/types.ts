/**
 * Public option and data types of {@link FakeKeystone}, the fake Keystone v3 identity service.
 *
 * @module
 */
import type { TlsPair } from '../wire/httpBinding.js';

/** A user of the fake. */
export interface FakeKeystoneUser {
  /** Default: a random hex id. */
  id?: string;
  name: string;
  password: string;
  /** Domain id. Default `default`. */
  domainId?: string;
  /** Project ids or names the user may scope to (with role `member`). Default: the default project. */
  projects?: string[];
  /** Project used when a password request has no scope. Default: the first of `projects`. */
  defaultProject?: string;
}

/** A project of the fake. */
export interface FakeKeystoneProject {
  /** Default: a random hex id. */
  id?: string;
  name: string;
  /** Domain id. Default `default`. */
  domainId?: string;
}

/** An application credential of the fake: scoped to `project` of `user`. */
export interface FakeKeystoneAppCred {
  /** Default: a random hex id. */
  id?: string;
  name: string;
  secret: string;
  /** Owning user's name or id. */
  user: string;
  /** Project name or id. Default: the user's default project. */
  project?: string;
}

/** One endpoint of the fake's compute service. */
export interface FakeKeystoneEndpoint {
  interface: 'public' | 'internal' | 'admin';
  /** Region id. Default `RegionOne`. */
  region?: string;
  url: string;
}

/** Options of {@link FakeKeystone.start}. */
export interface FakeKeystoneOptions {
  /** Compute URL for the catalog's `public` and `internal` endpoints in `RegionOne` (e.g. a FakeNova's endpoint). */
  computeUrl?: string;
  /** The compute endpoints, instead of `computeUrl`. */
  computeEndpoints?: FakeKeystoneEndpoint[];
  /** Token lifetime in ms. Default 3600000 (Keystone's `[token] expiration = 3600`). */
  tokenLifetimeMs?: number;
  /** Users. Default one user `ci-bot` / `ci-bot-password` in project `ci`. */
  users?: FakeKeystoneUser[];
  /** Projects. Default one project `ci`. */
  projects?: FakeKeystoneProject[];
  /** Application credentials. Default `ci-appcred` / `ci-appcred-secret` of `ci-bot`. */
  applicationCredentials?: FakeKeystoneAppCred[];
  /** Port on 127.0.0.1. Default 0 (any free port). */
  port?: number;
  /** Serve HTTPS with this key and certificate (PEM) instead of HTTP. */
  tls?: TlsPair;
}

/** One entry of {@link FakeKeystone.requests}: never a body, never a secret. */
export interface FakeKeystoneRequest {
  method: string;
  path: string;
  status: number;
  /** Auth methods of a token request, e.g. `['password']`. */
  authMethods?: string[];
  /** Epoch ms. */
  at: number;
}
