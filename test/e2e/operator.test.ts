// The operator end to end: its own process, the real Pulumi engine, a real API server. Every
// assertion reads the API server (objects, Deployments, pods, Events) or the stack backend.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type { CoreV1Event, V1Deployment } from "@kubernetes/client-node";
import type { App } from "../../components/app.ts";
import type { Memcached } from "../../components/memcached.ts";
import { mergePatch } from "../../operator/kube/clients.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { eventually, eventWithReason as eventWithReasonOf, isNotFound, useCluster } from "../helpers/cluster.ts";
import { kstatus } from "../helpers/kstatus.ts";
import { argoHealth } from "../helpers/argocd-health.ts";
import { httpGet } from "../helpers/http.ts";
import { disposeOperator, metricValue, startOperatorProcess, watchOperator, Workloads, type OperatorProcess } from "../helpers/operator.ts";

let operator: OperatorProcess | undefined;
let workloads: Workloads;

const cluster = useCluster(
  async ({ cluster: local, core }) => {
    // One replica, no election: an API server restart below must not cost it the lease.
    operator = await startOperatorProcess(local.kubeconfig, { env: { APPSTACK_LEADER_ELECT: "false" } });
    workloads = new Workloads(local.kubeconfig);
    for (const name of ["team-a", "team-b"]) await core.createNamespace({ body: { metadata: { name } } });
  },
  () => disposeOperator(operator),
);

const app = (name: string, namespace: string, spec: Record<string, unknown>) => ({ kind: "App" as const, metadata: { name, namespace }, spec });

async function deployment(namespace: string, name: string): Promise<V1Deployment> {
  return cluster().apps.readNamespacedDeployment({ name, namespace });
}

async function podsOf(namespace: string, selector: Record<string, string>) {
  const labelSelector = Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(",");
  return (await cluster().core.listNamespacedPod({ namespace, labelSelector })).items.filter((p) => !p.metadata?.deletionTimestamp);
}

async function eventWithReason(namespace: string, name: string, reason: string): Promise<CoreV1Event> {
  return eventWithReasonOf(cluster().core, namespace, name, reason);
}

function stackFile(name: string): string {
  return join(operator!.stateDir, "backend", ".pulumi", "stacks", "appstack", `${name}.json`);
}

test("an App becomes Ready with its Deployment, Service and running pods", async () => {
  await workloads.create(app("web", "team-a", { image: "nginx:1.27", replicas: 2, port: 8080, env: [{ name: "MODE", value: "e2e" }] }));
  const ready = (await workloads.ready("App", "team-a", "web")) as App;
  const live = await deployment("team-a", "web");
  assert.equal(live.spec?.replicas, 2);
  assert.equal(live.status?.readyReplicas, 2);
  const container = live.spec?.template.spec?.containers[0];
  assert.equal(container?.image, "nginx:1.27");
  assert.deepEqual(container?.env?.map((e) => [e.name, e.value]), [["MODE", "e2e"]]);
  assert.equal(live.metadata?.labels?.["app.kubernetes.io/managed-by"], "appstack");
  assert.equal(live.metadata?.ownerReferences?.[0]?.uid, ready.metadata.uid);
  const service = await cluster().core.readNamespacedService({ name: "web", namespace: "team-a" });
  assert.equal(service.spec?.ports?.[0]?.port, 8080);
  const pods = await podsOf("team-a", live.spec.selector.matchLabels!);
  assert.equal(pods.length, 2);
  assert.ok(pods.every((p) => p.status?.phase === "Running" && p.spec?.nodeName?.startsWith("kwok-node-")));
  // Status: counts from the live Deployment, the stack and its last operation.
  assert.equal(ready.status?.readyReplicas, 2);
  assert.equal(ready.status?.availableReplicas, 2);
  assert.equal(ready.status?.stack?.name, "app.team-a.web");
  assert.equal(ready.status?.stack?.lastOperation?.kind, "up");
  assert.equal(ready.status?.stack?.lastOperation?.result, "succeeded");
  // The stack, the provider, the component, the Deployment and the Service.
  assert.equal(ready.status?.stack?.lastOperation?.resourceChanges?.["create"], 5);
  assert.ok(ready.metadata.finalizers?.includes("appstack.dev/stack"));
  assert.ok(existsSync(stackFile("app.team-a.web")));
  await eventWithReason("team-a", "web", "StackUpdated");
});

