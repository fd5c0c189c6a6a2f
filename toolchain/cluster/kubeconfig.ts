import yaml from "js-yaml";
import type { KeyPair } from "./pki.ts";

const b64 = (pem: string) => Buffer.from(pem).toString("base64");

/** A kubeconfig with the credentials embedded, so the file alone is enough to connect. */
export function kubeconfigYaml(clusterName: string, server: string, caPem: string, user: string, identity: KeyPair): string {
  return yaml.dump({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: clusterName, cluster: { server, "certificate-authority-data": b64(caPem) } }],
    users: [{ name: user, user: { "client-certificate-data": b64(identity.certPem), "client-key-data": b64(identity.keyPem) } }],
    contexts: [{ name: clusterName, context: { cluster: clusterName, user } }],
    "current-context": clusterName,
  }, { lineWidth: -1 });
}
