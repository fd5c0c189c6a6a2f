// What "started" means for each part of the local control plane, checked from outside the way a
// user would check it, failing fast with the component's own log when it dies while we wait.
import { request as httpGet } from "node:http";
import { request as httpsGet, type RequestOptions } from "node:https";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, KubeConfig, type V1Node } from "@kubernetes/client-node";
import { endingOf, isRunning, logTail, type ComponentProcess } from "./process.ts";

const startTimeoutMs = 120_000;

/** `explain` says, on a timeout, what the component itself reports as not ready. */
export async function waitUntil(what: string, component: ComponentProcess, marker: string, check: () => Promise<boolean>, explain?: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (!isRunning(component, marker)) {
      const ending = endingOf(component);
      throw new Error(`${component.name} (pid ${component.pid}) exited${ending ? ` (${ending})` : ""} while waiting for ${what}:\n${logTail(component) || "(its log is empty)"}`);
    }
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) {
      const reported = explain ? await explain().catch((error: unknown) => `(no answer: ${String(error)})`) : "";
      throw new Error(`timed out after ${startTimeoutMs / 1000} s waiting for ${what}:\n${reported ? `${reported}\n` : ""}${logTail(component)}`);
    }
    await sleep(200);
  }
}

export function statusOf(get: typeof httpGet | typeof httpsGet, url: string, options: RequestOptions): Promise<number> {
  return responseOf(get, url, options).then((response) => response.status);
}

export function responseOf(get: typeof httpGet | typeof httpsGet, url: string, options: RequestOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { ...options, timeout: 2_000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

export function loadKubeConfig(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

export async function waitForEtcd(etcd: ComponentProcess, clientPort: number, marker: string): Promise<void> {
  await waitUntil("etcd /health", etcd, marker, async () => (await statusOf(httpGet, `http://127.0.0.1:${clientPort}/health`, {})) === 200);
}

export async function waitForApiServer(apiserver: ComponentProcess, kubeconfig: string, marker: string): Promise<void> {
  const kc = loadKubeConfig(kubeconfig);
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const url = `${kc.getCurrentCluster()?.server}/readyz`;
  // The checks that fail, as /readyz?verbose lists them ("[-]poststarthook/... failed").
  const failing = async () => (await responseOf(httpsGet, `${url}?verbose`, options)).body.split("\n").filter((line) => line.startsWith("[-]")).join("\n");
  await waitUntil("kube-apiserver /readyz", apiserver, marker, async () => (await statusOf(httpsGet, url, options)) === 200, failing);
}

/** The pods one kwok node takes (the kubelet's default is 110); the bench adds nodes for more (test/bench/settings.ts). */
export const fakeNodePods = 250;

/** kwok nodes for `pods` pods at once, with a quarter more room (fakeNodePods each; at least the cluster's default 2). */
export function fakeNodesFor(pods: number): number {
  return Math.max(2, Math.ceil((pods * 1.25) / fakeNodePods));
}

/** Nodes that kwok manages (by annotation), with room for the pods of a benchmark run. */
export async function createFakeNodes(kubeconfig: string, count: number): Promise<string[]> {
  const core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
  const names = Array.from({ length: count }, (_, i) => `kwok-node-${i}`);
  const capacity = { cpu: "32", memory: "256Gi", pods: String(fakeNodePods) };
  for (const name of names) {
    const node: V1Node = {
      metadata: {
        name,
        annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
        labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", type: "kwok" },
      },
      status: { allocatable: capacity, capacity },
    };
    await core.createNode({ body: node });
  }
  return names;
}

export async function waitForNodesReady(kwok: ComponentProcess, kubeconfig: string, names: string[], marker: string): Promise<void> {
  const core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
  await waitUntil(`nodes ${names.join(", ")} Ready`, kwok, marker, async () => {
    const nodes = await core.listNode();
    const ready = nodes.items.filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
    return names.every((name) => ready.some((n) => n.metadata?.name === name));
  });
}

/** Pods can only be created once the controller-manager has made the namespace's service account. */
export async function waitForServiceAccount(controllerManager: ComponentProcess, kubeconfig: string, marker: string): Promise<void> {
  const core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
  await waitUntil("the default service account", controllerManager, marker, async () => {
    await core.readNamespacedServiceAccount({ name: "default", namespace: "default" });
    return true;
  });
}
