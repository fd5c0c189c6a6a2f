// Stack previews end to end: updatePolicy Preview in the cluster (preview, approve, stale approval)
// and `appstack preview -f` on the command line, with the real engine on a real API server. The
// point of a preview is that nothing happens: every step checks the cluster is untouched. Here too:
// the status through every state as kstatus (Flux, kapply, Config Sync) reads it, a changed spec
// waiting for approval above all.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import { approveAnnotation, type Condition, type PreviewStatus } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { eventsOf, eventually, eventWithReason, isNotFound, orUndefined, useCluster } from "../helpers/cluster.ts";
import { denyWrites, holdWrites, type AdmissionRequest } from "../helpers/hold.ts";
import { kstatus, type KstatusStatus } from "../helpers/kstatus.ts";
import { argoHealth, expectedHealth } from "../helpers/argocd-health.ts";
import { disposeOperator, previewCli, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { mergePatch } from "../../operator/kube/clients.ts";

let operator: OperatorProcess | undefined;
let workloads: Workloads;
const namespace = "default";
const files = mkdtempSync(join(tmpdir(), "appstack-preview-test-"));
after(() => rmSync(files, { recursive: true, force: true }));

const cluster = useCluster(
  async ({ cluster: local }) => {
    operator = await startOperatorProcess(local.kubeconfig, { env: { APPSTACK_LEADER_ELECT: "false" } });
    workloads = new Workloads(local.kubeconfig);
  },
  () => disposeOperator(operator),
);

async function deployment(name: string): Promise<V1Deployment | undefined> {
  return orUndefined(() => cluster().apps.readNamespacedDeployment({ name, namespace }));
}

/** Waits for a preview other than `previous` (by plan id) and returns it. */
async function previewOf(name: string, previous?: string): Promise<{ app: App; preview: PreviewStatus }> {
  const { object, preview } = await workloads.previewOf("App", namespace, name, previous);
  return { app: object as App, preview };
}

function step(preview: PreviewStatus, type: string) {
  return preview.steps.find((s) => s.type === type);
}

async function approve(name: string, planId: string): Promise<void> {
  await workloads.approve("App", namespace, name, planId);
}

async function approvalRemoved(name: string): Promise<void> {
  await eventually(`the approval annotation of ${name} to be removed`, async () => {
    const app = await workloads.get("App", namespace, name);
    return app.metadata.annotations?.[approveAnnotation] === undefined ? true : undefined;
  });
}

test("updatePolicy Preview: a new App is previewed, and nothing is created until the plan is approved", async () => {
  await workloads.create({ kind: "App", metadata: { name: "gated", namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80, updatePolicy: "Preview" } });
  const { app, preview } = await previewOf("gated");
  assert.match(preview.planId, /^[0-9a-f]{12}$/);
  assert.equal(step(preview, "kubernetes:apps/v1:Deployment")?.step, "create");
  assert.equal(step(preview, "kubernetes:core/v1:Service")?.step, "create");
  assert.equal(preview.changes["create"], preview.steps.length);
  const ready = app.status?.conditions?.find((c) => c.type === "Ready");
  assert.equal(ready?.status, "False");
  assert.equal(ready?.reason, "AwaitingApproval");
  assert.match(ready?.message ?? "", new RegExp(`appstack.dev/approve=${preview.planId}`));
  await eventWithReason(cluster().core, namespace, "gated", "ChangesPending", (m) => m.includes(preview.planId));
  // The preview changed nothing: no Deployment, no Service, still none after the Event.
  assert.equal(await deployment("gated"), undefined);
  await assert.rejects(cluster().core.readNamespacedService({ name: "gated", namespace }), (error) => isNotFound(error));

  await approve("gated", preview.planId);
  const applied = (await workloads.ready("App", namespace, "gated")) as App;
  assert.equal(applied.status?.preview, undefined);
  assert.equal((await deployment("gated"))?.spec?.replicas, 1);
  await eventWithReason(cluster().core, namespace, "gated", "PlanApplied", (m) => m.includes(preview.planId));
  await approvalRemoved("gated");
});

test("updatePolicy Preview: a scale change is an update of spec.replicas that waits; a stale approval is refused; the fresh plan applies", async () => {
  await workloads.mergeSpec("App", namespace, "gated", { replicas: 3 });
  const { preview: scale } = await previewOf("gated");
  const deploymentStep = step(scale, "kubernetes:apps/v1:Deployment");
  assert.equal(deploymentStep?.step, "update");
  assert.deepEqual(deploymentStep?.paths, ["spec.replicas"]);
  assert.equal(step(scale, "kubernetes:core/v1:Service")?.step, "same");
  assert.deepEqual(scale.changes, { same: 3, update: 1 });
  assert.equal((await deployment("gated"))?.spec?.replicas, 1, "a preview must not scale the Deployment");

  // The image changes and the old plan is approved in the same write: that plan no longer
  // describes the spec, so it must not apply.
  await workloads.merge("App", namespace, "gated", { metadata: { annotations: { [approveAnnotation]: scale.planId } }, spec: { image: "nginx:1.28" } });
  await eventWithReason(cluster().core, namespace, "gated", "ApprovalRefused", (m) => m.includes(scale.planId));
  const { preview: fresh } = await previewOf("gated", scale.planId);
  assert.deepEqual(step(fresh, "kubernetes:apps/v1:Deployment")?.paths, ["spec.replicas", "spec.template.spec.containers[0].image"]);
  await approvalRemoved("gated");
  const untouched = await deployment("gated");
  assert.equal(untouched?.spec?.replicas, 1);
  assert.equal(untouched?.spec?.template.spec?.containers[0]?.image, "nginx:1.27");

  // An id that is not the waiting plan is refused too, and the waiting plan stays.
  await approve("gated", "0123456789ab");
  await eventWithReason(cluster().core, namespace, "gated", "ApprovalRefused", (m) => m.includes("0123456789ab"));
  await approvalRemoved("gated");
  assert.equal(((await workloads.get("App", namespace, "gated")) as App).status?.preview?.planId, fresh.planId);

  await approve("gated", fresh.planId);
  await workloads.ready("App", namespace, "gated");
  const live = await deployment("gated");
  assert.equal(live?.spec?.replicas, 3);
  assert.equal(live?.spec?.template.spec?.containers[0]?.image, "nginx:1.28");
});

test("updatePolicy Preview: a Deployment deleted out of band is previewed as a create, and comes back only when approved", async () => {
  await cluster().apps.deleteNamespacedDeployment({ name: "gated", namespace });
  const { preview } = await previewOf("gated", ((await workloads.get("App", namespace, "gated")) as App).status?.preview?.planId);
  assert.equal(preview.reason, "drift: Deployment gated: missing");
  assert.equal(step(preview, "kubernetes:apps/v1:Deployment")?.step, "create");
  assert.equal(step(preview, "kubernetes:core/v1:Service")?.step, "same");
  assert.equal(await deployment("gated"), undefined, "drift under Preview is not repaired without approval");

  await approve("gated", preview.planId);
  await workloads.ready("App", namespace, "gated");
  assert.equal((await deployment("gated"))?.spec?.replicas, 3);
});

function conditionOf(app: App, type: Condition["type"]): Condition | undefined {
  return app.status?.conditions?.find((c) => c.type === type);
}

/**
 * kstatus reads `app` (as the API server returned it) as `status`, with `observedGeneration`
 * applied; Argo CD's health check (deploy/argocd/health.lua) reads the same object as the same state.
 */
function readsAs(app: App, status: KstatusStatus, observedGeneration: number, state: string): void {
  const reading = kstatus(app);
  const conditions = (app.status?.conditions ?? []).map((c) => `${c.type}=${c.status} ${c.reason}`).join(", ");
  assert.equal(reading.status, status, `${state}: kstatus read ${reading.status} (${reading.message}); generation ${app.metadata.generation}; ${conditions}`);
  assert.equal(app.status?.observedGeneration, observedGeneration, `${state}: observedGeneration`);
  argoReadsAsKstatus(app, status, state);
}

/** Argo CD's health check reads `app` as kstatus's `status` maps to (docs/monitoring.md). */
function argoReadsAsKstatus(app: App, status: KstatusStatus, state: string): void {
  const health = argoHealth(app);
  assert.equal(health.status, expectedHealth(app, status), `${state}: the Argo CD health check read ${health.status} (${health.message}) where kstatus read ${status}`);
}


async function getApp(name: string): Promise<App> {
  return (await workloads.get("App", namespace, name)) as App;
}

async function readyApp(name: string): Promise<App> {
  return (await workloads.ready("App", namespace, name)) as App;
}

/** The App as it reads while the engine's next write to its Deployment is held; the write goes on after. */
async function whileEngineWriteHeld(name: string, change: () => Promise<unknown>): Promise<App> {
  const hold = await holdWrites(cluster().cluster, "deployments", "UPDATE", namespace, name, /^appstack$/);
  try {
    await change();
    await hold.held;
    return await getApp(name);
  } finally {
    await hold.release();
  }
}

async function imageOf(name: string): Promise<string | undefined> {
  return (await deployment(name))?.spec?.template.spec?.containers[0]?.image;
}

async function scaleDeployment(name: string, replicas: number): Promise<void> {
  await cluster().apps.patchNamespacedDeployment({ name, namespace, body: { spec: { replicas } } }, mergePatch);
}

test("status as kstatus reads it: InProgress while anything is pending, Current once applied and Ready, Failed when Stalled; observedGeneration is the applied generation", async () => {
  const name = "kstatus";
  // New: before the operator has written anything, observedGeneration is the schema's default 0.
  const created = (await workloads.create({ kind: "App", metadata: { name, namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } })) as App;
  readsAs(created, "InProgress", 0, "new");
  readsAs(await readyApp(name), "Current", 1, "applied");

  // Changed: while the engine's write is held, generation 2 is being applied, not applied.
  const changing = await whileEngineWriteHeld(name, () => workloads.mergeSpec("App", namespace, name, { image: "nginx:1.28" }));
  assert.equal(conditionOf(changing, "Reconciling")?.reason, "Applying");
  readsAs(changing, "InProgress", 1, "changed, being applied");
  readsAs(await readyApp(name), "Current", 2, "changed, applied");

  // Drifted: in progress until the repair is written.
  const repairing = await whileEngineWriteHeld(name, () => scaleDeployment(name, 3));
  assert.equal(conditionOf(repairing, "Reconciling")?.reason, "RepairingDrift");
  readsAs(repairing, "InProgress", 2, "drifted, being repaired");
  readsAs(await readyApp(name), "Current", 2, "repaired");

  // Awaiting approval: generation 4 is not applied, and nothing says it is.
  await workloads.mergeSpec("App", namespace, name, { updatePolicy: "Preview" });
  readsAs(await readyApp(name), "Current", 3, "updatePolicy Preview, nothing to apply");
  await workloads.mergeSpec("App", namespace, name, { image: "nginx:1.29" });
  const { app: awaiting, preview } = await previewOf(name);
  assert.equal(awaiting.metadata.generation, 4);
  assert.equal(conditionOf(awaiting, "Ready")?.reason, "AwaitingApproval");
  assert.equal(conditionOf(awaiting, "Ready")?.observedGeneration, 4, "the conditions speak for the current generation");
  readsAs(awaiting, "InProgress", 3, "awaiting approval");
  assert.equal(await imageOf(name), "nginx:1.28");

  // Approved: in progress until the plan is applied and rolled out.
  readsAs(await whileEngineWriteHeld(name, () => approve(name, preview.planId)), "InProgress", 3, "approved, being applied");
  readsAs(await readyApp(name), "Current", 4, "approved, applied");
  assert.equal(await imageOf(name), "nginx:1.29");

  // Drifted under Preview: the spec stays applied; the repair waits for approval (Ready False).
  await scaleDeployment(name, 2);
  const { app: drifted, preview: repair } = await previewOf(name, preview.planId);
  assert.match(repair.reason, /^drift: /);
  readsAs(drifted, "InProgress", 4, "drifted, repair awaiting approval");
  await approve(name, repair.planId);
  readsAs(await readyApp(name), "Current", 4, "drift repaired");

  // Unschedulable: applied, but the rollout waits on a pod no node can take.
  await workloads.mergeSpec("App", namespace, name, { updatePolicy: "Auto", resources: { requests: { memory: "1Ti" } } });
  const unschedulable = await eventually("Ready=False Unschedulable", async () => {
    const app = await getApp(name);
    return conditionOf(app, "Ready")?.reason === "Unschedulable" ? app : undefined;
  });
  readsAs(unschedulable, "InProgress", 5, "unschedulable");
  await workloads.mergeSpec("App", namespace, name, { resources: null });
  readsAs(await readyApp(name), "Current", 6, "schedulable again");

  // Conflict: Stalled, for the generation that cannot be applied.
  const taken = "kstatus-taken";
  const template = { metadata: { labels: { app: taken } }, spec: { containers: [{ name: "c", image: "nginx" }] } };
  await cluster().apps.createNamespacedDeployment({ namespace, body: { metadata: { name: taken }, spec: { selector: { matchLabels: { app: taken } }, template } } });
  await workloads.create({ kind: "App", metadata: { name: taken, namespace }, spec: { image: "nginx:1.27" } });
  const conflicted = (await workloads.condition("App", namespace, taken, "Stalled", "True")) as App;
  assert.equal(conditionOf(conflicted, "Stalled")?.reason, "ResourceConflict");
  readsAs(conflicted, "Failed", 1, "conflict");
  await workloads.delete("App", namespace, taken);
  await workloads.gone("App", namespace, taken);
  await cluster().apps.deleteNamespacedDeployment({ name: taken, namespace });
});

test("a destroy that fails is Stalled with the engine's words and a Warning Event, not Deleting for ever, and is retried", async () => {
  const name = "kstatus";
  const denial = await denyWrites(cluster().cluster, "deployments", "DELETE", namespace, name, { message: "kept by the test" });
  try {
    await workloads.delete("App", namespace, name);
    // kstatus reads any object being deleted as Terminating, before its conditions; Argo CD's check, Progressing.
    const deleting = await getApp(name);
    assert.equal(kstatus(deleting).status, "Terminating");
    argoReadsAsKstatus(deleting, "Terminating", "being deleted");
    await denial.denied;
    const stalled = await eventually("Stalled=True", async () => {
      const app = await getApp(name);
      return conditionOf(app, "Stalled")?.status === "True" ? app : undefined;
    });
    const why = conditionOf(stalled, "Stalled");
    assert.equal(why?.reason, "DestroyFailed");
    assert.match(why?.message ?? "", /kept by the test/);
    assert.equal(conditionOf(stalled, "Reconciling")?.status, "False");
    assert.deepEqual([stalled.status?.stack?.lastOperation?.kind, stalled.status?.stack?.lastOperation?.result], ["destroy", "failed"]);
    assert.ok(stalled.status?.stack?.nextRetryTime);
    assert.equal(kstatus(stalled).status, "Terminating");
    argoReadsAsKstatus(stalled, "Terminating", "being deleted, destroy failed");
    await eventWithReason(cluster().core, namespace, name, "DestroyFailed", (m) => /kept by the test/.test(m));
  } finally {
    await denial.remove();
  }
  await workloads.gone("App", namespace, name);
  assert.equal(await deployment(name), undefined);
});

test("an approved plan applied whose approval the API server would not remove: Ready, the approval removed on the next pass, never ReconcileFailed nor ApprovalRefused", async () => {
  const name = "approval-kept";
  await workloads.create({ kind: "App", metadata: { name, namespace }, spec: { image: "nginx:1.27", replicas: 1, updatePolicy: "Preview" } });
  const { preview } = await previewOf(name);
  // The operator's removal of the approval (there before the write, gone after) is refused once.
  const removing = (request: AdmissionRequest) => request.oldObject?.metadata?.annotations?.[approveAnnotation] !== undefined && request.object?.metadata?.annotations?.[approveAnnotation] === undefined;
  const denial = await denyWrites(cluster().cluster, "apps", "UPDATE", namespace, name, { when: removing, times: 1 });
  try {
    await approve(name, preview.planId);
    await denial.denied;
    await approvalRemoved(name);
  } finally {
    await denial.remove();
  }
  const applied = await readyApp(name);
  const reasons = (await eventsOf(cluster().core, namespace, name)).map((e) => e.reason);
  assert.ok(!reasons.includes("ReconcileFailed") && !reasons.includes("ApprovalRefused"), `Events: ${reasons.join(", ")}`);
  await eventWithReason(cluster().core, namespace, name, "PlanApplied", (m) => m.includes(preview.planId));
  assert.equal(applied.status?.stack?.appliedPlan, preview.planId);
  assert.equal(applied.status?.stack?.attempts, 0);
});

function previewCliOf(objects: object[], ...flags: string[]) {
  return previewCli({ kubeconfig: cluster().cluster.kubeconfig, stateDir: operator!.stateDir, scratch: files }, objects, ...flags);
}

const appObject = (name: string, spec: Record<string, unknown>) => ({ apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name, namespace }, spec });

