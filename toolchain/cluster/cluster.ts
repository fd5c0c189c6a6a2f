// A real, local Kubernetes control plane: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, and kwok standing in for kubelets, all on free loopback ports, all state in one
// temporary folder that `stop` removes. Two clusters run side by side without sharing anything.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { buildTool } from "../build.ts";
import { toolBinary, toolPath, type Tool, type ToolName } from "../tools.ts";
import { componentArgs, serviceCidr } from "./component-args.ts";
import { writeCredentials } from "./credentials.ts";
import { createFakeNodes, waitForApiServer, waitForEtcd, waitForNodesReady, waitForServiceAccount } from "./readiness.ts";
import { freeLoopbackPorts } from "./ports.ts";
import { isOurs, isRunning, killComponentsNow, startComponent, stopComponents, type ComponentProcess } from "./process.ts";
import { startClusterPostgres, stopPostgresProcess } from "./postgres.ts";
import { killNodeWorkloads, nodeComponents, prepareRealNode, removeNodeLeftovers, startRealNode, tearDownRealNodeNow, type RealNodeState } from "./node.ts";

const clusterDirPrefix = "appstack-cluster-";

export interface ClusterState {
  readonly name: string;
  readonly dir: string;
  readonly server: string;
  readonly kubeconfig: string;
  /** The process that owns the cluster's lifetime; null for a cluster left running by `cluster up`. */
  readonly ownerPid: number | null;
  readonly components: ComponentProcess[];
  /** Set when the cluster has a real node (ClusterOptions.realNode): what to take apart on stop. */
  readonly realNode?: RealNodeState;
}

export interface LocalCluster extends ClusterState {
  /** With ClusterOptions.postgres: the server's `postgres://` URL (its password included; also in <dir>/postgres-url, mode 0600). */
  readonly postgresUrl?: string | undefined;
  stop(): Promise<void>;
  /** Stops the API server and starts it again (every watch drops); resolves once it serves again. */
  restartApiServer(): Promise<void>;
}

export interface ClusterOptions {
  readonly name?: string;
  /** kwok's fake nodes: 2 by default, 0 by default with a real node (so that every pod really runs). */
  readonly nodes?: number;
  /**
   * A real node beside the control plane (containerd, kubelet, kube-proxy, CNI bridge, a volume
   * provisioner): pods run, Services answer, claims bind. One such cluster per machine at a time.
   */
  readonly realNode?: boolean;
  /**
   * Another Kubernetes release's kube-apiserver, kube-controller-manager and kube-scheduler (for
   * example tools.ts's oldestControlPlaneTools), built here on first use; toolchain/kube's by default.
   */
  readonly controlPlane?: readonly Tool[];
  /** A PostgreSQL server beside etcd (postgres.ts), for Pulumi's `postgres://` backend; stopped with the cluster. */
  readonly postgres?: boolean;
  /** kube-apiserver's audit log of every request (audit.ts): what a client asked of the API server, for tests to read. */
  readonly audit?: boolean;
  /** Keep running after this process exits (the `cluster up` command). */
  readonly detached?: boolean;
  /** On SIGINT or SIGTERM, kill the cluster and exit (tests, benchmarks: nothing else to drain). */
  readonly exitOnSignal?: boolean;
  readonly log?: (line: string) => void;
}

export function clusterDir(name: string): string {
  return join(tmpdir(), `${clusterDirPrefix}${name}`);
}

/** The name of the local cluster whose kubeconfig `path` is, if it is one of ours (running or not). */
export function localClusterOf(path: string): string | undefined {
  const dir = dirname(resolve(path));
  const name = basename(dir).slice(clusterDirPrefix.length);
  return basename(path) === "kubeconfig" && basename(dir).startsWith(clusterDirPrefix) && clusterDir(name) === dir ? name : undefined;
}

function saveState(state: ClusterState): void {
  writeFileSync(join(state.dir, "state.json"), JSON.stringify(state, null, 2));
}

export function readState(dir: string): ClusterState | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) as ClusterState;
  } catch {
    return undefined;
  }
}

