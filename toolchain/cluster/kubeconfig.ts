import yaml from "js-yaml";
import type { KeyPair } from "./pki.ts";

const b64 = (pem: string) => Buffer.from(pem).toString("base64");

/** Where a kubeconfig's user keeps its certificate and key, when not in the kubeconfig itself. */
export interface CredentialFiles {
  readonly certificate: string;
  readonly key: string;
}

/**
 * A kubeconfig with the credentials embedded, so the file alone is enough to connect; or, with
 * `files`, naming the certificate and key files, as tenant identities need of the operator's
 * kubeconfig (operator/kube/engine-kubeconfig.ts: the engines' kubeconfigs name the operator's
 * credentials, never copy them).
 */
export function kubeconfigYaml(clusterName: string, server: string, caPem: string, user: string, identity: KeyPair, files?: CredentialFiles): string {
  const credentials = files ? { "client-certificate": files.certificate, "client-key": files.key } : { "client-certificate-data": b64(identity.certPem), "client-key-data": b64(identity.keyPem) };
  return yaml.dump({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: clusterName, cluster: { server, "certificate-authority-data": b64(caPem) } }],
    users: [{ name: user, user: credentials }],
    contexts: [{ name: clusterName, context: { cluster: clusterName, user } }],
    "current-context": clusterName,
  }, { lineWidth: -1 });
}
