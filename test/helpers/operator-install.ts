// The operator installed in a real-node cluster with `npx appstack pulumi` of the repository's
// program, as the in-cluster tests drive it: the Pulumi CLI with a deadline, the operator's pods,
// and a SIGKILL to a container through the node's containerd.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { join } from "node:path";
import type { CoreV1Api, V1Pod } from "@kubernetes/client-node";
import type { LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { eventually, isNotFound } from "./cluster.ts";

export const operatorNamespace = "appstack-system";
export const operatorSelector = "app.kubernetes.io/name=appstack-operator";

export interface PulumiRun {
  readonly code: number;
  readonly output: string;
}

/** `npx appstack pulumi ARGS` on the repository's program against `cluster`, its stacks in a file backend under `stateDir`. */
export function repositoryProgram(cluster: () => LocalCluster, stateDir: string) {
  const run = (args: string[], timeoutMs = 600_000): Promise<PulumiRun> => new Promise((resolve) => {
    execFile(process.execPath, [join(repoRoot, "operator/cmd/appstack.mjs"), "pulumi", ...args, "--non-interactive"], {
      cwd: repoRoot,
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
      env: {
        ...process.env,
        KUBECONFIG: cluster().kubeconfig,
        PULUMI_BACKEND_URL: `file://${stateDir}`,
        PULUMI_HOME: join(stateDir, "home"),
        PULUMI_CONFIG_PASSPHRASE: "in-cluster-test",
      },
    }, (error, stdout, stderr) => {
      // How it ended when it failed (an exit code, a signal, a spawn error), beside what it printed.
      const ending = error ? `\n[${error.message.split("\n")[0]}; signal ${error.signal ?? "none"}]` : "";
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, output: `${stdout}\n${stderr}${ending}` });
    });
  });
  const ok = async (...args: string[]): Promise<string> => {
    const { code, output } = await run(args);
    assert.equal(code, 0, `pulumi ${args.join(" ")}:\n${output}`);
    return output;
  };
  return { run, ok };
}

export const isReady = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

export async function podsOf(core: CoreV1Api, namespace: string, selector: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace, labelSelector: selector })).items;
}

/** The pods matching `selector` that are not being deleted. */
export async function livePodsOf(core: CoreV1Api, namespace: string, selector: string): Promise<V1Pod[]> {
  return (await podsOf(core, namespace, selector)).filter((pod) => !pod.metadata?.deletionTimestamp);
}

/** Until the pod named `name` no longer exists. */
export function podGone(core: CoreV1Api, name: string, namespace: string, timeoutMs: number): Promise<true> {
  return eventually(`pod ${namespace}/${name} gone`, async () => {
    try {
      await core.readNamespacedPod({ name, namespace });
      return undefined;
    } catch (error) {
      return isNotFound(error) ? true : undefined;
    }
  }, timeoutMs);
}

/**
 * Until the pod named `name` no longer exists, with the last log its container gave while it stopped
 * (the kubelet removes the log with the pod): a pod that outlives its grace says why.
 */
export async function podGoneWithLog(core: CoreV1Api, name: string, namespace: string, timeoutMs: number): Promise<{ gone: boolean; log: string }> {
  let log = "";
  const gone = await eventually(`pod ${namespace}/${name} gone`, async () => {
    try {
      await core.readNamespacedPod({ name, namespace });
      log = await core.readNamespacedPodLog({ name, namespace, tailLines: 40 }).catch(() => log);
      return undefined;
    } catch (error) {
      return isNotFound(error) ? true : undefined;
    }
  }, timeoutMs).catch(() => false);
  return { gone, log };
}

/** SIGKILL to a pod's first container's init (tini): the container dies with its engines, the kubelet restarts it in the same pod. */
export function killContainer(cluster: LocalCluster, pod: V1Pod): void {
  const id = pod.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, "") ?? "";
  assert.ok(id, `the container id of pod ${pod.metadata?.name}`);
  execFileSync("ctr", ["--address", cluster.realNode!.paths.containerdSocket, "--namespace", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", id], { timeout: 30_000 });
}
