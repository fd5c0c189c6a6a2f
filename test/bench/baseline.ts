// The baseline: a minimal reconciler in the controller-runtime style of the kubebuilder tutorials,
// written with @kubernetes/client-node server-side apply and no Pulumi. It applies the same
// manifests appstack's components make, and reports Ready the same way.
import { makeInformer, type KubernetesObject } from "@kubernetes/client-node";
import { applyObjects } from "../../operator/kube/apply.ts";
import { appDeployment, appService } from "../../components/manifests.ts";
import type { App } from "../../components/app.ts";
import { jsonPatch, kubeClients } from "../../operator/kube/clients.ts";
import { ownerOf } from "../../components/metadata.ts";
import { conditionsFor } from "../../operator/controller/conditions.ts";
import { rolloutPhase } from "../../operator/controller/status.ts";

const clients = kubeClients(process.env["KUBECONFIG"]);

async function apply(manifest: object, kind: string, apiVersion: string): Promise<void> {
  await applyObjects(clients, [{ apiVersion, kind, ...manifest }], "baseline");
}

async function reconcile(app: App): Promise<void> {
  const owner = ownerOf(app);
  await apply(appDeployment(owner, app.spec), "Deployment", "apps/v1");
  const service = appService(owner, app.spec);
  if (service) await apply(service, "Service", "v1");
  const deployment = await clients.apps.readNamespacedDeployment({ name: app.metadata.name, namespace: app.metadata.namespace });
  const phase = rolloutPhase(app, deployment);
  const status = {
    observedGeneration: app.metadata.generation,
    readyReplicas: deployment.status?.readyReplicas ?? 0,
    conditions: conditionsFor(phase, app.metadata.generation, app.status?.conditions),
  };
  await clients.custom.patchNamespacedCustomObjectStatus(
    { group: "appstack.dev", version: "v1alpha1", plural: "apps", namespace: app.metadata.namespace, name: app.metadata.name, body: [{ op: "add", path: "/status", value: status }] },
    jsonPatch,
  );
}

const queue = new Map<string, App>();
let running = 0;
const concurrency = Number(process.env["BASELINE_CONCURRENCY"] ?? "3");
function pump(): void {
  while (running < concurrency && queue.size) {
    const [key, app] = queue.entries().next().value as [string, App];
    queue.delete(key);
    running++;
    reconcile(app).catch(() => setTimeout(() => enqueue(app), 500)).finally(() => {
      running--;
      pump();
    });
  }
}
const namespacePrefix = process.env["BASELINE_NAMESPACE_PREFIX"] ?? "";
function enqueue(app: App): void {
  if (!app.metadata.namespace.startsWith(namespacePrefix)) return;
  queue.set(`${app.metadata.namespace}/${app.metadata.name}`, app);
  pump();
}

const apps = makeInformer<App>(clients.config, "/apis/appstack.dev/v1alpha1/apps", (() => clients.custom.listClusterCustomObject({ group: "appstack.dev", version: "v1alpha1", plural: "apps" })) as never);
apps.on("add", enqueue);
apps.on("update", (app) => {
  if (app.status?.observedGeneration !== app.metadata.generation || app.status?.conditions?.find((c) => c.type === "Ready")?.status !== "True") enqueue(app);
});
const deployments = makeInformer(clients.config, "/apis/apps/v1/deployments", (() => clients.apps.listDeploymentForAllNamespaces({ labelSelector: "app.kubernetes.io/managed-by=appstack" })), "app.kubernetes.io/managed-by=appstack");
deployments.on("update", (d: KubernetesObject) => {
  const app = apps.get(d.metadata?.name ?? "", d.metadata?.namespace);
  if (app) enqueue(app);
});
// An informer stops at its first error (a watch the API server ends, a CRD not served yet just
// after its install); controller-runtime starts again, and so does the baseline.
for (const informer of [apps, deployments]) informer.on("error", () => setTimeout(() => void informer.start(), 1_000));
await apps.start();
await deployments.start();
process.on("SIGTERM", () => process.exit(0));
