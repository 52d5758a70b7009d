/**
 * What `FakeKeystone.start`, `addProject`, `addUser` and `addApplicationCredential` take: each
 * options object, nested ones included, checked by the one options mechanism (`core/options.ts`).
 *
 * @module
 */
import { ValidationError } from '../../errors/index.js';
import { is } from '../../core/validate.js';
import type { OptionsSpec } from '../../core/options.js';
import type { TlsPair } from '../wire/httpBinding.js';
import type { FakeKeystoneAppCred, FakeKeystoneEndpoint, FakeKeystoneOptions, FakeKeystoneProject, FakeKeystoneUser } from './types.js';

/** A {@link FakeKeystoneProject}. */
export const PROJECT_SPEC: OptionsSpec<FakeKeystoneProject> = {
  id: is.string({ nonEmpty: true }),
  name: is.string({ nonEmpty: true }),
  domainId: is.string({ nonEmpty: true }),
};

/** A {@link FakeKeystoneUser}. */
export const USER_SPEC: OptionsSpec<FakeKeystoneUser> = {
  id: is.string({ nonEmpty: true }),
  name: is.string({ nonEmpty: true }),
  password: is.string(),
  domainId: is.string({ nonEmpty: true }),
  projects: is.arrayOf(is.string({ nonEmpty: true })),
  defaultProject: is.string({ nonEmpty: true }),
};

/** A {@link FakeKeystoneAppCred}. */
export const APP_CRED_SPEC: OptionsSpec<FakeKeystoneAppCred> = {
  id: is.string({ nonEmpty: true }),
  name: is.string({ nonEmpty: true }),
  secret: is.string(),
  user: is.string({ nonEmpty: true }),
  project: is.string({ nonEmpty: true }),
};

const ENDPOINT_SPEC: OptionsSpec<FakeKeystoneEndpoint> = {
  interface: is.oneOf(['public', 'internal', 'admin']),
  region: is.string(),
  url: is.string({ nonEmpty: true }),
};

const TLS_SPEC: OptionsSpec<TlsPair> = { key: null, cert: null };

/** What `FakeKeystone.start` takes (see {@link FakeKeystoneOptions}). */
export const FAKE_KEYSTONE_SPEC: OptionsSpec<FakeKeystoneOptions> = {
  computeUrl: is.string({ nonEmpty: true }),
  computeEndpoints: is.arrayOf(is.options(ENDPOINT_SPEC)),
  tokenLifetimeMs: (value, name) => {
    if (!(typeof value === 'number' && Number.isFinite(value) && value >= 0)) throw new ValidationError(`FakeKeystone option ${name} must be a finite number >= 0 (got ${String(value)})`);
  },
  users: is.arrayOf(is.options(USER_SPEC)),
  projects: is.arrayOf(is.options(PROJECT_SPEC)),
  applicationCredentials: is.arrayOf(is.options(APP_CRED_SPEC)),
  port: is.integer({ max: 65535 }),
  tls: is.options(TLS_SPEC),
};