/**
 * Abandoned: its owner process is gone, or, left running by `cluster up` (no owner), every one of
 * its processes is gone (killed by hand or by a machine's cleanup), so nothing can use it again.
 */
function isAbandoned(state: ClusterState): boolean {
  if (state.ownerPid !== null) return !isOurs(state.ownerPid, "");
  return state.components.length > 0 && !state.components.some((component) => isRunning(component, state.dir));
}

/** Kills and removes what a run that died without cleaning up left behind, a real node's bridge, mounts and cgroups included. */
export async function reapAbandonedClusters(): Promise<void> {
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith(clusterDirPrefix)) continue;
    const dir = join(tmpdir(), entry);
    const state = readState(dir);
    if (!state || !isAbandoned(state)) continue;
    await stopComponents(state.components, dir, 2_000);
    if (state.realNode) tearDownRealNodeNow(state.realNode, dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Stops the clients of the API server first, then the API server while etcd still answers (it
 * drains in a moment instead of waiting out its grace period), then etcd.
 */
export async function stopClusterAt(dir: string): Promise<void> {
  const state = readState(dir);
  const named = (names: readonly string[]) => state?.components.filter((c) => names.includes(c.name)) ?? [];
  await stopComponents(named(["kwok", "kube-scheduler", "kube-controller-manager", ...nodeComponents]), dir);
  // A real node: its pods and shims while containerd still runs, then the rest once it has stopped.
  if (state?.realNode) killNodeWorkloads(state.realNode);
  await stopComponents(named(["containerd"]), dir);
  for (const names of [["kube-apiserver"], ["etcd"]]) await stopComponents(named(names), dir);
  for (const server of named(["postgres"])) await stopPostgresProcess(server, dir);
  // Only now: the API server listens on the node's bridge address, and without it would wait out its grace period.
  if (state?.realNode) removeNodeLeftovers(state.realNode, dir);
  rmSync(dir, { recursive: true, force: true });
}

/** Before anything is made: a real node needs root, and only one runs per machine at a time. */
function refuseRealNode(options: ClusterOptions): void {
  if (!options.realNode) return;
  if (process.getuid?.() !== 0) throw new Error("a real node needs root: it makes a bridge, cgroups, mounts and iptables rules");
  const other = runningClusters().find((state) => state.realNode && state.components.some((c) => isRunning(c, state.dir)));
  if (other) throw new Error(`cluster ${other.name} already runs a real node on this machine (one at a time: kube-proxy's iptables chains are machine-wide); stop it first`);
}

/** With a real node, the server listens on the bridge's address: the operator's pods reach the host only there. */
function postgresNetwork(realNode: RealNodeState | undefined): { address: string; clients: string } | undefined {
  return realNode ? { address: realNode.network.gateway, clients: realNode.network.podCidr } : undefined;
}

/**
 * With a real node the API server listens on the node's bridge address instead of loopback: pods
 * reach it there through the `kubernetes` Service, and the host reaches it there as well.
 */
function prepareNode(options: ClusterOptions, name: string, dir: string, log: (line: string) => void): { realNode?: RealNodeState; apiserverAddress: string } {
  if (!options.realNode) return { apiserverAddress: "127.0.0.1" };
  try {
    const realNode = prepareRealNode(name, dir, serviceCidr, log);
    return { realNode, apiserverAddress: realNode.network.gateway };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

function fakeNodeCount(options: ClusterOptions): number {
  return options.nodes ?? (options.realNode ? 0 : 2);
}

/** Builds `controlPlane` (once per pin); the binary that runs each tool, toolPath's where the list names none. */
function controlPlaneBinaries(controlPlane: readonly Tool[] = [], log: (line: string) => void): (tool: ToolName) => string {
  for (const tool of controlPlane) buildTool(tool, log);
  return (name) => {
    const other = controlPlane.find((tool) => tool.binary === name);
    return other ? toolBinary(other) : toolPath(name);
  };
}

export async function startCluster(options: ClusterOptions = {}): Promise<LocalCluster> {
  const log = options.log ?? (() => undefined);
  const detached = options.detached ?? false;
  await reapAbandonedClusters();
  const name = options.name ?? `t${randomBytes(4).toString("hex")}`;
  const dir = clusterDir(name);
  const existing = readState(dir);
  if (existing && existing.components.some((c) => isRunning(c, dir))) throw new Error(`cluster ${name} is already running (${dir})`);
  refuseRealNode(options);
  const binaryOf = controlPlaneBinaries(options.controlPlane, log);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "logs"), { recursive: true });

  const started = Date.now();
  const [etcdClient, etcdPeer, apiserver] = (await freeLoopbackPorts(3)) as [number, number, number];
  const { realNode, apiserverAddress } = prepareNode(options, name, dir, log);
  const server = `https://${apiserverAddress}:${apiserver}`;
  const state: ClusterState = {
    name, dir, server, kubeconfig: join(dir, "kubeconfig"), ownerPid: detached ? null : process.pid, components: [], ...(realNode ? { realNode } : {}),
  };
  const args = componentArgs(dir, { etcdClient, etcdPeer, apiserver }, apiserverAddress, options.audit);
  const launchBinary = (component: string, binary: string, toolArgs: string[]): ComponentProcess => {
    const proc = startComponent(component, binary, toolArgs, join(dir, "logs", `${component}.log`), { detached });
    state.components.push(proc);
    saveState(state);
    return proc;
  };
  const launch = (component: string, tool: ToolName, toolArgs: string[]) => launchBinary(component, binaryOf(tool), toolArgs);
  const onExit = () => {
    killComponentsNow(state.components, dir);
    if (state.realNode) tearDownRealNodeNow(state.realNode, dir);
    rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    onExit();
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  if (!detached) process.on("exit", onExit);
  if (options.exitOnSignal) for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, onSignal);
  const stop = async () => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await stopClusterAt(dir);
    // Only now: a process that exits while the stop is under way still takes every component along.
    process.off("exit", onExit);
  };

  let postgresUrl: string | undefined;
  try {
    const pki = writeCredentials(state, apiserverAddress, args.apiserver);
    saveState(state);

    log(`cluster ${name}: starting etcd on 127.0.0.1:${etcdClient}`);
    await waitForEtcd(launch("etcd", "etcd", args.etcd), etcdClient, dir);
    if (options.postgres) postgresUrl = await startClusterPostgres(dir, launchBinary, (line) => log(`cluster ${name}: ${line}`), postgresNetwork(realNode));
    log(`cluster ${name}: starting kube-apiserver on ${server}`);
    await waitForApiServer(launch("kube-apiserver", "kube-apiserver", args.apiserver), state.kubeconfig, dir);
    log(`cluster ${name}: starting controller-manager, scheduler and kwok`);
    const controllerManager = launch("kube-controller-manager", "kube-controller-manager", args.controllerManager);
    launch("kube-scheduler", "kube-scheduler", args.scheduler);
    const kwok = launch("kwok", "kwok", args.kwok);
    const nodeNames = await createFakeNodes(state.kubeconfig, fakeNodeCount(options));
    await waitForNodesReady(kwok, state.kubeconfig, nodeNames, dir);
    if (realNode) nodeNames.push(await startRealNode(realNode, { clusterName: name, dir, server, adminKubeconfig: state.kubeconfig, pki, launch: launchBinary, log }));
    await waitForServiceAccount(controllerManager, state.kubeconfig, dir);
    log(`cluster ${name}: ready with ${nodeNames.length} nodes in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    await stop();
    throw error;
  }
  const restartApiServer = async () => {
    const index = state.components.findIndex((c) => c.name === "kube-apiserver");
    const old = state.components[index]!;
    await stopComponents([old], dir);
    const fresh = startComponent(old.name, old.binary, [...old.args], old.logFile, { detached });
    state.components[index] = fresh;
    saveState(state);
    await waitForApiServer(fresh, state.kubeconfig, dir);
  };
  return { ...state, stop, restartApiServer, postgresUrl };
}

export function runningClusters(): ClusterState[] {
  return readdirSync(tmpdir())
    .filter((entry) => entry.startsWith(clusterDirPrefix))
    .map((entry) => readState(join(tmpdir(), entry)))
    .filter((state): state is ClusterState => state !== undefined && existsSync(state.dir));
}
