// The drift part of `npm run bench`: Deployments of settled Apps scaled by hand, and the time until
// appstack has noticed (through the watch) and repaired them, each edit on its own and N at once.
import { setTimeout as sleep } from "node:timers/promises";
import type { App } from "../../components/app.ts";
import { mergePatch, type KubeClients } from "../../operator/kube/clients.ts";

export interface DriftRound {
  /** Seconds from one edit to its repair (the Deployment back at its App's replicas and the App Ready), one edit at a time. */
  readonly single: number[];
  readonly n: number;
  /** Seconds from N edits at once until every one is repaired. */
  readonly allSeconds: number;
}


async function repaired(clients: KubeClients, namespace: string, name: string, replicas: number): Promise<void> {
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    const deployment = await clients.apps.readNamespacedDeployment({ name, namespace });
    const app = (await clients.custom.getNamespacedCustomObject({ group: "appstack.dev", version: "v1alpha1", plural: "apps", namespace, name })) as App;
    const ready = app.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    if (deployment.spec?.replicas === replicas && ready) return;
    if (Date.now() > deadline) throw new Error(`${namespace}/${name} not repaired after 10 minutes`);
    await sleep(100);
  }
}

async function scaleByHand(clients: KubeClients, namespace: string, name: string): Promise<void> {
  await clients.apps.patchNamespacedDeployment({ name, namespace, body: { spec: { replicas: 5 } } }, mergePatch);
}

/** `names` are settled Apps of 1 replica in `namespace`. */
export async function driftRound(clients: KubeClients, namespace: string, names: readonly string[], singles = 3): Promise<DriftRound> {
  const single: number[] = [];
  for (const name of names.slice(0, singles)) {
    const started = Date.now();
    await scaleByHand(clients, namespace, name);
    await repaired(clients, namespace, name, 1);
    single.push((Date.now() - started) / 1000);
  }
  const started = Date.now();
  await Promise.all(names.map((name) => scaleByHand(clients, namespace, name)));
  await Promise.all(names.map((name) => repaired(clients, namespace, name, 1)));
  return { single: single.sort((a, b) => a - b), n: names.length, allSeconds: (Date.now() - started) / 1000 };
}