test("appstack preview -f: exit 2 and the diff for a scale change, 0 for no change, 1 for an invalid object; nothing changes", async () => {
  await workloads.create({ kind: "App", metadata: { name: "cli", namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
  const before = await workloads.ready("App", namespace, "cli");

  const scaled = previewCliOf([appObject("cli", { image: "nginx:1.27", replicas: 4 })]);
  assert.equal(scaled.status, 2, scaled.stderr);
  assert.match(scaled.stdout, /~ kubernetes:apps\/v1:Deployment: \(update\)/);
  assert.match(scaled.stdout, /replicas: 1 => 4/);

  const data = previewCliOf([appObject("cli", { image: "nginx:1.28", replicas: 1 })], "--json");
  assert.equal(data.status, 2, data.stderr);
  const parsed = JSON.parse(data.stdout) as { changes: boolean; objects: { new: boolean; steps: PreviewStatus["steps"]; changes: Record<string, number> }[] };
  assert.equal(parsed.changes, true);
  assert.equal(parsed.objects[0]?.new, false);
  assert.deepEqual(parsed.objects[0]?.steps.find((s) => s.type === "kubernetes:apps/v1:Deployment")?.paths, ["spec.template.spec.containers[0].image"]);

  // The live spec again: Pulumi has nothing to do.
  const same = previewCliOf([appObject("cli", { image: "nginx:1.27", replicas: 1 })]);
  assert.equal(same.status, 0, same.stdout + same.stderr);

  const invalid = previewCliOf([appObject("cli", { image: "nginx:1.27", replicas: -1 })]);
  assert.equal(invalid.status, 1);
  assert.match(invalid.stderr, /spec\.replicas.*greater than or equal to 0/);

  // None of it reached the cluster: the object, its Deployment and the stack are as they were.
  const after = await workloads.get("App", namespace, "cli");
  assert.equal(after.metadata.generation, before.metadata.generation);
  const live = await deployment("cli");
  assert.equal(live?.spec?.replicas, 1);
  assert.equal(live?.spec?.template.spec?.containers[0]?.image, "nginx:1.27");
});

test("appstack preview -f: a new object previews as creates without creating the object, its children or its stack", async () => {
  const result = previewCliOf([appObject("unborn", { image: "nginx:1.27", port: 8080 }), { apiVersion: "appstack.dev/v1alpha1", kind: "Memcached", metadata: { name: "unborn-cache", namespace }, spec: { size: 2 } }], "--json");
  assert.equal(result.status, 2, result.stderr);
  const parsed = JSON.parse(result.stdout) as { objects: { kind: string; new: boolean; steps: PreviewStatus["steps"] }[] };
  assert.deepEqual(parsed.objects.map((o) => [o.kind, o.new]), [["App", true], ["Memcached", true]]);
  for (const object of parsed.objects) {
    assert.deepEqual(new Set(object.steps.map((s) => s.step)), new Set(["create"]));
    assert.ok(object.steps.some((s) => s.type === "kubernetes:apps/v1:Deployment"));
  }
  await assert.rejects(workloads.get("App", namespace, "unborn"), (error) => isNotFound(error));
  await assert.rejects(workloads.get("Memcached", namespace, "unborn-cache"), (error) => isNotFound(error));
  assert.equal(await deployment("unborn"), undefined);
  const stacks = join(operator!.stateDir, "backend", ".pulumi", "stacks", "appstack");
  assert.equal(existsSync(join(stacks, `${stackName("App", namespace, "unborn")}.json`)), false);
  assert.equal(existsSync(join(stacks, `${stackName("Memcached", namespace, "unborn-cache")}.json`)), false);
});

test("appstack preview -f with a state folder no operator has used: every object is new, and no folder or passphrase file appears", () => {
  const unused = join(files, "state-never-used");
  const result = previewCli({ kubeconfig: cluster().cluster.kubeconfig, stateDir: unused, scratch: files }, [appObject("fresh-eyes", { image: "nginx:1.27" })], "--json");
  assert.equal(result.status, 2, result.stderr);
  assert.deepEqual((JSON.parse(result.stdout) as { objects: { new: boolean }[] }).objects.map((o) => o.new), [true]);
  assert.equal(existsSync(unused), false, "the preview created the state folder");
});
