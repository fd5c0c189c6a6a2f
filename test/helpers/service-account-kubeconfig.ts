// A kubeconfig that authenticates as a ServiceAccount, with a token of its own, against the cluster
// of `adminKubeconfig`: what an operator running in a pod holds, for a test that runs the operator
// (or a client) as a process with exactly the rights the install gives.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CoreV1Api } from "@kubernetes/client-node";
import yaml from "js-yaml";

/** Writes the ServiceAccount's token (an hour) and a kubeconfig naming it into `folder`; returns the kubeconfig's path. */
export async function serviceAccountKubeconfig(core: CoreV1Api, adminKubeconfig: string, namespace: string, account: string, folder: string): Promise<string> {
  const token = await core.createNamespacedServiceAccountToken({ name: account, namespace, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
  const tokenFile = join(folder, `${account}.token`);
  writeFileSync(tokenFile, token.status?.token ?? "", { mode: 0o600 });
  const admin = yaml.load(readFileSync(adminKubeconfig, "utf8")) as { clusters: { cluster: Record<string, unknown> }[] };
  const file = join(folder, `${account}.kubeconfig`);
  writeFileSync(file, yaml.dump({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "local", cluster: admin.clusters[0]!.cluster }],
    users: [{ name: account, user: { tokenFile, "token-file": tokenFile } }],
    contexts: [{ name: "local", context: { cluster: "local", user: account } }],
    "current-context": "local",
  }), { mode: 0o600 });
  return file;
}
