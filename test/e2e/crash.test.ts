// Crash safety: the operator is killed (with the Pulumi engines it runs) in the middle of an
// update, in the middle of a destroy and in the middle of leaving the children of an object with
// deletionPolicy Orphan; a new operator on the same state converges on its own, also over an
// attributes file a killed engine tore. The providers the operator keeps for its
// engines die with it; a provider an engine started itself lives on and the new operator kills it.
import assert from "node:assert/strict";
import { existsSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { approveAnnotation } from "../../crds/types.ts";
import { commandLine, processIds, processStat } from "../../operator/base/procfs.ts";
import { orphanedPlugins } from "../../operator/pulumi/orphans.ts";
import { eventually, eventWithReason, isNotFound, useCluster } from "../helpers/cluster.ts";
import { holdWrites, type Hold } from "../helpers/hold.ts";
import { assertOrphaned } from "../helpers/orphaned.ts";
import { checkpointPath, disposeOperator, lockFiles, pendingOperations, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { mergePatch } from "../../operator/kube/clients.ts";

let operator: OperatorProcess | undefined;
const cluster = useCluster(undefined, () => disposeOperator(operator));


const orphans = (stateDir: string) => orphanedPlugins(join(stateDir, "pulumi-home"));

/** Every provider process started from the state folder's engine home, whoever its parent is now. */
function providersOf(stateDir: string): number[] {
  const plugins = join(stateDir, "pulumi-home", "plugins");
  return processIds().filter((pid) => commandLine(pid)?.[0]?.startsWith(plugins) && processStat(pid)?.fields[0] !== "Z");
}

/**
 * Kills the operator (with its engines) while `hold` keeps one of its writes in flight: the
 * engine is mid-operation with the stack locked. The write then goes through, as it would when
 * an API server answers after its client died. `attached`: its engines used the providers it
 * keeps (provider-slots.ts), which die with it, where a provider an engine started lives on,
 * orphaned, for the restarted operator to kill.
 */
async function crashDuringOperation(running: OperatorProcess, hold: Hold, attached = true): Promise<void> {
  try {
    await hold.held;
    await running.stop("SIGKILL");
    assert.ok(lockFiles(running.stateDir).length > 0, "the killed operation left its lock behind");
    if (attached) await eventually("the operator's kept providers to die with it", async () => (providersOf(running.stateDir).length === 0 ? true : undefined), 10_000);
    // Adopted by init once the engine that started it has exited, which a SIGKILL does not wait for.
    else await eventually("the killed engine's provider running on, orphaned", async () => (orphans(running.stateDir).length > 0 ? true : undefined), 10_000);
  } finally {
    await hold.release();
  }
}

test("killed mid-up and mid-destroy, a restarted operator converges without help", async () => {
  const { cluster: local, apps } = cluster();
  const workloads = new Workloads(local.kubeconfig);
  // Each engine starts its own provider here, so that a killed one leaves it orphaned: the
  // restarted operator must find and kill it (the other tests kill operators whose engines
  // attached to the providers they keep).
  const env = { APPSTACK_ATTACHED_PROVIDERS: "false" };
  operator = await startOperatorProcess(local.kubeconfig, { env });
  const stateDir = operator.stateDir;

  const creating = await holdWrites(local, "deployments", "CREATE", "default", "crashy");
  await workloads.create({ kind: "App", metadata: { name: "crashy", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 2, port: 80 } });
  await crashDuringOperation(operator, creating, false);
  operator = await startOperatorProcess(local.kubeconfig, { stateDir, env });
  const ready = await workloads.ready("App", "default", "crashy");
  assert.equal(ready.status?.readyReplicas, 2);
  assert.equal((await apps.readNamespacedDeployment({ name: "crashy", namespace: "default" })).status?.readyReplicas, 2);
  assert.deepEqual(lockFiles(stateDir), []);
  assert.deepEqual(orphans(stateDir), [], "the restarted operator killed the orphaned provider");

  await operator.stop();
  const deleting = await holdWrites(local, "deployments", "DELETE", "default", "crashy");
  await workloads.delete("App", "default", "crashy");
  operator = await startOperatorProcess(local.kubeconfig, { stateDir, env });
  await crashDuringOperation(operator, deleting, false);
  operator = await startOperatorProcess(local.kubeconfig, { stateDir, env });
  await workloads.gone("App", "default", "crashy");
  await assert.rejects(apps.readNamespacedDeployment({ name: "crashy", namespace: "default" }), isNotFound);
  assert.ok(!existsSync(join(stateDir, "backend", ".pulumi", "stacks", "appstack", "app.default.crashy.json")));
  assert.deepEqual(lockFiles(stateDir), []);
  assert.deepEqual(orphans(stateDir), [], "the restarted operator killed the orphaned provider");
});

test("killed mid-up of an approved plan, a restarted operator finishes it or asks again, and never goes past approval", async (t) => {
  const { cluster: local, apps } = cluster();
  const workloads = new Workloads(local.kubeconfig);
  await disposeOperator(operator);
  operator = await startOperatorProcess(local.kubeconfig);
  const stateDir = operator.stateDir;
  const name = "gated-crash";
  await workloads.create({ kind: "App", metadata: { name, namespace: "default" }, spec: { image: "nginx:1.27", replicas: 2, port: 80, updatePolicy: "Preview" } });
  const approve = (planId: string) => workloads.merge("App", "default", name, { metadata: { annotations: { [approveAnnotation]: planId } } });
  const waiting = async (except?: string) =>
    eventually("a preview waiting for approval", async () => {
      const app = await workloads.get("App", "default", name);
      const planId = app.status?.preview?.planId;
      return planId && planId !== except && app.status?.preview?.generation === app.metadata.generation ? planId : undefined;
    });

  const first = await waiting();
  const creating = await holdWrites(local, "deployments", "CREATE", "default", name);
  await approve(first);
  await crashDuringOperation(operator, creating);
  operator = await startOperatorProcess(local.kubeconfig, { stateDir });

  // Either the same plan still fits (nothing was made) and applies, or the killed update made
  // part of it and the rest is previewed afresh; a fresh plan applies only once approved.
  const settled = await eventually("Ready, or a fresh plan waiting", async () => {
    const app = await workloads.get("App", "default", name);
    const ready = app.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    const fresh = app.status?.preview?.planId;
    if (ready && app.status?.observedGeneration === app.metadata.generation) return { ready: true as const };
    return fresh && fresh !== first && !app.metadata.annotations?.[approveAnnotation] ? { ready: false as const, fresh } : undefined;
  }, 120_000);
  t.diagnostic(settled.ready ? "after the restart the approved plan still fitted and applied" : "after the restart a fresh plan was previewed and approved");
  if (!settled.ready) await approve(settled.fresh);
  const ready = await workloads.ready("App", "default", name);
  assert.equal(ready.status?.preview, undefined);
  assert.equal(ready.metadata.annotations?.[approveAnnotation], undefined);
  assert.equal((await apps.readNamespacedDeployment({ name, namespace: "default" })).status?.readyReplicas, 2);
  assert.deepEqual(lockFiles(stateDir), []);
  assert.deepEqual(orphans(stateDir), [], "the restarted operator killed the orphaned provider");
});

test("killed after a drift repair's write went through, a restarted operator finishes the stack's record, with and without updatePolicy Preview", async () => {
  const { cluster: local, apps } = cluster();
  const workloads = new Workloads(local.kubeconfig);
  await disposeOperator(operator);
  // The repair's write must reach the API server after the operator is dead: the provider that
  // sent it must outlive the operator, as one its engine started does (the providers the operator
  // keeps die with it, and the API server drops a request whose client is gone). The record is
  // repaired the same way whoever sent the write.
  const env = { APPSTACK_ATTACHED_PROVIDERS: "false" };
  operator = await startOperatorProcess(local.kubeconfig, { env });
  const stateDir = operator.stateDir;
  for (const updatePolicy of ["Auto", "Preview"] as const) {
    const name = `resumed-${updatePolicy.toLowerCase()}`;
    await workloads.create({ kind: "App", metadata: { name, namespace: "default" }, spec: { image: "nginx:1.27", replicas: 2, port: 80, updatePolicy } });
    await workloads.readyApproving("App", "default", name);
    // The repair's write (the engine's apply) is held, and lets through once the engine is dead:
    // the children are right again, the stack still records the update as pending.
    const repairing = await holdWrites(local, "deployments", "UPDATE", "default", name, /^appstack$/);
    await apps.patchNamespacedDeployment({ name, namespace: "default", body: { spec: { replicas: 4 } } }, mergePatch);
    if (updatePolicy === "Preview") {
      const planId = await eventually("the repair's plan", async () => (await workloads.get("App", "default", name)).status?.preview?.planId);
      await workloads.approve("App", "default", name, planId);
    }
    await crashDuringOperation(operator, repairing, false);
    await eventually("the held repair to reach the Deployment", async () => ((await apps.readNamespacedDeployment({ name, namespace: "default" })).spec?.replicas === 2 ? true : undefined));
    assert.match(pendingOperations(stateDir, "App", "default", name).join(), /^updating .*Deployment::/, "the killed repair left its update pending");

    operator = await startOperatorProcess(local.kubeconfig, { stateDir, env });
    await eventually(`${name}'s pending operation to be cleared`, async () => (pendingOperations(stateDir, "App", "default", name).length ? undefined : true), 60_000);
    // Under Preview nothing may change the cluster unapproved: a refresh alone finished the record.
    const finished = { Auto: "StackUpdated", Preview: "StackRefreshed" }[updatePolicy];
    await eventWithReason(cluster().core, "default", name, finished, (message) => /interrupted operation/.test(message));
    const ready = await workloads.readyApproving("App", "default", name);
    assert.equal(ready.status?.preview, undefined);
    assert.equal((await apps.readNamespacedDeployment({ name, namespace: "default" })).spec?.replicas, 2);
    assert.deepEqual(lockFiles(stateDir), []);
    assert.deepEqual(orphans(stateDir), [], "the restarted operator killed the orphaned provider");
  }
});

test("an attributes file a killed engine tore (empty) is repaired: the object still updates, and still deletes after a restart", async () => {
  const { cluster: local, apps } = cluster();
  const workloads = new Workloads(local.kubeconfig);
  await disposeOperator(operator);
  operator = await startOperatorProcess(local.kubeconfig);
  const attrs = join(operator.stateDir, "backend", ".pulumi", "stacks", "appstack", "app.default.torn.json.attrs");
  // What an engine killed between creating the file and writing it leaves (gocloud.dev's fileblob).
  const tear = () => {
    assert.ok(existsSync(attrs), `${attrs} is where the checkpoint's attributes are`);
    truncateSync(attrs, 0);
  };
  await workloads.create({ kind: "App", metadata: { name: "torn", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1 } });
  await workloads.ready("App", "default", "torn");

  // Under the running operator, which has the stack selected already.
  tear();
  await workloads.mergeSpec("App", "default", "torn", { image: "nginx:1.28" });
  await workloads.ready("App", "default", "torn");
  assert.equal((await apps.readNamespacedDeployment({ name: "torn", namespace: "default" })).spec?.template.spec?.containers[0]?.image, "nginx:1.28");

  // Across a restart, on the way out.
  await operator.stop();
  tear();
  operator = await startOperatorProcess(local.kubeconfig, { stateDir: operator.stateDir });
  await workloads.delete("App", "default", "torn");
  await workloads.gone("App", "default", "torn");
  assert.ok(!existsSync(attrs.replace(/\.attrs$/, "")), "the stack is removed with the App");
});

test("killed while leaving an App's children (deletionPolicy Orphan), a restarted operator finishes: both unmarked, the stack removed, the App gone", async () => {
  const { cluster: local, apps, core } = cluster();
  const workloads = new Workloads(local.kubeconfig);
  await disposeOperator(operator);
  operator = await startOperatorProcess(local.kubeconfig);
  const stateDir = operator.stateDir;
  const name = "kept-crash";
  await workloads.create({ kind: "App", metadata: { name, namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1, port: 80, deletionPolicy: "Orphan" } });
  const { metadata: { uid } } = await workloads.ready("App", "default", name);
  // The Service's unmarking is held: the operator dies with its stack and finalizer still there.
  const unmarking = await holdWrites(local, "services", "UPDATE", "default", name);
  await workloads.delete("App", "default", name);
  try {
    await unmarking.held;
    await operator.stop("SIGKILL");
    const service = await core.readNamespacedService({ name, namespace: "default" });
    assert.ok(service.metadata?.ownerReferences?.some((ref) => ref.uid === uid), "the held write has not reached the Service");
    assert.ok(existsSync(checkpointPath(stateDir, "App", "default", name)), "the stack is still there");
    assert.ok((await workloads.get("App", "default", name)).metadata.finalizers?.length, "and so is the finalizer");
  } finally {
    await unmarking.release();
  }
  operator = await startOperatorProcess(local.kubeconfig, { stateDir });
  await workloads.gone("App", "default", name);
  await assertOrphaned({ apps, core }, "default", name, uid);
  assert.ok(!existsSync(checkpointPath(stateDir, "App", "default", name)), "the stack is removed");
  assert.deepEqual(lockFiles(stateDir), []);
});
