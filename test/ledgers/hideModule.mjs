// Preloaded (node --import) into a child process: the optional modules named in
// NOVA_GUARD_TEST_HIDE (comma-separated: better-sqlite3, ioredis) are not installed, as on a host
// where npm dropped an optional dependency it could not build (no C++ compiler) or the user never
// installed the peer. nova-guard loads both with createRequire, which resolves through
// Module._resolveFilename: it throws Node's own "Cannot find module" error (code MODULE_NOT_FOUND)
// for them. nova-guard's code is not touched.
import Module from 'node:module';
import process from 'node:process';

const hidden = new Set((process.env.NOVA_GUARD_TEST_HIDE ?? '').split(',').filter(Boolean));
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  if (hidden.has(request)) {
    const err = new Error(`Cannot find module '${request}'\nRequire stack:\n- ${parent?.filename ?? '<anonymous>'}`);
    err.code = 'MODULE_NOT_FOUND';
    err.requireStack = parent?.filename ? [parent.filename] : [];
    throw err;
  }
  return resolve.call(this, request, parent, ...rest);
};
