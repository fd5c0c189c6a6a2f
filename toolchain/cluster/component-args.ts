// The control plane's command lines: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok, each pointed at the cluster folder's keys and kubeconfigs (credentials.ts).
import { join } from "node:path";
import { auditArgs } from "./audit.ts";

/** The Service range: the API server's, the controller manager's, and a real node's route to it. */
export const serviceCidr = "10.96.0.0/16";
/** The `kubernetes` Service's address, the first of the range, named in the API server's certificate. */
export const serviceIp = "10.96.0.1";

export function componentArgs(dir: string, ports: { etcdClient: number; etcdPeer: number; apiserver: number }, apiserverAddress: string, audit?: boolean) {
  const pki = (file: string) => join(dir, "pki", file);
  const etcdUrl = `http://127.0.0.1:${ports.etcdClient}`;
  const peerUrl = `http://127.0.0.1:${ports.etcdPeer}`;
  return {
    etcd: [
      "--name=appstack", `--data-dir=${join(dir, "etcd")}`,
      `--listen-client-urls=${etcdUrl}`, `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`, `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=appstack=${peerUrl}`,
      // A throwaway cluster: durability is worth nothing, latency is.
      "--unsafe-no-fsync", "--log-level=warn",
    ],
    apiserver: [
      `--etcd-servers=${etcdUrl}`, `--bind-address=${apiserverAddress}`, `--advertise-address=${apiserverAddress}`,
      `--secure-port=${ports.apiserver}`, `--cert-dir=${join(dir, "pki")}`,
      `--tls-cert-file=${pki("apiserver.crt")}`, `--tls-private-key-file=${pki("apiserver.key")}`,
      `--client-ca-file=${pki("ca.crt")}`, "--authorization-mode=Node,RBAC",
      `--service-account-issuer=https://kubernetes.default.svc`,
      `--service-account-key-file=${pki("sa.pub")}`, `--service-account-signing-key-file=${pki("sa.key")}`,
      `--service-cluster-ip-range=${serviceCidr}`, "--allow-privileged=true", "--profiling=false",
      // This admission plugin taints new nodes not-ready until the node lifecycle controller
      // clears the taint; that controller is off here (see the controller-manager's flags).
      "--disable-admission-plugins=TaintNodesByCondition",
      ...(audit ? auditArgs(dir) : []),
    ],
    controllerManager: [
      `--kubeconfig=${join(dir, "controller-manager.kubeconfig")}`, "--secure-port=0", "--leader-elect=false",
      `--service-account-private-key-file=${pki("sa.key")}`, `--root-ca-file=${pki("ca.crt")}`,
      `--cluster-signing-cert-file=${pki("ca.crt")}`, `--cluster-signing-key-file=${pki("ca.key")}`,
      "--use-service-account-credentials=true", `--service-cluster-ip-range=${serviceCidr}`,
      // kwok's nodes are never really down; on a loaded 2-core machine their heartbeats can be late,
      // and the node lifecycle controller would then mark every pod unready for good.
      "--controllers=*,-node-lifecycle-controller",
    ],
    scheduler: [`--kubeconfig=${join(dir, "scheduler.kubeconfig")}`, "--secure-port=0", "--leader-elect=false"],
    kwok: [
      `--kubeconfig=${join(dir, "kubeconfig")}`, "--manage-all-nodes=false",
      "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--cidr=10.244.0.1/16",
    ],
  };
}
