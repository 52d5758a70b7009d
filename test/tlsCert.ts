/** A self-signed certificate for 127.0.0.1 made with the openssl command, for the TLS tests. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The certificate's files and PEM texts; `remove()` deletes the folder. */
export interface TestCert {
  /** The folder holding the files (an empty place for config lookups too). */
  dir: string;
  certPath: string;
  cert: string;
  key: string;
  remove: () => void;
}

/** Make a fresh self-signed EC certificate for 127.0.0.1, valid for two days. */
export function makeTestCert(prefix: string): TestCert {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const certPath = join(dir, 'cert.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', join(dir, 'key.pem'), '-out', certPath, '-days', '2', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1',
  ], { stdio: 'ignore' });
  return {
    dir,
    certPath,
    cert: readFileSync(certPath, 'utf8'),
    key: readFileSync(join(dir, 'key.pem'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
