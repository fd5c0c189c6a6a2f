// A real node for the local control plane (ClusterOptions.realNode): containerd (the machine's,
// run as the cluster's own process with its own configuration), the kubelet and kube-proxy (pinned,
// built when first asked for), CNI's bridge plugin, and a volume provisioner. Everything it makes
// on the machine (bridge, cgroups, mounts, iptables chains) is listed in its state and removed on stop.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import { buildTool } from "../build.ts";
import { nodeTools, toolPath, type ToolName } from "../tools.ts";
import { kubeconfigYaml } from "./kubeconfig.ts";
import { createCgroupRoot, killPodProcesses, killShims, removeCgroups, removeKubeChains, removeNodeFilesOutside, unmountUnder } from "./node-cleanup.ts";
import { containerdConfig, kubeletConfig, kubeProxyConfig, nodePaths, type NodePaths } from "./node-config.ts";
import { busyboxImage, importImage, pauseImage, type ImageArchive } from "./node-images.ts";
import { createNodeNetwork, deleteNodeNetwork, writeCniConfig, type NodeNetwork } from "./node-network.ts";
import { createDnsObjects, dnsServiceIp, dnsUser, upstreamResolver, writeCorefile } from "./node-dns.ts";
import { createStorageObjects, provisionerArgs } from "./node-storage.ts";
import { clientCertificate, type ClusterPki } from "./pki.ts";
import { freeLoopbackPorts } from "./ports.ts";
import type { ComponentProcess } from "./process.ts";
import { loadKubeConfig, statusOf, waitUntil } from "./readiness.ts";
import { request as httpGet } from "node:http";

const execFileAsync = promisify(execFile);

export const realNodeName = "real-node";
export const nodeComponents = ["kubelet", "kube-proxy", "coredns", "local-path-provisioner"] as const;

export interface RealNodeState {
  readonly nodeName: string;
  readonly network: NodeNetwork;
  /** The cgroup (in every hierarchy) that holds all of the node's pods. */
  readonly cgroupRoot: string;
  readonly paths: NodePaths;
  /** The CNI network's name; CNI keeps cache files under it outside the cluster folder. */
  readonly cniNetwork: string;
  readonly images: { readonly pause: ImageArchive; readonly busybox: ImageArchive };
}

export type Launch = (component: string, binary: string, args: string[]) => ComponentProcess;

/** Builds what a real node needs (once per pin) and makes its network, before the control plane starts. */
export function prepareRealNode(clusterName: string, dir: string, serviceCidr: string, log: (line: string) => void): RealNodeState {
  for (const tool of nodeTools) buildTool(tool, log);
  const images = { pause: pauseImage(), busybox: busyboxImage() };
  const paths = nodePaths(dir);
  for (const folder of [paths.root, paths.cniConfDir, paths.cniIpamDir, paths.kubeletDir, paths.podLogs, paths.volumes]) mkdirSync(folder, { recursive: true });
  const node: RealNodeState = {
    nodeName: realNodeName,
    network: createNodeNetwork(clusterName, serviceCidr),
    cgroupRoot: `/appstack-${clusterName}`,
    paths,
    cniNetwork: `appstack-${clusterName}`,
    images,
  };
  try {
    createCgroupRoot(node.cgroupRoot);
    writeCniConfig(join(paths.cniConfDir, "10-appstack.conflist"), node.network, node.cniNetwork, paths.cniIpamDir);
    writeFileSync(paths.containerdConfig, containerdConfig(paths, images.pause.name));
  } catch (error) {
    removeCgroups(node.cgroupRoot);
    deleteNodeNetwork(node.network);
    throw error;
  }
  return node;
}

/** The API server's flags that let it call the kubelet (logs, exec, port-forward) with a certificate of the cluster's CA. */
export function apiserverNodeArgs(dir: string, pki: ClusterPki): string[] {
  const client = clientCertificate(pki.ca, { commonName: "kube-apiserver-kubelet-client", organization: "system:masters" });
  const cert = join(dir, "pki", "apiserver-kubelet-client.crt");
  const key = join(dir, "pki", "apiserver-kubelet-client.key");
  writeFileSync(cert, client.certPem, { mode: 0o600 });
  writeFileSync(key, client.keyPem, { mode: 0o600 });
  return [`--kubelet-client-certificate=${cert}`, `--kubelet-client-key=${key}`, "--kubelet-preferred-address-types=InternalIP"];
}

