// The metrics server's certificate and key: from a mounted kubernetes.io/tls Secret (a folder
// with tls.crt and tls.key), read again when they change, or, as controller-runtime's metrics
// server does without one, a self-signed certificate made at start. Either stays in memory: the
// process writes no key anywhere.
import { createPrivateKey, generateKeyPairSync, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import forge from "node-forge";
import { serialNumber } from "../base/x509-serial.ts";

export interface CertificateAndKey {
  readonly cert: string;
  readonly key: string;
}

/**
 * Self-signed for `localhost` and 127.0.0.1, for a year, as controller-runtime's (certutil's
 * GenerateSelfSignedCertKey): it encrypts the scrape, and a scraper that cannot verify it skips
 * verification (the install's ServiceMonitor, without a certificate Secret). A restart makes another.
 */
export function selfSignedCertificate(now = new Date()): CertificateAndKey {
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const key = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: "spki", format: "pem" }).toString());
  cert.serialNumber = serialNumber();
  cert.validity.notBefore = new Date(now.getTime() - 60_000);
  cert.validity.notAfter = new Date(now.getTime() + 365 * 24 * 3600_000);
  const subject = [{ name: "commonName", value: "appstack-metrics" }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames: [{ type: 2, value: "localhost" }, { type: 7, ip: "127.0.0.1" }] },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(key), forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key };
}

/** A Secret's tls.crt and tls.key, checked to be a certificate and its key (a half-rotated pair is refused). */
export function readCertificateDir(dir: string): CertificateAndKey {
  const cert = readFileSync(join(dir, "tls.crt"), "utf8");
  const key = readFileSync(join(dir, "tls.key"), "utf8");
  if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) throw new Error(`${dir}/tls.key is not the key of ${dir}/tls.crt`);
  return { cert, key };
}

/** How often a mounted certificate is read again: the kubelet updates a Secret's volume within a minute or so of a rotation. */
export const certificateRereadMs = 10_000;

/**
 * Calls `changed` with the folder's pair each time it differs from the last one read (cert-manager
 * rotates it in place); a pair that cannot be read or does not match is reported and the last one kept.
 */
export function watchCertificateDir(dir: string, current: CertificateAndKey, changed: (pair: CertificateAndKey) => void, failed: (error: unknown) => void, everyMs = certificateRereadMs): () => void {
  let last = current;
  const timer = setInterval(() => {
    try {
      const pair = readCertificateDir(dir);
      if (pair.cert === last.cert && pair.key === last.key) return;
      last = pair;
      changed(pair);
    } catch (error) {
      failed(error);
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
