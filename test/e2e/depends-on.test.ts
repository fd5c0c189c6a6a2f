// spec.dependsOn end to end, on one local cluster with the operator and the real engine: an App that
// depends on a Memcached waits (its status names the wait; the API server has no Deployment for it
// and its stack records nothing) until the Memcached is Ready for its generation, then is applied,
// queued by the Memcached's change (the resync is 600 s: no polling gets it there in time). The
// Memcached is held back deterministically by spec.suspend, never by timing. Drift repair does not
// wait; a cycle is Stalled on each object in it, with an Event; a self-reference is refused.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import type { Condition, Workload, WorkloadKind } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import { mergePatch } from "../../operator/kube/clients.ts";
import { eventually, eventWithReason, orUndefined, useCluster } from "../helpers/cluster.ts";
import { kstatus } from "../helpers/kstatus.ts";
import { appstackCli, checkpointPath, disposeOperator, stackHistoryEntries, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

const namespace = "default";

let operator: OperatorProcess | undefined;
let workloads: Workloads;
const cluster = useCluster(
  async ({ cluster: local }) => {
    operator = await startOperatorProcess(local.kubeconfig, { env: { APPSTACK_LEADER_ELECT: "false" } });
    workloads = new Workloads(local.kubeconfig);
  },
  () => disposeOperator(operator),
);

const ready = (object: Workload): Condition | undefined => object.status?.conditions?.find((c) => c.type === "Ready");
const statusOf = (object: Workload, type: Condition["type"]) => object.status?.conditions?.find((c) => c.type === type)?.status;

/** The object once its Ready condition speaks for its current generation and `matches`. */
async function readyWhere(kind: WorkloadKind, name: string, what: string, matches: (condition: Condition) => boolean): Promise<Workload> {
  return eventually(`${kind} ${name}: ${what}`, async () => {
    const object = await workloads.get(kind, namespace, name);
    const condition = ready(object);
    return condition && condition.observedGeneration === object.metadata.generation && matches(condition) ? object : undefined;
  });
}

async function deployment(name: string): Promise<V1Deployment | undefined> {
  return orUndefined(() => cluster().apps.readNamespacedDeployment({ name, namespace }));
}

/** The resource types the object's stack records, as the checkpoint in the state folder has them (none before its first update). */
function stackResources(kind: WorkloadKind, name: string): string[] {
  const path = checkpointPath(operator!.stateDir, kind, namespace, name);
  if (!existsSync(path)) return [];
  const file = JSON.parse(readFileSync(path, "utf8")) as { checkpoint: { latest?: { resources?: { type: string }[] } } };
  return (file.checkpoint.latest?.resources ?? []).map((resource) => resource.type);
}

/** Nothing of `name` applied: no Deployment on the API server, no update and no resources in its stack. */
async function nothingApplied(kind: WorkloadKind, name: string): Promise<void> {
  assert.equal(await deployment(name), undefined, `no Deployment ${name}`);
  assert.deepEqual(stackResources(kind, name), [], `the stack of ${kind} ${name} records no resources`);
  assert.equal(stackHistoryEntries(operator!.stateDir, kind, namespace, name).length, 0, `no update of ${kind} ${name}'s stack`);
}

test("an object that names itself in dependsOn is refused by the API server", async () => {
  await assert.rejects(
    workloads.create({ kind: "App", metadata: { name: "narcissus", namespace }, spec: { image: "nginx:1.27", replicas: 1, dependsOn: [{ kind: "App", name: "narcissus" }] } }, { dryRun: true }),
    (error: Error) => /an object cannot wait for itself/.test(error.message),
  );
  // An App and a Memcached of one name are two objects.
  await workloads.create({ kind: "App", metadata: { name: "twin", namespace }, spec: { image: "nginx:1.27", replicas: 1, dependsOn: [{ kind: "Memcached", name: "twin" }] } }, { dryRun: true });
});

test("a dependency that does not exist: the App waits, its status says so (InProgress to kstatus); nothing is created", async () => {
  await workloads.create({ kind: "App", metadata: { name: "web", namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80, dependsOn: [{ kind: "Memcached", name: "cache" }] } });
  const waiting = await readyWhere("App", "web", "waiting for a missing Memcached", (c) => c.reason === "DependencyNotReady" && c.message === "waiting for Memcached/cache: it does not exist; held back: never applied");
  assert.deepEqual([statusOf(waiting, "Ready"), statusOf(waiting, "Reconciling"), statusOf(waiting, "Stalled")], ["False", "True", "False"]);
  assert.equal(waiting.status?.observedGeneration, 0);
  assert.equal(kstatus(waiting).status, "InProgress");
  await nothingApplied("App", "web");
});

test("its dependency created but held back (suspended, never applied): the App is queued by the creation and waits for it by generation", async () => {
  await workloads.create({ kind: "Memcached", metadata: { name: "cache", namespace }, spec: { size: 1, suspend: true } });
  await readyWhere("Memcached", "cache", "held back", (c) => c.status === "False" && c.reason === "Suspended");
  const waiting = await readyWhere("App", "web", "waiting for the suspended Memcached", (c) => c.reason === "DependencyNotReady" && /^waiting for Memcached\/cache: not Ready for generation 1 \(Suspended\)/.test(c.message));
  assert.equal(kstatus(waiting).status, "InProgress");
  await eventWithReason(cluster().core, namespace, "web", "DependencyNotReady", (message) => message.startsWith("waiting for Memcached/cache"));
  await nothingApplied("App", "web");
  await nothingApplied("Memcached", "cache");
});

test("`appstack reconcile` of the held App answers at once, naming the dependency, instead of waiting out its deadline", async () => {
  // --timeout=1h: were the request not answered, the command would outlive the test's own deadline.
  const result = await appstackCli(cluster().cluster.kubeconfig, "reconcile", "app/web", "-n", namespace, "--timeout=1h");
  assert.equal(result.status, 1, result.stderr);
  assert.match(result.stderr, /app\/web in namespace default: held back by spec\.dependsOn \(DependencyNotReady\): waiting for Memcached\/cache: not Ready for generation 1 \(Suspended\)/);
  assert.doesNotMatch(result.stderr, /deadline/);
});

test("once the Memcached is resumed and Ready, the App is applied and goes Ready: its Deployment on the API server, its resources in its stack", async () => {
  await workloads.mergeSpec("Memcached", namespace, "cache", { suspend: false });
  const cache = await workloads.ready("Memcached", namespace, "cache");
  const web = (await workloads.ready("App", namespace, "web", 60_000)) as App;
  assert.equal(ready(web)?.reason, "Available");
  assert.equal(kstatus(web).status, "Current");
  // Applied after the Memcached was Ready, never before.
  assert.ok(Date.parse(web.status!.history![0]!.startTime) >= Date.parse(ready(cache)!.lastTransitionTime), "the App's first up started once the Memcached was Ready");
  assert.deepEqual(web.status?.history?.map((entry) => [entry.kind, entry.result, entry.update?.why]), [["up", "succeeded", "created"]]);
  assert.equal((await deployment("web"))?.spec?.template.spec?.containers[0]?.image, "nginx:1.27");
  const types = stackResources("App", "web");
  assert.ok(types.includes("kubernetes:apps/v1:Deployment") && types.includes("kubernetes:core/v1:Service"), `the stack records the children: ${types.join(", ")}`);
});

test("a dependency not Ready holds a new spec, not the repair of drift; the held spec is applied once it is Ready", async () => {
  // A Memcached spec change held back by suspend: not Ready for its new generation, deterministically.
  await workloads.mergeSpec("Memcached", namespace, "cache", { suspend: true, size: 2 });
  const cache = await readyWhere("Memcached", "cache", "the change held back", (c) => c.status === "False" && c.reason === "Suspended");
  // Drift on the App: repaired although its dependency is not Ready (what was applied is put back).
  await cluster().apps.patchNamespacedDeployment({ name: "web", namespace, body: { spec: { replicas: 3 } } }, mergePatch);
  await eventually("the drift repaired", async () => {
    const app = await workloads.get("App", namespace, "web");
    return app.status?.history?.at(-1)?.update?.why === "drift" && (await deployment("web"))?.spec?.replicas === 1 ? true : undefined;
  });
  // A new spec of the App waits.
  await workloads.mergeSpec("App", namespace, "web", { image: "nginx:1.28" });
  const held = await readyWhere("App", "web", "the new image held", (c) => c.reason === "DependencyNotReady");
  assert.equal(ready(held)?.message, `waiting for Memcached/cache: not Ready for generation ${cache.metadata.generation} (Suspended); held back: spec changed (generation 1 -> 2)`);
  assert.equal(held.status?.observedGeneration, 1);
  assert.equal(kstatus(held).status, "InProgress");
  assert.equal((await deployment("web"))?.spec?.template.spec?.containers[0]?.image, "nginx:1.27", "the new image is not applied");
  await workloads.mergeSpec("Memcached", namespace, "cache", { suspend: false });
  const applied = (await workloads.ready("App", namespace, "web", 60_000)) as App;
  assert.deepEqual(applied.status?.history?.at(-1)?.update?.why, "spec");
  assert.equal((await deployment("web"))?.spec?.template.spec?.containers[0]?.image, "nginx:1.28");
});

test("a cycle (a dependsOn b, b dependsOn a): each is Stalled naming the cycle, with a Warning Event; nothing is created", async () => {
  await workloads.create({ kind: "App", metadata: { name: "a", namespace }, spec: { image: "nginx:1.27", replicas: 1, dependsOn: [{ kind: "App", name: "b" }] } });
  await workloads.create({ kind: "App", metadata: { name: "b", namespace }, spec: { image: "nginx:1.27", replicas: 1, dependsOn: [{ kind: "App", name: "a" }] } });
  for (const [name, other] of [["a", "b"], ["b", "a"]] as const) {
    const stalled = await readyWhere("App", name, "the cycle reported", (c) => c.reason === "DependencyCycle");
    const cycle = `App/${name} -> App/${other} -> App/${name}`;
    assert.equal(stalled.status?.conditions?.find((c) => c.type === "Stalled")?.message, `spec.dependsOn makes a cycle: ${cycle}; nothing is applied until a dependsOn along it is removed`);
    assert.equal(statusOf(stalled, "Ready"), "False");
    await eventWithReason(cluster().core, namespace, name, "DependencyCycle", (message) => message.includes(cycle));
    await nothingApplied("App", name);
  }
});

test("the cycle broken (b's dependsOn removed): b is applied, then a, queued by b's readiness", async () => {
  await workloads.mergeSpec("App", namespace, "b", { dependsOn: null });
  const b = await workloads.ready("App", namespace, "b", 60_000);
  const a = (await workloads.ready("App", namespace, "a", 60_000)) as App;
  assert.ok(Date.parse(a.status!.history![0]!.startTime) >= Date.parse(ready(b)!.lastTransitionTime), "a's first up started once b was Ready");
  assert.ok(await deployment("a"), "a's Deployment exists");
});