test("an unchanged object is reconciled without starting a Pulumi process", async () => {
  const before = await workloads.get("App", "team-a", "web");
  // An annotation is metadata, not spec: the watch hands the object to the reconciler (a person
  // may have annotated it to approve a plan), which finds the spec applied and the children as applied.
  const seen = await watchOperator(operator!, async () => {
    await workloads.merge("App", "team-a", "web", { metadata: { annotations: { "example.com/touched": "yes" } } });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
  });
  assert.ok(seen.reconciles >= 1, "the annotation must have been reconciled");
  assert.equal(seen.pulumiProcesses, 0);
  assert.equal(seen.operations, 0);
  const after = await workloads.get("App", "team-a", "web");
  assert.equal(after.metadata.generation, before.metadata.generation);
  assert.equal(after.status?.stack?.lastOperation?.startTime, before.status?.stack?.lastOperation?.startTime);
});

test("scaling through the scale subresource and changing the image roll out", async () => {
  const { CustomObjectsApi, KubeConfig } = await import("@kubernetes/client-node");
  const kc = new KubeConfig();
  kc.loadFromFile(cluster().cluster.kubeconfig);
  // What `kubectl scale app/web --replicas=3` does.
  await kc.makeApiClient(CustomObjectsApi).replaceNamespacedCustomObjectScale({
    group: "appstack.dev", version: "v1alpha1", plural: "apps", namespace: "team-a", name: "web",
    body: { apiVersion: "autoscaling/v1", kind: "Scale", metadata: { name: "web", namespace: "team-a" }, spec: { replicas: 3 } },
  });
  const scaled = await workloads.ready("App", "team-a", "web");
  assert.equal(scaled.status?.readyReplicas, 3);
  assert.equal((await deployment("team-a", "web")).spec?.replicas, 3);

  await workloads.mergeSpec("App", "team-a", "web", { image: "nginx:1.28" });
  await workloads.ready("App", "team-a", "web");
  const live = await deployment("team-a", "web");
  assert.equal(live.spec?.template.spec?.containers[0]?.image, "nginx:1.28");
  const pods = await podsOf("team-a", live.spec.selector.matchLabels!);
  assert.equal(pods.length, 3);
  assert.ok(pods.every((p) => p.spec?.containers[0]?.image === "nginx:1.28"));
});

test("a Deployment deleted or edited out of band is repaired through Pulumi", async () => {
  const original = await deployment("team-a", "web");
  await cluster().apps.deleteNamespacedDeployment({ name: "web", namespace: "team-a" });
  const recreated = await eventually("the Deployment to be recreated", async () => {
    const live = await deployment("team-a", "web").catch(() => undefined);
    return live && live.metadata?.uid !== original.metadata?.uid ? live : undefined;
  });
  assert.equal(recreated.spec?.replicas, 3);
  await eventWithReason("team-a", "web", "DriftRepaired");

  await cluster().apps.patchNamespacedDeployment(
    { name: "web", namespace: "team-a", body: { spec: { replicas: 1 } } },
    mergePatch,
  );
  await eventually("replicas to be restored to 3", async () => ((await deployment("team-a", "web")).spec?.replicas === 3 ? true : undefined));
  await workloads.ready("App", "team-a", "web");
});

test("two Apps with the same image in one namespace stay isolated", async () => {
  await workloads.create(app("twin-a", "team-b", { image: "nginx:1.27", replicas: 1 }));
  await workloads.create(app("twin-b", "team-b", { image: "nginx:1.27", replicas: 2 }));
  await workloads.ready("App", "team-b", "twin-a");
  await workloads.ready("App", "team-b", "twin-b");
  const a = await deployment("team-b", "twin-a");
  const b = await deployment("team-b", "twin-b");
  assert.notDeepEqual(a.spec?.selector.matchLabels, b.spec?.selector.matchLabels);
  assert.equal((await podsOf("team-b", a.spec!.selector.matchLabels!)).length, 1);
  assert.equal((await podsOf("team-b", b.spec!.selector.matchLabels!)).length, 2);
});

test("the same name in two namespaces gets two stacks", async () => {
  await workloads.create(app("web", "team-b", { image: "httpd:2.4", replicas: 1 }));
  const other = await workloads.ready("App", "team-b", "web");
  assert.equal(other.status?.stack?.name, "app.team-b.web");
  assert.equal((await deployment("team-b", "web")).spec?.template.spec?.containers[0]?.image, "httpd:2.4");
  assert.equal((await deployment("team-a", "web")).spec?.template.spec?.containers[0]?.image, "nginx:1.28");
});

