// The cluster's certificates and keys (pki.ts) as files in its folder, and the kubeconfigs of the
// admin and of the control-plane clients.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ClusterState } from "./cluster.ts";
import { serviceIp } from "./component-args.ts";
import { kubeconfigYaml } from "./kubeconfig.ts";
import { apiserverNodeArgs } from "./node.ts";
import { createClusterPki, type ClusterPki } from "./pki.ts";

function writePki(dir: string, pki: ClusterPki): void {
  const files: Record<string, string> = {
    "ca.crt": pki.ca.certPem,
    "ca.key": pki.ca.keyPem,
    "apiserver.crt": pki.apiserver.certPem,
    "apiserver.key": pki.apiserver.keyPem,
    "sa.pub": pki.serviceAccount.publicPem,
    "sa.key": pki.serviceAccount.privatePem,
  };
  mkdirSync(join(dir, "pki"), { recursive: true, mode: 0o700 });
  for (const [file, pem] of Object.entries(files)) writeFileSync(join(dir, "pki", file), pem, { mode: 0o600 });
}

/**
 * The cluster's certificates, and the kubeconfigs of the admin and the control-plane clients; with
 * a real node also the API server's client certificate for the kubelet (added to `apiserverArgs`).
 */
export function writeCredentials(state: ClusterState, apiserverAddress: string, apiserverArgs: string[]): ClusterPki {
  const { name, dir, server } = state;
  const pki = createClusterPki(serviceIp, apiserverAddress === "127.0.0.1" ? [] : [apiserverAddress]);
  writePki(dir, pki);
  // The admin's certificate and key as files the kubeconfig names, beside the cluster's other keys:
  // tenant identities (APPSTACK_DEFAULT_SERVICE_ACCOUNT) refuse a kubeconfig that embeds its key.
  const admin = { certificate: join(dir, "pki", "admin.crt"), key: join(dir, "pki", "admin.key") };
  writeFileSync(admin.certificate, pki.admin.certPem, { mode: 0o600 });
  writeFileSync(admin.key, pki.admin.keyPem, { mode: 0o600 });
  writeFileSync(state.kubeconfig, kubeconfigYaml(name, server, pki.ca.certPem, "admin", pki.admin, admin), { mode: 0o600 });
  writeFileSync(join(dir, "controller-manager.kubeconfig"), kubeconfigYaml(name, server, pki.ca.certPem, "kube-controller-manager", pki.controllerManager), { mode: 0o600 });
  writeFileSync(join(dir, "scheduler.kubeconfig"), kubeconfigYaml(name, server, pki.ca.certPem, "kube-scheduler", pki.scheduler), { mode: 0o600 });
  if (state.realNode) apiserverArgs.push(...apiserverNodeArgs(dir, pki));
  return pki;
}
