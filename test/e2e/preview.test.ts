// Stack previews end to end: updatePolicy Preview in the cluster (preview, approve, stale approval)
// and `appstack preview -f` on the command line, with the real engine on a real API server. The
// point of a preview is that nothing happens: every step checks the cluster is untouched.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import { approveAnnotation, type App, type PreviewStatus } from "../../crds/types.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { eventually, eventWithReason, isNotFound, orUndefined, useCluster } from "../helpers/cluster.ts";
import { disposeOperator, previewCli, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

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