test("the API server rejects invalid specs with a clear message", async () => {
  const invalid: [Record<string, unknown>, RegExp][] = [
    [{ replicas: 1 }, /spec\.image: Required value/],
    [{ image: "" }, /spec\.image.*at least 1 chars/],
    [{ image: "nginx", replicas: -1 }, /spec\.replicas.*greater than or equal to 0/],
    [{ image: "nginx", replicas: 1001 }, /spec\.replicas.*less than or equal to 1000/],
    [{ image: "nginx", port: 70000 }, /spec\.port.*less than or equal to 65535/],
    [{ image: "nginx", env: [{ name: "1BAD" }] }, /spec\.env\[0\]\.name.*should match/],
    [{ image: "nginx", resources: { requests: { cpu: "2" }, limits: { cpu: "1" } } }, /every request must be less than or equal to its limit/],
    // Found by the hostile-input soak: stored capped at 2^63-1, it was drift for ever.
    [{ image: "nginx", resources: { limits: { cpu: "999999999999999999999Ei" } } }, /each quantity must be at least 0 and less than 9223372036854775807/],
    [{ image: "nginx", resources: { requests: { memory: "-1Gi" } } }, /each quantity must be at least 0/],
    // Found by the hostile-input soak: refused only at the Deployment, so the App went Stalled.
    [{ image: "nginx", resources: { requests: { "example.com/gpu": "100m" }, limits: { "example.com/gpu": "100m" } } }, /counts whole units/],
    [{ image: "nginx", resources: { requests: { "example.com/gpu": 1 } } }, /each request needs a limit equal to it/],
    [{ image: "nginx", resources: { requests: { "example.com/gpu": 1 }, limits: { "example.com/gpu": 2 } } }, /each request needs a limit equal to it/],
    [{ image: "nginx", resources: { requests: { memory: "1Gi", "hugepages-2Mi": "3Mi" }, limits: { "hugepages-2Mi": "3Mi" } } }, /whole multiple of its page size/],
    [{ image: "nginx", resources: { limits: { "hugepages-huge": "4Mi" } } }, /whole multiple of its page size/],
    [{ image: "nginx", resources: { limits: { "hugepages-2Mi": "4Mi" } } }, /need a cpu or memory request or limit too/],
  ];
  for (const [spec, message] of invalid) {
    await assert.rejects(workloads.create(app("bad", "team-a", spec)), (error: { code?: number; body?: unknown }) => {
      assert.ok(error.code, `not rejected: ${JSON.stringify(spec)}`);
      assert.equal(error.code, 422, JSON.stringify(spec));
      assert.match(String(error.body), message);
      return true;
    });
  }
  await assert.rejects(workloads.create({ kind: "Memcached", metadata: { name: "bad", namespace: "team-a" }, spec: { size: 101 } }), /spec\.size/);

  // The rules on extended resources and hugepages are the Pod API's, no stricter: what its
  // Deployment refuses the App refuses, and what it takes the App takes.
  const deploymentTakes = (resources: unknown) => {
    const labels = { app: "resources-check" };
    const body = { metadata: { name: "resources-check" }, spec: { selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: "app", image: "nginx", resources }] } } } };
    return cluster().apps.createNamespacedDeployment({ namespace: "team-a", body: body as V1Deployment, dryRun: "All" }).then(() => true, () => false);
  };
  for (const [spec] of invalid.filter(([spec]) => /example\.com|hugepages-/.test(JSON.stringify(spec)))) assert.equal(await deploymentTakes(spec["resources"]), false, JSON.stringify(spec));
  const valid = [
    { requests: { "example.com/gpu": 2 }, limits: { "example.com/gpu": "2" } },
    { limits: { "example.com/gpu": 1 } },
    { requests: { memory: "1Gi", "hugepages-2Mi": "4Mi" }, limits: { "hugepages-2Mi": "4Mi" } },
    { limits: { cpu: "1", "hugepages-1Gi": "2Gi" } },
  ];
  for (const resources of valid) {
    assert.equal(await deploymentTakes(resources), true, JSON.stringify(resources));
    await workloads.create(app("fine", "team-a", { image: "nginx", resources }), { dryRun: true });
  }
});

