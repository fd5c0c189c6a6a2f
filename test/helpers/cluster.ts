// Test clusters are started and stopped through the same code as `appstack cluster up|down`.
import { after, before } from "node:test";
import { AppsV1Api, CoreV1Api, type CoreV1Event } from "@kubernetes/client-node";
import { startCluster, type ClusterOptions, type LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";

export interface TestCluster {
  readonly cluster: LocalCluster;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
}

/**
 * Starts a fresh cluster before the file's tests (then runs `setup`, in the same hook: separate
 * root hooks are not ordered on Node 20) and stops it after them, whatever happened.
 */
export function useCluster(setup?: (cluster: TestCluster) => Promise<void>, teardown?: () => Promise<void>, options: Pick<ClusterOptions, "nodes" | "audit"> = {}): () => TestCluster {
  let current: TestCluster | undefined;
  before(async () => {
    const cluster = await startCluster({ exitOnSignal: true, log: (line) => console.error(line), ...options });
    const kc = loadKubeConfig(cluster.kubeconfig);
    current = { cluster, core: kc.makeApiClient(CoreV1Api), apps: kc.makeApiClient(AppsV1Api) };
    await setup?.(current);
  });
  after(async () => {
    await teardown?.().catch((error: unknown) => console.error("teardown failed:", error));
    await current?.cluster.stop();
  });
  return () => {
    if (!current) throw new Error("cluster not started");
    return current;
  };
}

/** Polls until `check` returns a value, or fails with the last error after `timeoutMs`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${lastError instanceof Error ? `: ${lastError.message}` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The Events on one object, as `kubectl describe` lists them. */
export async function eventsOf(core: CoreV1Api, namespace: string, name: string): Promise<CoreV1Event[]> {
  return (await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })).items;
}

export async function eventWithReason(core: CoreV1Api, namespace: string, name: string, reason: string, matching?: (message: string) => boolean): Promise<CoreV1Event> {
  return eventually(`event ${reason} on ${namespace}/${name}`, async () => (await eventsOf(core, namespace, name)).find((e) => e.reason === reason && (!matching || matching(e.message ?? ""))));
}

export { isNotFound, orUndefined } from "../../operator/kube/clients.ts";
