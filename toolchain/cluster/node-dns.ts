// The real node's cluster DNS: CoreDNS (pinned in toolchain/coredns), run as a process beside the
// cluster as kube-proxy is, answering on the node's address. The Service kube-system/kube-dns (at
// the address the kubelet gives every pod as its nameserver) has no selector: its one endpoint is
// that address, so kube-proxy's rules carry the pods' queries to it as to any Service. A pod then
// resolves `hello.default.svc` (and `hello`, in its own namespace) as on any cluster.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, DiscoveryV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { loadKubeConfig } from "./readiness.ts";

export const clusterDomain = "cluster.local";
const serviceName = "kube-dns";
const namespace = "kube-system";
/** CoreDNS's user: the client certificate's common name, bound to the role below, as kubeadm names it. */
export const dnsUser = "system:coredns";

/** The Service range's tenth address, as kubeadm chooses it: what the kubelet writes into every pod's resolv.conf. */
export function dnsServiceIp(serviceCidr: string): string {
  const [base] = serviceCidr.split("/");
  const octets = base!.split(".").map(Number);
  return [...octets.slice(0, 3), octets[3]! + 10].join(".");
}

export interface CorefileSettings {
  /** The node's address: CoreDNS listens there, and the Service's endpoint names it. */
  readonly address: string;
  readonly kubeconfig: string;
  readonly healthPort: number;
  readonly readyPort: number;
  /** The machine's resolv.conf, for names outside the cluster; none when it names no nameserver. */
  readonly upstream?: string;
}

/** The Corefile: the cluster's names from the API server, everything else to the machine's resolver. */
export function corefile(settings: CorefileSettings): string {
  const forward = settings.upstream ? `    forward . ${settings.upstream}\n` : "";
  return `.:53 {
    bind ${settings.address}
    errors
    health 127.0.0.1:${settings.healthPort}
    ready 127.0.0.1:${settings.readyPort}
    kubernetes ${clusterDomain} in-addr.arpa ip6.arpa {
        kubeconfig ${settings.kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
${forward}    cache 30
}
`;
}

/** The machine's resolv.conf when it names a nameserver; a forward to a file without one fails CoreDNS's start. */
export function upstreamResolver(path = "/etc/resolv.conf"): string | undefined {
  try {
    return /^\s*nameserver\s+\S+/m.test(readFileSync(path, "utf8")) ? path : undefined;
  } catch {
    return undefined;
  }
}

export function writeCorefile(nodeDir: string, settings: CorefileSettings): string {
  const path = join(nodeDir, "Corefile");
  writeFileSync(path, corefile(settings));
  return path;
}

/**
 * What CoreDNS needs in the cluster: read access to Services, EndpointSlices, pods and namespaces
 * (kubeadm's system:coredns role), and the Service kube-dns whose one endpoint is the node's address.
 */
export async function createDnsObjects(kubeconfig: string, serviceIp: string, nodeAddress: string): Promise<void> {
  const kc = loadKubeConfig(kubeconfig);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRole({
    body: {
      metadata: { name: dnsUser },
      rules: [
        { apiGroups: [""], resources: ["endpoints", "services", "pods", "namespaces"], verbs: ["list", "watch"] },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: dnsUser },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: dnsUser },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: dnsUser }],
    },
  });
  const ports = [{ name: "dns", port: 53, protocol: "UDP" }, { name: "dns-tcp", port: 53, protocol: "TCP" }];
  await kc.makeApiClient(CoreV1Api).createNamespacedService({
    namespace,
    body: {
      metadata: { name: serviceName, labels: { "k8s-app": serviceName, "kubernetes.io/name": "CoreDNS" } },
      spec: { clusterIP: serviceIp, ports: ports.map((port) => ({ ...port, targetPort: 53 })) },
    },
  });
  await kc.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({
    namespace,
    body: {
      metadata: { name: `${serviceName}-node`, labels: { "kubernetes.io/service-name": serviceName, "endpointslice.kubernetes.io/managed-by": "appstack.dev-local-cluster" } },
      addressType: "IPv4",
      endpoints: [{ addresses: [nodeAddress], conditions: { ready: true } }],
      ports,
    },
  });
}
