// The sandbox's PKI: one CA, the API server's serving certificate, an admin
// client certificate (system:masters) and the service-account signing key.
// openssl does the work; the files are made once and kept in the state folder.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { access, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const openssl = (args: string[]) => promisify(execFile)('openssl', args);

export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  adminCert: string;
  adminKey: string;
  saKey: string;
  saPub: string;
}

export function pkiPaths(dir: string): Pki {
  const p = (f: string) => join(dir, f);
  return {
    dir,
    caCert: p('ca.crt'), caKey: p('ca.key'),
    serverCert: p('apiserver.crt'), serverKey: p('apiserver.key'),
    adminCert: p('admin.crt'), adminKey: p('admin.key'),
    saKey: p('sa.key'), saPub: p('sa.pub'),
  };
}

const exists = (f: string) => access(f).then(() => true, () => false);

async function ecKey(path: string) {
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path]);
}

async function signed(pki: Pki, name: string, subject: string, ext: string, certPath: string, keyPath: string) {
  const csr = join(pki.dir, `${name}.csr`);
  const extFile = join(pki.dir, `${name}.ext`);
  await ecKey(keyPath);
  await openssl(['req', '-new', '-key', keyPath, '-subj', subject, '-out', csr]);
  await writeFile(extFile, ext);
  await openssl(['x509', '-req', '-in', csr, '-CA', pki.caCert, '-CAkey', pki.caKey, '-CAcreateserial',
    '-days', '3650', '-extfile', extFile, '-out', certPath]);
}

/** Creates whatever part of the PKI is missing. */
export async function ensurePki(dir: string): Promise<Pki> {
  const pki = pkiPaths(dir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (!(await exists(pki.caCert))) {
    await ecKey(pki.caKey);
    await openssl(['req', '-x509', '-new', '-key', pki.caKey, '-subj', '/CN=tend-sandbox-ca', '-days', '3650', '-out', pki.caCert]);
  }
  if (!(await exists(pki.serverCert))) {
    await signed(pki, 'apiserver', '/CN=kube-apiserver',
      'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' +
      'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n',
      pki.serverCert, pki.serverKey);
  }
  if (!(await exists(pki.adminCert))) {
    await signed(pki, 'admin', '/O=system:masters/CN=tend-sandbox-admin',
      'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
      pki.adminCert, pki.adminKey);
  }
  if (!(await exists(pki.saKey))) {
    await openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', pki.saKey]);
    await openssl(['pkey', '-in', pki.saKey, '-pubout', '-out', pki.saPub]);
  }
  return pki;
}
