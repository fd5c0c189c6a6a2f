// Configuration files of the real node's processes. Every path is inside the cluster's folder and
// every port is a free loopback one, so that nothing is shared with the machine's own services.
import { join } from "node:path";
import yaml from "js-yaml";
import { clusterDomain } from "./node-dns.ts";
import type { NodeNetwork } from "./node-network.ts";

export const pauseImageName = "appstack.local/pause";

export interface NodePaths {
  readonly root: string;
  readonly containerdConfig: string;
  readonly containerdSocket: string;
  readonly cniConfDir: string;
  readonly cniIpamDir: string;
  readonly kubeletDir: string;
  readonly kubeletConfig: string;
  readonly kubeProxyConfig: string;
  readonly podLogs: string;
  readonly volumes: string;
}

export function nodePaths(clusterDir: string): NodePaths {
  const root = join(clusterDir, "node");
  return {
    root,
    containerdConfig: join(root, "containerd.toml"),
    containerdSocket: join(root, "containerd.sock"),
    cniConfDir: join(root, "cni"),
    cniIpamDir: join(root, "cni-ipam"),
    kubeletDir: join(root, "kubelet"),
    kubeletConfig: join(root, "kubelet.yaml"),
    kubeProxyConfig: join(root, "kube-proxy.yaml"),
    podLogs: join(root, "pod-logs"),
    volumes: join(root, "volumes"),
  };
}

/** containerd 1.6 (config version 2) with only the CRI plugin's runc runtime, on the cluster's own socket. */
export function containerdConfig(paths: NodePaths, sandboxImage: string): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "${join(paths.root, "containerd")}"
state = "${join(paths.root, "containerd-state")}"
# Snapshotters this machine cannot use, and tracing: each would only log why it did not load.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "${paths.containerdSocket}"
[ttrpc]
  address = "${paths.containerdSocket}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "${join(paths.root, "containerd-opt")}"

[${cri}]
  sandbox_image = "${sandboxImage}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Network namespaces under the cluster folder, not /var/run/netns, so a stop finds all of them.
  netns_mounts_under_state_dir = true
  # No lower OOM score than containerd's own: the kubelet asks -998 for sandboxes, which needs
  # CAP_SYS_RESOURCE, and without it runc fails to start any container.
  restrict_oom_score_adj = true
  [${cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [${cri}.containerd.runtimes.runc.options]
        # The kubelet runs with cgroupDriver cgroupfs (cgroup v1 here, no systemd as init).
        SystemdCgroup = false
        # runc's container state with the cluster's, not in the machine's /run/containerd/runc.
        Root = "${join(paths.root, "runc")}"
  [${cri}.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${paths.cniConfDir}"
`;
}

export interface KubeletSettings {
  readonly network: NodeNetwork;
  readonly port: number;
  readonly healthzPort: number;
  readonly cgroupRoot: string;
  readonly caFile: string;
  /** The cluster DNS Service's address (node-dns.ts), every pod's nameserver. */
  readonly clusterDns: string;
}

/** The kubelet's KubeletConfiguration: nothing that would evict pods on a busy or fairly full machine. */
export function kubeletConfig(paths: NodePaths, settings: KubeletSettings): string {
  return yaml.dump({
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    address: settings.network.gateway,
    port: settings.port,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: settings.healthzPort,
    containerRuntimeEndpoint: `unix://${paths.containerdSocket}`,
    // cgroup v1 (hybrid) on this machine: cgroupfs, and the pods under a cgroup of this cluster's own.
    cgroupDriver: "cgroupfs",
    cgroupRoot: settings.cgroupRoot,
    failCgroupV1: false,
    failSwapOn: false,
    // Only clients with a certificate of the cluster's CA (the API server) may call the kubelet.
    authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: settings.caFile } },
    authorization: { mode: "AlwaysAllow" },
    podLogsDir: paths.podLogs,
    volumePluginDir: join(paths.kubeletDir, "volume-plugins"),
    // Eviction only when the machine is really out of room; the images are never garbage-collected
    // (they were loaded, not pulled: nothing could bring them back).
    evictionHard: { "memory.available": "1Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%", "imagefs.available": "1%" },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    resolvConf: "/etc/resolv.conf",
    clusterDNS: [settings.clusterDns],
    clusterDomain,
  });
}

export interface KubeProxySettings {
  readonly network: NodeNetwork;
  readonly kubeconfig: string;
  readonly nodeName: string;
  readonly healthzPort: number;
  readonly metricsPort: number;
}

/** kube-proxy in iptables mode, changing no machine-wide setting it can leave alone. */
export function kubeProxyConfig(settings: KubeProxySettings): string {
  return yaml.dump({
    apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
    kind: "KubeProxyConfiguration",
    clientConnection: { kubeconfig: settings.kubeconfig },
    hostnameOverride: settings.nodeName,
    mode: "iptables",
    clusterCIDR: settings.network.podCidr,
    bindAddress: settings.network.gateway,
    healthzBindAddress: `127.0.0.1:${settings.healthzPort}`,
    metricsBindAddress: `127.0.0.1:${settings.metricsPort}`,
    nodePortAddresses: [`${settings.network.gateway}/32`],
    // Zero: leave the machine's conntrack table size and timeouts as they are; and no NodePorts on
    // 127.0.0.1 (that needs route_localnet, a machine-wide setting).
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: "0s", tcpCloseWaitTimeout: "0s" },
    // minSyncPeriod: kube-proxy reads 0 as unset, its default of 1 s. A tenth of that: a local
    // Service routes to a new pod well within the operator's wait for service proxies
    // (APPSTACK_PROXY_SYNC_MS, the default's 1 s), so a request right after Ready is served.
    iptables: { localhostNodePorts: false, syncPeriod: "30s", minSyncPeriod: "100ms" },
  });
}
