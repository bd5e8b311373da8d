import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate and its key, PEM. */
export interface TestIdentity {
  certificate: string;
  key: string;
}

/** Certificates made for a test: a CA, a server certificate for 127.0.0.1, client certificates. */
export interface TestPki {
  ca: TestIdentity;
  /** CN and SAN 127.0.0.1 and localhost, signed by `ca`. */
  server: TestIdentity;
  /** A client certificate signed by `ca`. */
  client: TestIdentity;
  /** A client certificate from another CA (self-signed): a server trusting `ca` refuses it. */
  stranger: TestIdentity;
}

/**
 * Makes a small PKI with `openssl` (on PATH; node:crypto parses certificates but does not issue
 * them). EC P-256 keys, one day of validity, files in a temporary directory removed at once.
 */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'herald-pki-'));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const key = (name: string) =>
    openssl(
      'genpkey',
      '-algorithm',
      'EC',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-out',
      file(name),
    );
  // A new key for `name`, and `openssl req` for CN=`cn` with it: a certificate signing request,
  // or with -x509 a self-signed certificate.
  const request = (name: string, cn: string, ...args: string[]) => {
    key(`${name}.key`);
    openssl('req', '-new', '-key', file(`${name}.key`), '-subj', `/CN=${cn}`, ...args);
  };
  const selfSigned = (name: string, cn: string) =>
    request(name, cn, '-x509', '-days', '1', '-out', file(`${name}.crt`));
  const signed = (name: string, cn: string, extensions: string) => {
    request(name, cn, '-out', file(`${name}.csr`));
    writeFileSync(file(`${name}.ext`), extensions);
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.crt'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      file(`${name}.ext`),
      '-out',
      file(`${name}.crt`),
    );
  };
  const read = (name: string): TestIdentity => ({
    certificate: readFileSync(file(`${name}.crt`), 'utf8'),
    key: readFileSync(file(`${name}.key`), 'utf8'),
  });
  try {
    selfSigned('ca', 'Herald test CA');
    signed(
      'server',
      '127.0.0.1',
      'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
    );
    signed('client', 'herald-client', 'extendedKeyUsage=clientAuth\n');
    selfSigned('stranger', 'stranger');
    return {
      ca: read('ca'),
      server: read('server'),
      client: read('client'),
      stranger: read('stranger'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
