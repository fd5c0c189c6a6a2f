// The baseline: a minimal reconciler in the controller-runtime style of the kubebuilder tutorials,
// written with @kubernetes/client-node server-side apply and no Pulumi. It applies the same
// manifests appstack's components make, and reports Ready the same way: the rollout complete and
// the Service's EndpointSlices routing to every ready pod (counted, where appstack names the pods).
import { makeInformer, type KubernetesObject, type V1EndpointSlice } from "@kubernetes/client-node";
import { applyObjects } from "../../operator/kube/apply.ts";
import { appDeployment, appService } from "../../components/manifests.ts";
import type { App } from "../../components/app.ts";
import { jsonPatch, kubeClients } from "../../operator/kube/clients.ts";
import { ownerOf } from "../../components/metadata.ts";
import { conditionsFor, type Phase } from "../../operator/controller/conditions.ts";
import { serviceNameLabel } from "../../operator/controller/service-endpoints.ts";
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
  const phase = served(app, rolloutPhase(app, deployment), service ? deployment.status?.readyReplicas ?? 0 : 0);
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

/** `phase`, unless it is Ready and the App's Service's slices list fewer ready endpoints than the Deployment has ready pods. */
function served(app: App, phase: Phase, readyPods: number): Phase {
  if (phase.kind !== "ready" || readyPods === 0) return phase;
  const ofService = slices.list(app.metadata.namespace).filter((slice) => slice.metadata?.labels?.[serviceNameLabel] === app.metadata.name);
  const routed = ofService.flatMap((slice) => (slice.endpoints ?? []).filter((endpoint) => endpoint.conditions?.ready !== false)).length;
  return routed >= readyPods ? phase : { kind: "progressing", reason: "EndpointsPending", message: `${routed} of ${readyPods} ready pods routed` };
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
const sliceQuery = { group: "discovery.k8s.io", version: "v1", plural: "endpointslices", labelSelector: "app.kubernetes.io/managed-by=appstack" };
const slices = makeInformer<V1EndpointSlice>(clients.config, "/apis/discovery.k8s.io/v1/endpointslices", (() => clients.custom.listClusterCustomObject(sliceQuery)) as never, sliceQuery.labelSelector);
for (const type of ["add", "update"] as const) {
  slices.on(type, (slice: V1EndpointSlice) => {
    const app = apps.get(slice.metadata?.labels?.[serviceNameLabel] ?? "", slice.metadata?.namespace);
    if (app) enqueue(app);
  });
}
// An informer stops at its first error (a watch the API server ends, a CRD not served yet just
// after its install); controller-runtime starts again, and so does the baseline.
for (const informer of [apps, deployments, slices]) informer.on("error", () => setTimeout(() => void informer.start(), 1_000));
await apps.start();
await deployments.start();
await slices.start();
process.on("SIGTERM", () => process.exit(0));
