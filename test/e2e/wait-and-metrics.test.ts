// What a person's tools read of an object, end to end on a local cluster with the operator and the
// real engine (docs/monitoring.md): the pinned `kubectl wait --for=condition=Ready` after every kind
// of change (create, spec change, scale, drift repair, resume), checked against what the API server
// then holds; every status the App and a Memcached pass through on the way, read by Argo CD's health
// check (deploy/argocd/health.lua) as kstatus reads it; and the metrics per object on /metrics
// (APPSTACK_OBJECT_METRICS=true), gone with the object. With the setting off there are none
// (suspend.test.ts checks that on its operator).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, test } from "node:test";
import { CustomObjectsApi, DiscoveryV1Api, Watch, type V1Deployment } from "@kubernetes/client-node";
import { defaultGroup as group, reconcileRequestAnnotation, version, type Condition, type Workload } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import { mergePatch } from "../../operator/kube/clients.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { toolPath } from "../../toolchain/tools.ts";
import { argoHealth, expectedHealth } from "../helpers/argocd-health.ts";
import { eventually, orUndefined, useCluster } from "../helpers/cluster.ts";
import { httpGet } from "../helpers/http.ts";
import { denyWrites } from "../helpers/hold.ts";
import { kstatus } from "../helpers/kstatus.ts";
import { disposeOperator, metricValue, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

const execFileAsync = promisify(execFile);
const namespace = "default";
const name = "web";
const scratch = mkdtempSync(join(tmpdir(), "appstack-wait-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

let operator: OperatorProcess | undefined;
let workloads: Workloads;
const cluster = useCluster(
  async ({ cluster: local }) => {
    operator = await startOperatorProcess(local.kubeconfig, { env: { APPSTACK_LEADER_ELECT: "false", APPSTACK_OBJECT_METRICS: "true" } });
    workloads = new Workloads(local.kubeconfig);
  },
  () => disposeOperator(operator),
);

/** The pinned kubectl against the test cluster, as a person types it. */
async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await execFileAsync(toolPath("kubectl"), [`--kubeconfig=${cluster().cluster.kubeconfig}`, `--namespace=${namespace}`, ...args], { encoding: "utf8", timeout: 150_000, env: { PATH: process.env["PATH"] ?? "", KUBECACHEDIR: join(scratch, "kube-cache") } });
  return stdout;
}

/** What the documentation says to run after a change: it exits 0 once Ready is True for the object's current generation. */
async function kubectlWaitReady(object = `app/${name}`): Promise<void> {
  const out = await kubectl("wait", "--for=condition=Ready", object, "--timeout=120s");
  assert.match(out, /condition met/);
}

async function deployment(of = name): Promise<V1Deployment | undefined> {
  return orUndefined(() => cluster().apps.readNamespacedDeployment({ name: of, namespace }));
}

/** Whether the Deployment, as the API server has it, runs `image` with `replicas` pods, all of them updated and ready, and no extra one. */
async function liveAs(image: string, replicas: number, of = name): Promise<string | undefined> {
  const live = await deployment(of);
  const seen = { image: live?.spec?.template.spec?.containers[0]?.image, replicas: live?.spec?.replicas, ready: live?.status?.readyReplicas, updated: live?.status?.updatedReplicas, total: live?.status?.replicas };
  const wanted = { image, replicas, ready: replicas, updated: replicas, total: replicas };
  return JSON.stringify(seen) === JSON.stringify(wanted) ? undefined : `the Deployment is ${JSON.stringify(seen)}, not ${JSON.stringify(wanted)}`;
}

const ready = (object: Workload): Condition | undefined => object.status?.conditions?.find((c) => c.type === "Ready");

/** What `kubectl wait --for=condition=Ready` accepts (k8s.io/kubectl's wait): Ready True, from a generation no older than the object's. */
function kubectlAccepts(object: Workload): boolean {
  const condition = ready(object);
  const generation = object.metadata.generation ?? 0;
  const observed = condition?.observedGeneration ?? object.status?.observedGeneration;
  return condition?.status === "True" && !(observed !== undefined && observed < generation);
}

/** Every version of the objects the API server sends a watch from now, for the changes a test makes. */
class Recorder {
  readonly events: Workload[] = [];
  private stop?: AbortController;

  static async start(kind: "apps" | "memcacheds", from: string): Promise<Recorder> {
    const recorder = new Recorder();
    const watch = new Watch(loadKubeConfig(cluster().cluster.kubeconfig));
    recorder.stop = await watch.watch(`/apis/${group}/${version}/namespaces/${namespace}/${kind}`, { resourceVersion: from, allowWatchBookmarks: false }, (phase, object: Workload) => {
      if (phase === "ADDED" || phase === "MODIFIED") recorder.events.push(object);
    }, () => undefined);
    return recorder;
  }

  /** Stops, and checks every version recorded: Argo CD's health check reads it as kstatus does. */
  finish(): Workload[] {
    this.stop?.abort();
    for (const object of this.events) {
      const reading = kstatus(object);
      const health = argoHealth(object);
      const conditions = (object.status?.conditions ?? []).map((c) => `${c.type}=${c.status} ${c.reason} (generation ${c.observedGeneration})`).join(", ");
      assert.equal(health.status, expectedHealth(object, reading.status), `${object.kind} ${object.metadata.name} generation ${object.metadata.generation}, ${conditions}: kstatus read ${reading.status}, the Argo CD health check ${health.status} (${health.message})`);
    }
    return this.events;
  }
}

/**
 * Makes a change that gives the App a new generation, waits with `kubectl wait`, and checks that the
 * change is live then (`live`: undefined once it is, else what differs). Every version of the App
 * the API server sent meanwhile is checked too: none that kubectl would take for Ready came before
 * the engine had applied its generation, so a Ready=True left over from the generation before, for
 * even one watch event, fails here whatever the timing.
 */
async function changeAndWait(change: () => Promise<unknown>, live: () => Promise<string | undefined>): Promise<App> {
  const before = await workloads.get("App", namespace, name);
  const recorder = await Recorder.start("apps", before.metadata.resourceVersion!);
  await change();
  await kubectlWaitReady();
  assert.equal(await live(), undefined, "live once kubectl wait returned");
  const events = recorder.finish().filter((object) => object.metadata.name === name);
  const changed = events.filter((object) => (object.metadata.generation ?? 0) > (before.metadata.generation ?? 0));
  assert.ok(changed.length > 0, "the change's own version was recorded");
  for (const object of changed.filter(kubectlAccepts)) {
    const last = object.status?.history?.at(-1);
    assert.deepEqual([object.status?.observedGeneration, last?.kind, last?.result, last?.update?.generation], [object.metadata.generation, "up", "succeeded", object.metadata.generation], `Ready=True for generation ${object.metadata.generation} before its update was applied: ${JSON.stringify(object.status?.conditions)}`);
  }
  return (await workloads.get("App", namespace, name)) as App;
}

test("kubectl wait --for=condition=Ready returns once a new App is live; its Memcached too", async () => {
  const apps = await Recorder.start("apps", await listVersion("apps"));
  const memcacheds = await Recorder.start("memcacheds", await listVersion("memcacheds"));
  await workloads.create({ kind: "App", metadata: { name, namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
  await workloads.create({ kind: "Memcached", metadata: { name: "cache", namespace }, spec: { size: 1 } });
  await kubectlWaitReady();
  assert.equal(await liveAs("nginx:1.27", 1), undefined);
  await kubectlWaitReady("memcached/cache");
  assert.equal((await deployment("cache"))?.status?.readyReplicas, 1);
  for (const object of apps.finish().filter(kubectlAccepts)) assert.equal(object.status?.history?.at(-1)?.kind, "up", "Ready before the first update");
  const cache = memcacheds.finish();
  assert.ok(cache.some((object) => argoHealth(object).status === "Progressing") && argoHealth(cache.at(-1)!).status === "Healthy", cache.map((object) => argoHealth(object).status).join(" "));
});

test("kubectl wait --for=condition=Ready returns only once the App's Service routes to every ready pod: while the EndpointSlice controller is refused, the App is Reconciling (EndpointsPending)", async () => {
  const served = "served";
  const serviceNameLabel = "kubernetes.io/service-name";
  // The EndpointSlice controller's writes of the Service's slices are refused until the test lets them pass: a deterministic lag.
  const denial = await denyWrites(cluster().cluster, "endpointslices", "CREATE", namespace, undefined, { when: (request) => request.object?.metadata?.labels?.[serviceNameLabel] === served });
  try {
    await workloads.create({ kind: "App", metadata: { name: served, namespace }, spec: { image: "nginx:1.27", replicas: 2, port: 80 } });
    await denial.denied;
    const pending = await eventually("the App held back as EndpointsPending", async () => {
      const condition = ready(await workloads.get("App", namespace, served));
      return condition?.reason === "EndpointsPending" ? condition : undefined;
    }, 90_000);
    assert.equal(pending.status, "False");
    assert.equal(pending.message, `the Service ${served} routes to 0 of 2 ready pods: its EndpointSlices do not list the others yet`);
    // Nothing else holds it back: the rollout is complete, as the API server has it.
    assert.equal(await liveAs("nginx:1.27", 2, served), undefined);
  } finally {
    await denial.remove();
  }
  await kubectlWaitReady(`app/${served}`);
  const discovery = loadKubeConfig(cluster().cluster.kubeconfig).makeApiClient(DiscoveryV1Api);
  const slices = await discovery.listNamespacedEndpointSlice({ namespace, labelSelector: `${serviceNameLabel}=${served}` });
  const routed = slices.items.flatMap((slice) => (slice.endpoints ?? []).filter((e) => e.conditions?.ready !== false).map((e) => e.targetRef?.name)).sort();
  const pods = (await cluster().core.listNamespacedPod({ namespace, labelSelector: `app.kubernetes.io/instance=${served}` })).items.filter((pod) => !pod.metadata?.deletionTimestamp);
  assert.deepEqual(routed, pods.map((pod) => pod.metadata?.name).sort(), "Ready once the slices list every ready pod");
  await workloads.delete("App", namespace, served);
});

/** The resourceVersion of a list of `plural`: a watch from it sees every object created afterwards. */
async function listVersion(plural: "apps" | "memcacheds"): Promise<string> {
  const api = loadKubeConfig(cluster().cluster.kubeconfig).makeApiClient(CustomObjectsApi);
  // A CRD's storage answers 429 for a moment after the operator installed it: asked again.
  return eventually(`a list of ${plural}`, async () => ((await api.listNamespacedCustomObject({ group, version, plural, namespace })) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
}

test("kubectl wait --for=condition=Ready after a spec change waits for the new generation: the Ready=True of the one before does not count", async () => {
  await changeAndWait(() => workloads.mergeSpec("App", namespace, name, { image: "nginx:1.28" }), () => liveAs("nginx:1.28", 1));
});

test("kubectl wait --for=condition=Ready after kubectl scale returns once every replica is ready", async () => {
  await changeAndWait(() => kubectl("scale", `app/${name}`, "--replicas=3"), () => liveAs("nginx:1.28", 3));
});

test("after a drift, a reconcile request and kubectl wait on its handling, then on Ready, return once the repair is live", async () => {
  await cluster().apps.patchNamespacedDeployment({ name, namespace, body: { spec: { replicas: 1 } } }, mergePatch);
  const requested = `drift-${Date.now()}`;
  await kubectl("annotate", `app/${name}`, `${reconcileRequestAnnotation}=${requested}`, "--overwrite");
  await kubectl("wait", `--for=jsonpath={.status.lastHandledReconcileAt}=${requested}`, `app/${name}`, "--timeout=120s");
  await kubectlWaitReady();
  assert.equal(await liveAs("nginx:1.28", 3), undefined, "repaired once kubectl wait returned");
});

test("kubectl wait --for=condition=Ready after a resume returns once the change held back while suspended is live", async () => {
  await kubectl("patch", `app/${name}`, "--type=merge", "-p", JSON.stringify({ spec: { suspend: true } }));
  // Suspended with nothing held back is Ready (reason Suspended): kubectl wait returns.
  await kubectlWaitReady();
  await workloads.mergeSpec("App", namespace, name, { image: "nginx:1.29" });
  await eventually("the change held back", async () => {
    const app = await workloads.get("App", namespace, name);
    return ready(app)?.observedGeneration === app.metadata.generation && ready(app)?.status === "False" ? true : undefined;
  });
  assert.equal(await liveAs("nginx:1.28", 3), undefined, "nothing applied while suspended");
  await changeAndWait(() => kubectl("patch", `app/${name}`, "--type=merge", "-p", JSON.stringify({ spec: { suspend: false } })), () => liveAs("nginx:1.29", 3));
});

const objectLabels = (of: string, kind = "App") => ({ kind, namespace, name: of });

test("metrics per object: reconcile and operation durations, the resources each operation created and changed, the last success; gone with the object", async () => {
  const metrics = async () => (await httpGet(`http://127.0.0.1:${operator!.healthPort}/metrics`)).body;
  const body = await metrics();
  const web = objectLabels(name);
  assert.ok((metricValue(body, "appstack_object_reconcile_duration_seconds_count", web) ?? 0) >= 5, body);
  // The create, the spec change, the scale, the requested repair and the resume: an up each.
  assert.ok((metricValue(body, "appstack_object_operation_duration_seconds_count", { ...web, operation: "up" }) ?? 0) >= 5);
  assert.ok((metricValue(body, "appstack_object_resources_total", { ...web, operation: "up", change: "created" }) ?? 0) >= 2, "the Deployment and the Service, at least");
  assert.ok((metricValue(body, "appstack_object_resources_total", { ...web, operation: "up", change: "changed" }) ?? 0) >= 3, "the image twice and the replicas");
  const created = Date.parse((await workloads.get("App", namespace, name)).metadata.creationTimestamp as unknown as string) / 1000;
  assert.ok((metricValue(body, "appstack_object_last_success_timestamp_seconds", web) ?? 0) >= Math.floor(created));
  assert.ok((metricValue(body, "appstack_object_resources_total", { ...objectLabels("cache", "Memcached"), operation: "up", change: "created" }) ?? 0) >= 2);

  await workloads.delete("App", namespace, name);
  await workloads.gone("App", namespace, name);
  await eventually("the deleted App's series gone from /metrics", async () => ((await metrics()).split("\n").some((line) => line.startsWith("appstack_object_") && line.includes(`name="${name}"`)) ? undefined : true));
  assert.ok((await metrics()).includes('name="cache"'), "the Memcached's series stay");
});