test("a failing object goes Stalled with the engine's message while another still becomes Ready", async () => {
  // The API server refuses the Deployment (a quota of none): the engine's update fails.
  await cluster().core.createNamespace({ body: { metadata: { name: "capped" } } });
  await cluster().core.createNamespacedResourceQuota({ namespace: "capped", body: { metadata: { name: "no-deployments" }, spec: { hard: { "count/deployments.apps": "0" } } } });
  await workloads.create(app("refused", "capped", { image: "nginx:1.27", replicas: 2 }));
  await workloads.create(app("fine", "team-a", { image: "nginx:1.27", replicas: 1 }));
  const stalled = await workloads.condition("App", "capped", "refused", "Stalled", "True");
  const condition = stalled.status?.conditions?.find((c) => c.type === "Stalled");
  assert.equal(condition?.reason, "StackUpdateFailed");
  assert.match(condition?.message ?? "", /quota/);
  assert.equal(stalled.status?.conditions?.find((c) => c.type === "Ready")?.status, "False");
  assert.equal(stalled.status?.stack?.lastOperation?.result, "failed");
  assert.ok((stalled.status?.stack?.attempts ?? 0) >= 1);
  assert.ok(stalled.status?.stack?.nextRetryTime);
  await eventWithReason("capped", "refused", "StackUpdateFailed");
  await workloads.ready("App", "team-a", "fine");
});

/** Stalled FailedCreate within a minute, in the API server's words, for the generation it is at, read Failed by kstatus, with an Event. */
async function refusedByPodSecurity(namespace: string, name: string): Promise<void> {
  const started = Date.now();
  const stalled = await workloads.condition("App", namespace, name, "Stalled", "True", 60_000);
  assert.ok(Date.now() - started < 60_000);
  const { reason, message } = stalled.status!.conditions!.find((c) => c.type === "Stalled")!;
  assert.equal(reason, "FailedCreate");
  assert.match(message, new RegExp(`^the API server refuses the pods: pods "${name}-[a-z0-9]+-[a-z0-9]+" is forbidden: violates PodSecurity "restricted:latest": `));
  assert.equal(stalled.status!.observedGeneration, stalled.metadata.generation, "Stalled speaks for the current generation");
  assert.equal(kstatus(stalled).status, "Failed");
  assert.equal(argoHealth(stalled).status, "Degraded", "Argo CD's health check reads Failed as Degraded");
  await eventWithReason(namespace, name, "FailedCreate");
}

test("pods Pod Security refuses: Stalled FailedCreate within a minute in the API server's words, read Failed by kstatus, counted by appstack_stalled_objects; podSecurity Restricted makes the App Ready there", async () => {
  await cluster().core.createNamespace({ body: { metadata: { name: "hardened", labels: { "pod-security.kubernetes.io/enforce": "restricted" } } } });
  await workloads.create(app("rooted", "hardened", { image: "nginx:1.27", replicas: 2 }));
  await refusedByPodSecurity("hardened", "rooted");
  // The operator's /metrics counts it among the objects Stalled now (what the shipped alert AppstackObjectStalled reads), and stops once it is fixed.
  const stalledNow = async () => metricValue((await httpGet(`http://127.0.0.1:${operator!.healthPort}/metrics`)).body, "appstack_stalled_objects", { kind: "App", reason: "FailedCreate" });
  await eventually("appstack_stalled_objects to count the App", async () => ((await stalledNow()) === 1 ? true : undefined));
  // The fix a person makes: the pods meet restricted (kwok's nodes run any image as any user).
  await workloads.mergeSpec("App", "hardened", "rooted", { podSecurity: { profile: "Restricted", runAsUser: 10001 } });
  const ready = await workloads.ready("App", "hardened", "rooted");
  assert.equal(kstatus(ready).status, "Current");
  await eventually("appstack_stalled_objects to drop the App", async () => ((await stalledNow()) === undefined ? true : undefined));
  const pods = await podsOf("hardened", { "app.kubernetes.io/instance": "rooted" });
  assert.equal(pods.length, 2);
  for (const { spec } of pods) assert.deepEqual([spec!.securityContext!.runAsNonRoot, spec!.containers[0]!.securityContext!.allowPrivilegeEscalation], [true, false]);
});

