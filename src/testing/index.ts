/**
 * `nova-guard/testing`: fakes of OpenStack services for testing code that talks to Nova.
 *
 * @module
 */
export { FakeNova, DEFAULT_FLAVORS } from './fakeNova.js';
export type {
  FakeDeleteBehavior,
  FakeFlavor,
  FakeNovaOptions,
  FakeServerInit,
  FakeServerView,
  FakeUsage,
  FaultSpec,
  RecordedRequest,
} from './fakeNova.js';
export * from './fakeKeystone.js';
