// Preloaded (node --import) into a host of test/sqlite/processes.test.ts: better-sqlite3's native
// module "cannot load", as on a machine with no prebuilt binary for its Node.js and no compiler.
// (The SQLite ledger loads it with createRequire, which goes through Module._load.)
import Module from 'node:module';

const load = Module._load;
Module._load = function (request, ...rest) {
  if (request === 'better-sqlite3') throw new Error('Could not locate the bindings file (simulated: no prebuilt binary, no compiler)');
  return load.call(this, request, ...rest);
};
