// Certificates for a throwaway local control plane: one CA, the API server's serving certificate,
// and client identities for the admin and the control-plane components. Keys come from Node's
// crypto (fast, native); node-forge only assembles and signs the X.509 certificates.
import { generateKeyPairSync } from "node:crypto";
import forge from "node-forge";
import { serialNumber } from "../../operator/base/x509-serial.ts";

export { serialNumber };

export interface KeyPair {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface ClusterPki {
  readonly ca: KeyPair;
  readonly apiserver: KeyPair;
  readonly admin: KeyPair;
  readonly controllerManager: KeyPair;
  readonly scheduler: KeyPair;
  /** Signs and verifies service-account tokens. */
  readonly serviceAccount: { readonly publicPem: string; readonly privatePem: string };
}

interface Subject {
  readonly commonName: string;
  readonly organization?: string;
}

function rsaKeyPair(): { publicPem: string; privatePem: string } {
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return {
    publicPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    privatePem: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
  };
}

function attributes(subject: Subject): forge.pki.CertificateField[] {
  const fields: forge.pki.CertificateField[] = [{ name: "commonName", value: subject.commonName }];
  if (subject.organization) fields.push({ name: "organizationName", value: subject.organization });
  return fields;
}

function issue(subject: Subject, signer: { certPem: string; keyPem: string } | undefined, extensions: object[]): KeyPair {
  const keys = rsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicPem);
  cert.serialNumber = serialNumber();
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 365 * 24 * 3600_000);
  cert.setSubject(attributes(subject));
  const issuer = signer ? forge.pki.certificateFromPem(signer.certPem) : cert;
  cert.setIssuer(issuer.subject.attributes);
  cert.setExtensions(extensions);
  const signingKey = forge.pki.privateKeyFromPem(signer ? signer.keyPem : keys.privatePem);
  cert.sign(signingKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.privatePem };
}

export function clientCertificate(ca: KeyPair, subject: Subject): KeyPair {
  return issue(subject, ca, [
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
    { name: "extKeyUsage", clientAuth: true },
  ]);
}

/** A CA of its own (a test's PostgreSQL server, say). */
export function certificateAuthority(commonName: string): KeyPair {
  return issue({ commonName }, undefined, [
    { name: "basicConstraints", cA: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true },
  ]);
}

/** A server's certificate from `ca` for the host names `dns` and the addresses `ips`. */
export function servingCertificate(ca: KeyPair, commonName: string, names: { readonly dns?: readonly string[]; readonly ips?: readonly string[] }): KeyPair {
  return issue({ commonName }, ca, [
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames: [...(names.dns ?? []).map((value) => ({ type: 2, value })), ...(names.ips ?? []).map((ip) => ({ type: 7, ip }))] },
  ]);
}

/** `servingIps`: more addresses the API server answers on (a real node's bridge address). */
export function createClusterPki(serviceIp: string, servingIps: readonly string[] = []): ClusterPki {
  const ca = issue({ commonName: "appstack-local-ca" }, undefined, [
    { name: "basicConstraints", cA: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true },
  ]);
  const apiserver = issue({ commonName: "kube-apiserver" }, ca, [
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
    { name: "extKeyUsage", serverAuth: true },
    {
      name: "subjectAltName",
      altNames: [
        { type: 2, value: "localhost" },
        { type: 2, value: "kubernetes" },
        { type: 2, value: "kubernetes.default" },
        { type: 2, value: "kubernetes.default.svc" },
        { type: 7, ip: "127.0.0.1" },
        { type: 7, ip: serviceIp },
        ...servingIps.map((ip) => ({ type: 7, ip })),
      ],
    },
  ]);
  const serviceAccount = rsaKeyPair();
  return {
    ca,
    apiserver,
    admin: clientCertificate(ca, { commonName: "appstack-admin", organization: "system:masters" }),
    controllerManager: clientCertificate(ca, { commonName: "system:kube-controller-manager" }),
    scheduler: clientCertificate(ca, { commonName: "system:kube-scheduler" }),
    serviceAccount: { publicPem: serviceAccount.publicPem, privatePem: serviceAccount.privatePem },
  };
}
