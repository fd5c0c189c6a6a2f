// The real node's network: a bridge of the cluster's own with a /24 of pod addresses, made before the
// API server starts so that the API server can listen on the bridge's address (pods reach it there
// through the `kubernetes` Service). Pods get routes to their /24 and the Service range only, never a
// default route, so no pod or Service address is routed off this machine.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";

export interface NodeNetwork {
  /** The Linux bridge the pods' veths join (at most 15 characters). */
  readonly bridge: string;
  /** The pods' addresses, e.g. 10.247.12.0/24. */
  readonly podCidr: string;
  /** The bridge's address: pods' gateway, the node's InternalIP, the API server's address. */
  readonly gateway: string;
  readonly serviceCidr: string;
  /** net.ipv4.ip_forward before the node started (CNI's bridge plugin turns it on); restored on stop. */
  readonly ipForwardBefore: string;
}

const ipForward = "/proc/sys/net/ipv4/ip_forward";

function ip(args: string[]): string {
  return execFileSync("ip", args, { encoding: "utf8", timeout: 10_000, stdio: ["ignore", "pipe", "pipe"] });
}

/** A /24 under 10.247.0.0/16 that no address or route of this machine touches, stable per cluster name. */
function freePodSubnet(clusterName: string): number {
  const inUse = ip(["-4", "route", "show", "table", "all"]) + ip(["-4", "addr", "show"]);
  const start = createHash("sha256").update(clusterName).digest()[0]!;
  for (let i = 0; i < 256; i++) {
    const third = (start + i) % 256;
    if (!inUse.includes(`10.247.${third}.`)) return third;
  }
  throw new Error("no free /24 under 10.247.0.0/16 for the real node's pods");
}

export function bridgeName(clusterName: string): string {
  return `apst${createHash("sha256").update(clusterName).digest("hex").slice(0, 8)}`;
}

/** Makes the bridge with the gateway address, and a route that keeps the Service range on it. */
export function createNodeNetwork(clusterName: string, serviceCidr: string): NodeNetwork {
  deleteStrayBridges();
  const third = freePodSubnet(clusterName);
  const network: NodeNetwork = {
    bridge: bridgeName(clusterName),
    podCidr: `10.247.${third}.0/24`,
    gateway: `10.247.${third}.1`,
    serviceCidr,
    ipForwardBefore: readFileSync(ipForward, "utf8").trim(),
  };
  ip(["link", "add", network.bridge, "type", "bridge"]);
  try {
    ip(["addr", "add", `${network.gateway}/24`, "dev", network.bridge]);
    ip(["link", "set", network.bridge, "up"]);
    // The host's own connections to a ClusterIP leave by this bridge (source: the gateway) for
    // kube-proxy's rules to rewrite; an address no Service has goes nowhere instead of the default route.
    ip(["route", "add", serviceCidr, "dev", network.bridge]);
  } catch (error) {
    deleteBridge(network.bridge);
    throw error;
  }
  return network;
}

const ourBridge = /^apst[0-9a-f]{8}$/;

/**
 * Deletes every bridge of this naming. Only one real node runs on a machine at a time (the cluster
 * refuses a second), so any other is a leftover whose cluster folder is gone (removed by hand, or
 * in another mount namespace's /tmp); it would hold the Service range's route and block this start.
 */
export function deleteStrayBridges(): string[] {
  const bridges = ip(["-o", "link", "show", "type", "bridge"])
    .split("\n")
    .map((line) => /^\d+: ([^:@]+)/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined && ourBridge.test(name));
  for (const bridge of bridges) deleteBridge(bridge);
  return bridges;
}

function deleteBridge(bridge: string): void {
  try {
    ip(["link", "del", bridge]);
  } catch {
    // Not there.
  }
}

/** Removes the bridge (and its routes with it) and puts ip_forward back as it was. */
export function deleteNodeNetwork(network: NodeNetwork): void {
  deleteBridge(network.bridge);
  try {
    if (readFileSync(ipForward, "utf8").trim() !== network.ipForwardBefore) writeFileSync(ipForward, network.ipForwardBefore);
  } catch {
    // Nothing to restore.
  }
}

/**
 * The CNI network the container runtime sets pods up with: the bridge plugin on our bridge,
 * addresses from the cluster's /24 (host-local, its state in the cluster folder), no masquerade.
 */
export function cniConfig(network: NodeNetwork, name: string, ipamDir: string): string {
  return JSON.stringify({
    cniVersion: "1.0.0",
    name,
    plugins: [
      {
        type: "bridge",
        bridge: network.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          dataDir: ipamDir,
          ranges: [[{ subnet: network.podCidr, gateway: network.gateway }]],
          // The Service range through the gateway (kube-proxy's rules live on the host), and no default route.
          routes: [{ dst: network.serviceCidr }],
        },
      },
    ],
  }, null, 2);
}

export function writeCniConfig(path: string, network: NodeNetwork, name: string, ipamDir: string): void {
  writeFileSync(path, cniConfig(network, name, ipamDir));
}
