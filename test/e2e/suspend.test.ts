// spec.suspend, spec.deletionPolicy and "reconcile now" end to end, on one local cluster with the
// operator and the real engine: what a suspended App holds back (read from the API server: its
// Deployment; and from the stack state: its history), how its status reads (to kstatus too), what
// resuming applies, what a reconcile request runs, and what a deletion leaves: a suspended App's or
// one with deletionPolicy Orphan leaves its children, without appstack's marks; the default
// destroys them. The verbs are run as a person runs them: `kubectl appstack suspend|resume|reconcile`.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import { reconcileRequestAnnotation, type Condition } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import { installPluginBin } from "../../operator/cmd/plugin-bin.ts";
import { mergePatch } from "../../operator/kube/clients.ts";
import { eventually, eventWithReason, isNotFound, orUndefined, useCluster } from "../helpers/cluster.ts";
import { kstatus } from "../helpers/kstatus.ts";
import { argoHealth, expectedHealth } from "../helpers/argocd-health.ts";
import { httpGet } from "../helpers/http.ts";
import { assertOrphaned } from "../helpers/orphaned.ts";
import { checkpointPath, disposeOperator, kubectlAppstack, metricValue, stackHistoryEntries, stackHistoryFolder, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

const namespace = "default";
const name = "web";
const scratch = mkdtempSync(join(tmpdir(), "appstack-suspend-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));
const pluginBin = installPluginBin(join(scratch, "bin"));

let operator: OperatorProcess | undefined;
let workloads: Workloads;
const cluster = useCluster(
  async ({ cluster: local }) => {
    operator = await startOperatorProcess(local.kubeconfig, { env: { APPSTACK_LEADER_ELECT: "false" } });
    workloads = new Workloads(local.kubeconfig);
  },
  () => disposeOperator(operator),
);

const appstack = (...args: string[]) => kubectlAppstack({ kubeconfig: cluster().cluster.kubeconfig, pluginBin }, ...args);

async function getApp(): Promise<App> {
  return (await workloads.get("App", namespace, name)) as App;
}

async function deployment(): Promise<V1Deployment | undefined> {
  return orUndefined(() => cluster().apps.readNamespacedDeployment({ name, namespace }));
}

const ready = (app: App): Condition | undefined => app.status?.conditions?.find((c) => c.type === "Ready");

/** The App once its Ready condition speaks for its current generation and `matches`. */
async function readyWhere(what: string, matches: (condition: Condition, app: App) => boolean): Promise<App> {
  return eventually(what, async () => {
    const app = await getApp();
    const condition = ready(app);
    return condition && condition.observedGeneration === app.metadata.generation && matches(condition, app) ? app : undefined;
  });
}

/** Updates the engine has run on the App's stack, as Pulumi's own history in the state folder has them. */
const engineUpdates = (of = name) => stackHistoryEntries(operator!.stateDir, "App", namespace, of).length;

/** The Deployment's image and replicas, as the API server has them. */
async function liveSpec(): Promise<[string | undefined, number | undefined]> {
  const live = await deployment();
  return [live?.spec?.template.spec?.containers[0]?.image, live?.spec?.replicas];
}

/** The App's last operation in status.history: kind, result, why and generation. */
function lastOperation(app: App): unknown[] {
  const last = app.status?.history?.at(-1);
  return [last?.kind, last?.result, last?.update?.why, last?.update?.generation];
}

const statusOf = (app: App, type: Condition["type"]) => app.status?.conditions?.find((c) => c.type === type)?.status;

/** What the suspended part below started from: the applied generation, the updates in the stack and in status.history. */
let applied: { generation: number; engineUpdates: number; history: number };

test("suspending an applied App changes nothing it applies: still applied, Ready=True with reason Suspended, Current to kstatus", async () => {
  await workloads.create({ kind: "App", metadata: { name, namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
  const created = (await workloads.ready("App", namespace, name)) as App;
  await workloads.mergeSpec("App", namespace, name, { suspend: true });
  const resting = await readyWhere("Ready=True Suspended", (c) => c.status === "True" && c.reason === "Suspended");
  assert.equal(resting.status?.observedGeneration, resting.metadata.generation);
  assert.equal(kstatus(resting).status, "Current");
  // Argo CD's health check: Suspended, whatever kstatus reads (docs/monitoring.md).
  assert.equal(argoHealth(resting).status, "Suspended");
  assert.equal(expectedHealth(resting, "Current"), "Suspended");
  assert.equal(resting.status?.history?.length, created.status?.history?.length, "no update for it");
  applied = { generation: resting.metadata.generation!, engineUpdates: engineUpdates(), history: resting.status!.history!.length };
});

test("suspended: a hand edit of the Deployment is reported as drift (Ready=False Suspended, `appstack status` DRIFTED), not repaired", async () => {
  await cluster().apps.patchNamespacedDeployment({ name, namespace, body: { spec: { replicas: 3 } } }, mergePatch);
  const drifted = await readyWhere("the drift reported", (c) => c.status === "False" && c.reason === "Suspended" && /drift: Deployment web: spec\.replicas: 3, want 1/.test(c.message));
  assert.equal(kstatus(drifted).status, "InProgress");
  assert.equal(argoHealth(drifted).status, "Suspended");
  const status = appstack("status", "-n", namespace, "-o", "json");
  assert.equal(status.status, 0, "suspended drift alone needs no person");
  const listed = JSON.parse(status.stdout) as { name: string; reason: string; drifted: string[]; suspended: boolean }[];
  assert.deepEqual(listed.map((s) => [s.name, s.reason, s.drifted, s.suspended]), [[name, "Suspended", ["Deployment web: spec.replicas"], true]]);
  assert.deepEqual(await liveSpec(), ["nginx:1.27", 3]);
});

test("suspended: a spec change is held back: the Deployment unchanged, no new update in the stack, observedGeneration behind, InProgress to kstatus", async () => {
  await workloads.mergeSpec("App", namespace, name, { image: "nginx:1.28" });
  const held = await readyWhere("the spec change held back", (c) => /held back: spec changed/.test(c.message));
  assert.equal(held.status?.observedGeneration, applied.generation, "the new generation is not applied");
  assert.equal(kstatus(held).status, "InProgress");
  assert.deepEqual(argoHealth(held), { status: "Suspended", message: ready(held)?.message });
  assert.deepEqual([statusOf(held, "Ready"), statusOf(held, "Reconciling"), statusOf(held, "Stalled")], ["False", "False", "False"]);
  assert.deepEqual(await liveSpec(), ["nginx:1.27", 3], "nothing applied, nothing repaired");
  assert.equal(engineUpdates(), applied.engineUpdates, "the stack records no new update");
  assert.equal(held.status?.history?.length, applied.history);
});

test("`kubectl appstack resume` applies the held-back change and repairs the drift", async () => {
  const resumed = appstack("resume", `app/${name}`, "-n", namespace);
  assert.equal(resumed.status, 0, resumed.stderr);
  const now = (await workloads.ready("App", namespace, name)) as App;
  assert.equal(ready(now)?.reason, "Available");
  assert.deepEqual([kstatus(now).status, argoHealth(now).status], ["Current", "Healthy"]);
  await eventually("the Deployment as the spec says", async () => ((await liveSpec()).join() === "nginx:1.28,1" ? true : undefined));
  assert.deepEqual(lastOperation(now), ["up", "succeeded", "spec", now.metadata.generation]);
  assert.ok(engineUpdates() > applied.engineUpdates);
});

test("reconcile now: the annotation runs a refresh and an up with nothing to change; status.lastHandledReconcileAt records its value", async () => {
  const before = (await getApp()).status!.history!.length;
  const updatesBefore = engineUpdates();
  await workloads.merge("App", namespace, name, { metadata: { annotations: { [reconcileRequestAnnotation]: "by-annotation" } } });
  const handled = await eventually("the request handled", async () => {
    const app = await getApp();
    return app.status?.lastHandledReconcileAt === "by-annotation" ? app : undefined;
  });
  assert.equal(handled.status?.history?.length, before + 1);
  assert.deepEqual(lastOperation(handled), ["up", "succeeded", "requested", handled.metadata.generation]);
  assert.equal(engineUpdates(), updatesBefore + 1);
});

test("`kubectl appstack reconcile` sets the annotation, waits for it to be handled and exits 0 once Ready", async () => {
  const before = (await getApp()).status!.history!.length;
  const result = appstack("reconcile", `app/${name}`, "-n", namespace, "--timeout=90s");
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stderr, /Ready: /);
  const after = await getApp();
  assert.equal(after.status?.lastHandledReconcileAt, after.metadata.annotations?.[reconcileRequestAnnotation]);
  assert.notEqual(after.status?.lastHandledReconcileAt, "by-annotation");
  assert.equal(after.status?.history?.length, before + 1);
  assert.deepEqual(lastOperation(after).slice(0, 3), ["up", "succeeded", "requested"]);
});

test("suspended: a reconcile request waits unhandled, and `kubectl appstack reconcile` refuses", async () => {
  const suspended = appstack("suspend", `app/${name}`, "-n", namespace);
  assert.equal(suspended.status, 0, suspended.stderr);
  const before = await getApp();
  assert.equal(before.spec.suspend, true);
  // The request and a spec change in one write: once the change is reported held back, the request has been seen too.
  await workloads.merge("App", namespace, name, { metadata: { annotations: { [reconcileRequestAnnotation]: "while-suspended" } }, spec: { replicas: 2 } });
  const seen = await readyWhere("the spec change held back", (c) => c.reason === "Suspended" && /held back: spec changed/.test(c.message));
  assert.equal(seen.status?.lastHandledReconcileAt, before.status?.lastHandledReconcileAt, "not handled while suspended");
  assert.equal(seen.status?.history?.length, before.status?.history?.length);
  const refused = appstack("reconcile", `app/${name}`, "-n", namespace);
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /is suspended/);
});

test("deleting a suspended App leaves its Deployment and Service, as deletionPolicy Orphan: unmarked and unchanged, its stack removed, the App gone", async () => {
  const suspended = await getApp();
  assert.equal(suspended.spec.deletionPolicy, undefined, "no policy: suspended alone orphans");
  const before = await deployment();
  await workloads.delete("App", namespace, name);
  await workloads.gone("App", namespace, name);
  await assertOrphaned(cluster(), namespace, name, suspended.metadata.uid);
  const after = await deployment();
  // Its generation moves (the API server counts a Deployment's annotations in it), its spec does not.
  assert.deepEqual(after?.spec, before?.spec, "the spec untouched: no rollout, the held-back replicas not applied");
  assert.equal(after?.metadata?.annotations?.["deployment.kubernetes.io/revision"], before?.metadata?.annotations?.["deployment.kubernetes.io/revision"]);
  assert.equal(existsSync(checkpointPath(operator!.stateDir, "App", namespace, name)), false, "the stack is removed");
  await eventWithReason(cluster().core, namespace, name, "ChildrenOrphaned", (m) => m.startsWith(`Deployment ${name} and Service ${name} left in place`) && m.includes("(suspended)"));
});

test("spec.deletionPolicy: a value other than Delete or Orphan is refused; with Orphan a deletion leaves the children, no destroy run", async () => {
  const kept = "kept";
  const spec = { image: "nginx:1.27", replicas: 1, port: 80 };
  await assert.rejects(workloads.create({ kind: "App", metadata: { name: kept, namespace }, spec: { ...spec, deletionPolicy: "Keep" } }), (error: { code?: number; body?: unknown }) => error.code === 422 && /spec\.deletionPolicy: Unsupported value: .*Keep/.test(String(error.body)));
  await workloads.create({ kind: "App", metadata: { name: kept, namespace }, spec: { ...spec, deletionPolicy: "Orphan" } });
  const ready = (await workloads.ready("App", namespace, kept)) as App;
  await workloads.delete("App", namespace, kept);
  await workloads.gone("App", namespace, kept);
  await assertOrphaned(cluster(), namespace, kept, ready.metadata.uid);
  assert.equal(existsSync(checkpointPath(operator!.stateDir, "App", namespace, kept)), false, "the stack is removed");
  await eventWithReason(cluster().core, namespace, kept, "ChildrenOrphaned", (m) => m.includes("(deletionPolicy Orphan)"));
});

test("under updatePolicy Preview a reconcile request runs a refresh only (an up needs an approval), recorded as handled", async () => {
  const gated = "gated";
  await workloads.create({ kind: "App", metadata: { name: gated, namespace }, spec: { image: "nginx:1.27", replicas: 1, updatePolicy: "Preview" } });
  const before = (await workloads.readyApproving("App", namespace, gated)) as App;
  const updatesBefore = engineUpdates(gated);
  await workloads.merge("App", namespace, gated, { metadata: { annotations: { [reconcileRequestAnnotation]: "under-preview" } } });
  const handled = await eventually("the request handled", async () => {
    const app = (await workloads.get("App", namespace, gated)) as App;
    return app.status?.lastHandledReconcileAt === "under-preview" ? app : undefined;
  });
  assert.equal(ready(handled)?.status, "True");
  assert.deepEqual(handled.status?.history, before.status?.history, "no up");
  const entries = stackHistoryEntries(operator!.stateDir, "App", namespace, gated).sort();
  assert.equal(entries.length, updatesBefore + 1);
  const newest = JSON.parse(readFileSync(join(stackHistoryFolder(operator!.stateDir, "App", namespace, gated), entries.at(-1)!), "utf8")) as { kind: string; message: string };
  assert.equal(newest.kind, "refresh");
  assert.match(newest.message, /reconcile requested/);
});

test("under updatePolicy Preview, suspending withdraws the plan waiting for approval; resuming previews afresh", async () => {
  const gated = "gated";
  await workloads.mergeSpec("App", namespace, gated, { replicas: 2 });
  const { preview } = await workloads.previewOf("App", namespace, gated);
  await workloads.mergeSpec("App", namespace, gated, { suspend: true });
  const withdrawn = await eventually("the plan withdrawn", async () => {
    const app = (await workloads.get("App", namespace, gated)) as App;
    return ready(app)?.reason === "Suspended" && ready(app)?.observedGeneration === app.metadata.generation ? app : undefined;
  });
  assert.equal(withdrawn.status?.preview, undefined);
  assert.match(ready(withdrawn)?.message ?? "", /held back: spec changed/);
  await workloads.mergeSpec("App", namespace, gated, { suspend: false });
  const { preview: fresh } = await workloads.previewOf("App", namespace, gated, preview.planId);
  assert.equal(fresh.generation, withdrawn.metadata.generation! + 1);
  assert.equal((await cluster().apps.readNamespacedDeployment({ name: gated, namespace })).spec?.replicas, 1, "nothing applied unapproved");
});

test("deleting an App without deletionPolicy (Delete) destroys its stack: its Deployment gone, its stack removed", async () => {
  const gated = "gated";
  assert.equal(((await workloads.get("App", namespace, gated)) as App).spec.deletionPolicy, undefined);
  await workloads.delete("App", namespace, gated);
  await workloads.gone("App", namespace, gated);
  await assert.rejects(cluster().apps.readNamespacedDeployment({ name: gated, namespace }), (error) => isNotFound(error));
  assert.equal(existsSync(checkpointPath(operator!.stateDir, "App", namespace, gated)), false, "the stack is destroyed and removed");
  await eventWithReason(cluster().core, namespace, gated, "StackDestroyed");
});

test("without APPSTACK_OBJECT_METRICS (the default), /metrics has no series per object, however many reconciles ran", async () => {
  const body = (await httpGet(`http://127.0.0.1:${operator!.healthPort}/metrics`)).body;
  assert.ok((metricValue(body, "appstack_reconcile_total", { kind: "App", result: "success" }) ?? 0) > 0, "Apps were reconciled");
  assert.ok((metricValue(body, "appstack_pulumi_operations_total", { operation: "up" }) ?? 0) > 0, "and updated");
  assert.doesNotMatch(body, /^(# (HELP|TYPE) )?appstack_object_/m);
});