function writeKubeconfig(path: string, clusterName: string, server: string, pki: ClusterPki, user: string, organization?: string): string {
  const identity = clientCertificate(pki.ca, { commonName: user, ...(organization ? { organization } : {}) });
  writeFileSync(path, kubeconfigYaml(clusterName, server, pki.ca.certPem, user, identity), { mode: 0o600 });
  return path;
}

export interface NodeStartContext {
  readonly clusterName: string;
  readonly dir: string;
  readonly server: string;
  readonly adminKubeconfig: string;
  readonly pki: ClusterPki;
  readonly launch: Launch;
  readonly log: (line: string) => void;
}

/** Starts containerd, loads the images, starts the kubelet, kube-proxy and the provisioner, each waited for; returns the node's name. */
export async function startRealNode(node: RealNodeState, ctx: NodeStartContext): Promise<string> {
  const { paths, network } = node;
  const tool = (name: ToolName) => toolPath(name);
  const [kubeletPort, kubeletHealthz, proxyHealthz, proxyMetrics, dnsHealth, dnsReady] = (await freeLoopbackPorts(6)) as [number, number, number, number, number, number];

  ctx.log(`cluster ${ctx.clusterName}: starting containerd (${paths.containerdSocket})`);
  const containerd = ctx.launch("containerd", "containerd", ["--config", paths.containerdConfig]);
  await waitUntil("containerd's socket", containerd, ctx.dir, async () => {
    await execFileAsync("ctr", ["--address", paths.containerdSocket, "version"], { timeout: 5_000 });
    return true;
  });
  for (const image of Object.values(node.images)) importImage(paths.containerdSocket, image.path);

  ctx.log(`cluster ${ctx.clusterName}: starting kubelet (node ${node.nodeName}, pods ${network.podCidr} on ${network.bridge})`);
  const kubeletKubeconfig = writeKubeconfig(join(paths.root, "kubelet.kubeconfig"), ctx.clusterName, ctx.server, ctx.pki, `system:node:${node.nodeName}`, "system:nodes");
  writeFileSync(paths.kubeletConfig, kubeletConfig(paths, {
    network, port: kubeletPort, healthzPort: kubeletHealthz, cgroupRoot: node.cgroupRoot, caFile: join(ctx.dir, "pki", "ca.crt"),
    clusterDns: dnsServiceIp(network.serviceCidr),
  }));
  const kubelet = ctx.launch("kubelet", tool("kubelet"), [
    `--config=${paths.kubeletConfig}`, `--kubeconfig=${kubeletKubeconfig}`, `--root-dir=${paths.kubeletDir}`,
    `--cert-dir=${join(paths.kubeletDir, "pki")}`, `--hostname-override=${node.nodeName}`, `--node-ip=${network.gateway}`,
  ]);
  await waitForNodeReady(kubelet, ctx.adminKubeconfig, node.nodeName, ctx.dir);

  const proxyKubeconfig = writeKubeconfig(join(paths.root, "kube-proxy.kubeconfig"), ctx.clusterName, ctx.server, ctx.pki, "system:kube-proxy");
  writeFileSync(paths.kubeProxyConfig, kubeProxyConfig({ network, kubeconfig: proxyKubeconfig, nodeName: node.nodeName, healthzPort: proxyHealthz, metricsPort: proxyMetrics }));
  const kubeProxy = ctx.launch("kube-proxy", tool("kube-proxy"), [`--config=${paths.kubeProxyConfig}`]);
  await waitUntil("kube-proxy /healthz", kubeProxy, ctx.dir, async () => (await statusOf(httpGet, `http://127.0.0.1:${proxyHealthz}/healthz`, {})) === 200);

  ctx.log(`cluster ${ctx.clusterName}: starting CoreDNS (Service kube-system/kube-dns at ${dnsServiceIp(network.serviceCidr)})`);
  await createDnsObjects(ctx.adminKubeconfig, dnsServiceIp(network.serviceCidr), network.gateway);
  const dnsKubeconfig = writeKubeconfig(join(paths.root, "coredns.kubeconfig"), ctx.clusterName, ctx.server, ctx.pki, dnsUser);
  const corefile = writeCorefile(paths.root, { address: network.gateway, kubeconfig: dnsKubeconfig, healthPort: dnsHealth, readyPort: dnsReady, upstream: upstreamResolver() });
  const coredns = ctx.launch("coredns", tool("coredns"), ["-conf", corefile]);
  // /ready answers 200 once the kubernetes plugin has listed Services and EndpointSlices.
  await waitUntil("CoreDNS /ready", coredns, ctx.dir, async () => (await statusOf(httpGet, `http://127.0.0.1:${dnsReady}/ready`, {})) === 200);

  await waitForRootCaConfigMap(kubelet, ctx.adminKubeconfig, ctx.dir);
  await createStorageObjects(ctx.adminKubeconfig);
  ctx.launch("local-path-provisioner", tool("local-path-provisioner"), provisionerArgs(paths.root, paths.volumes, ctx.adminKubeconfig, node.images.busybox.name));
  return node.nodeName;
}