test("a Memcached lists its pods in status.nodes", async () => {
  await workloads.create({ kind: "Memcached", metadata: { name: "cache", namespace: "team-b" }, spec: { size: 3 } });
  const ready = await eventually("status.nodes to list 3 pods", async () => {
    const object = (await workloads.ready("Memcached", "team-b", "cache")) as Memcached;
    return object.status?.nodes?.length === 3 ? object : undefined;
  });
  const live = await deployment("team-b", "cache");
  assert.equal(live.spec?.template.spec?.containers[0]?.image, "memcached:1.6");
  const pods = await podsOf("team-b", live.spec.selector.matchLabels!);
  assert.deepEqual(ready.status?.nodes, pods.map((p) => p.metadata!.name!).sort());
});

test("deleting an object destroys its Deployment, Service and stack", async () => {
  await workloads.delete("App", "team-a", "web");
  await workloads.gone("App", "team-a", "web");
  await assert.rejects(deployment("team-a", "web"), isNotFound);
  await assert.rejects(cluster().core.readNamespacedService({ name: "web", namespace: "team-a" }), isNotFound);
  assert.ok(!existsSync(stackFile(stackName("App", "team-a", "web"))));
  await eventWithReason("team-a", "web", "StackDestroyed");
  // The App of the same name in the other namespace is untouched.
  assert.equal((await deployment("team-b", "web")).status?.readyReplicas, 1);
});

test("after the API server restarts, the watches relist and no change is lost", async () => {
  await cluster().cluster.restartApiServer();
  // Made while the operator's watches are still reconnecting.
  await workloads.mergeSpec("App", "team-b", "twin-a", { replicas: 2 });
  await workloads.create(app("after-restart", "team-b", { image: "nginx:1.27", replicas: 1 }));
  const scaled = await workloads.ready("App", "team-b", "twin-a");
  assert.equal(scaled.status?.readyReplicas, 2);
  assert.equal((await deployment("team-b", "twin-a")).spec?.replicas, 2);
  await workloads.ready("App", "team-b", "after-restart");
});

test("deleting a namespace runs the finalizers of its objects and does not hang", async () => {
  await cluster().core.createNamespace({ body: { metadata: { name: "doomed" } } });
  await workloads.create(app("short-lived", "doomed", { image: "nginx:1.27", replicas: 1, port: 80 }));
  await workloads.ready("App", "doomed", "short-lived");
  await cluster().core.deleteNamespace({ name: "doomed" });
  await eventually("the namespace to be gone", async () => {
    try {
      await cluster().core.readNamespace({ name: "doomed" });
      return undefined;
    } catch (error) {
      return isNotFound(error) ? true : undefined;
    }
  }, 120_000);
  assert.ok(!existsSync(stackFile(stackName("App", "doomed", "short-lived"))));
});

/**
 * Every file below `dir`, as text. The operator is still at work while this reads (lock files,
 * backups and stack files come and go), so a file gone between the listing and its read is
 * skipped: it can hold nothing any more.
 */
function filesBelow(dir: string): { path: string; text: string }[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((relative) => join(dir, relative))
    .flatMap((path) => {
      try {
        return statSync(path).isFile() ? [{ path, text: readFileSync(path).toString("latin1") }] : [];
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
        throw error;
      }
    });
}

test("the passphrase appears in no log, status, Event or state file", async () => {
  const passphrase = "e2e-passphrase";
  // The operator logs at debug level here: the engines' own output is in it too.
  for (const { path, text } of filesBelow(operator!.stateDir).filter((f) => !f.path.includes(`${join("pulumi-home", "plugins")}`))) {
    assert.ok(!text.includes(passphrase), `the passphrase is in ${path}`);
  }
  const { CustomObjectsApi, KubeConfig } = await import("@kubernetes/client-node");
  const kc = new KubeConfig();
  kc.loadFromFile(cluster().cluster.kubeconfig);
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const plural of ["apps", "memcacheds"]) {
    const list: unknown = await custom.listClusterCustomObject({ group: "appstack.dev", version: "v1alpha1", plural });
    assert.ok(!JSON.stringify(list).includes(passphrase), `the passphrase is in the ${plural}`);
  }
  const events = await cluster().core.listEventForAllNamespaces({});
  assert.ok(events.items.length > 0);
  assert.ok(!JSON.stringify(events).includes(passphrase), "the passphrase is in an Event");
});
