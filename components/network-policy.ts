// The operator's NetworkPolicy (the install's `networkPolicy`, off by default): its pods may reach
// only what the operator talks to, and be reached only on the ports of /metrics and of the health
// checks. Off by default because a policy that selects a pod denies whatever it does not
// list, and what a cluster's API server and database are reached at differs from cluster to cluster.
import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import { isPostgresUrl } from "../operator/base/shared-backend.ts";

/** The ports the API server is reached at: 443 (managed clusters: EKS, GKE, AKS) and 6443 (kubeadm, k3s, kind). */
export const apiServerPorts = [443, 6443];

/** PostgreSQL's port, for a backend URL that names none or one the install does not see (backendSecret). */
const postgresPort = 5432;

export interface NetworkPolicyArgs {
  /** The labels of the operator's pods. */
  readonly podLabels: Record<string, string>;
  /** The ports of /healthz and /readyz, and of /metrics. */
  readonly ingressPorts: readonly number[];
  /** The install's backendUrl, if given: its port, when it is PostgreSQL's. */
  readonly backendUrl?: string;
  /** Whether the backend URL is in a Secret the install does not read (backendSecret): a PostgreSQL URL, on its default port. */
  readonly backendSecret?: boolean;
}

/** The database's port, if the backend is one; none for the file backend and object stores (reached on 443, with the API server). */
function databasePort(args: NetworkPolicyArgs): number | undefined {
  if (args.backendSecret) return postgresPort;
  if (!isPostgresUrl(args.backendUrl)) return undefined;
  const port = new URL(args.backendUrl!).port;
  return port ? Number(port) : postgresPort;
}

/**
 * The policy's spec. Egress goes by port to any address: NetworkPolicy matches a connection after
 * the kubernetes Service's address has been translated to the API server's own, which is a node's
 * or a managed control plane's and differs by cluster; the database's host may be anywhere. DNS
 * (53) resolves the database's host name. Ingress is the health and metrics ports alone, from
 * anywhere: the kubelet's probes and whichever namespace Prometheus runs in.
 */
export function operatorNetworkPolicySpec(args: NetworkPolicyArgs): k8s.types.input.networking.v1.NetworkPolicySpec {
  const tcp = (port: number) => ({ protocol: "TCP", port });
  const database = databasePort(args);
  return {
    podSelector: { matchLabels: args.podLabels },
    policyTypes: ["Ingress", "Egress"],
    ingress: [{ ports: args.ingressPorts.map(tcp) }],
    egress: [
      { ports: [{ protocol: "UDP", port: 53 }, tcp(53)] },
      { ports: apiServerPorts.map(tcp) },
      ...(database !== undefined && !apiServerPorts.includes(database) ? [{ ports: [tcp(database)] }] : []),
    ],
  };
}

type Meta = { name: string; namespace: pulumi.Input<string>; labels: Record<string, string> };

/** The policy, as a child of `parent`. */
export function operatorNetworkPolicy(name: string, meta: Meta, args: NetworkPolicyArgs, parent: pulumi.Resource): void {
  new k8s.networking.v1.NetworkPolicy(`${name}-network-policy`, { metadata: meta, spec: operatorNetworkPolicySpec(args) }, { parent });
}