async function waitForNodeReady(kubelet: ComponentProcess, kubeconfig: string, name: string, marker: string): Promise<void> {
  const core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
  const readiness = async () => (await core.readNode({ name })).status?.conditions?.find((c) => c.type === "Ready");
  await waitUntil(`node ${name} Ready`, kubelet, marker, async () => (await readiness())?.status === "True", async () => {
    const ready = await readiness();
    return `node ${name}: Ready=${ready?.status} ${ready?.reason ?? ""} ${ready?.message ?? ""}`;
  });
}

/**
 * Every pod mounts the cluster CA from the ConfigMap kube-root-ca.crt, which the controller-manager
 * publishes in each namespace; a pod created before it exists waits out the kubelet's mount retry
 * backoff, so the node is ready for pods once the default namespace has it.
 */
async function waitForRootCaConfigMap(kubelet: ComponentProcess, kubeconfig: string, marker: string): Promise<void> {
  const core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
  await waitUntil("the ConfigMap default/kube-root-ca.crt", kubelet, marker, async () => {
    await core.readNamespacedConfigMap({ name: "kube-root-ca.crt", namespace: "default" });
    return true;
  });
}

/**
 * After the kubelet, kube-proxy and the provisioner have stopped and before containerd does: the
 * pods' processes, then the shims. `stopContainerd` runs between that and the rest.
 */
export function killNodeWorkloads(node: RealNodeState): void {
  killPodProcesses(node.cgroupRoot);
  killShims(node.paths.containerdSocket);
}

/** Once containerd is gone: mounts, cgroups, iptables chains, the bridge, files outside the cluster folder. */
export function removeNodeLeftovers(node: RealNodeState, dir: string): void {
  unmountUnder(dir);
  removeCgroups(node.cgroupRoot);
  removeKubeChains();
  deleteNodeNetwork(node.network);
  const sandboxDirs = [join(node.paths.root, "containerd-state", "io.containerd.runtime.v2.task", "k8s.io"), join(node.paths.root, "containerd", "io.containerd.grpc.v1.cri", "sandboxes")];
  removeNodeFilesOutside(node.cniNetwork, dir, sandboxDirs);
}

/** Both steps at once, for a process's exit handler and for a cluster whose owner died (its processes are already killed). */
export function tearDownRealNodeNow(node: RealNodeState, dir: string): void {
  killNodeWorkloads(node);
  removeNodeLeftovers(node, dir);
}

/**
 * Imports an OCI archive (`buildah push IMAGE oci-archive:PATH:NAME`) into the cluster's real node;
 * pods then use NAME with imagePullPolicy IfNotPresent or Never (nothing is ever pulled).
 */
export function loadImage(cluster: { readonly name: string; readonly realNode?: RealNodeState }, archivePath: string): void {
  if (!cluster.realNode) throw new Error(`cluster ${cluster.name} has no real node: start it with realNode: true`);
  importImage(cluster.realNode.paths.containerdSocket, archivePath);
}
