// What the operator keeps nothing of. An object deleted without its finalizer (a person's `kubectl
// patch ... finalizers: null`, then a delete) while the operator runs: the garbage collector takes
// the children by their owner references, and the operator forgets its stack and its plans, both
// the copy in its state folder and the one in the backend. And an object in an excluded namespace
// (kube-system, by default): Stalled with the reason, no finalizer, no child, no stack. Read from
// the state folder and the backend's files; the objects and the children from the API server.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { eventually, eventWithReason, isNotFound, orUndefined, useCluster } from "../helpers/cluster.ts";
import { checkpointPath, disposeOperator, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

const namespace = "default";
let operator: OperatorProcess | undefined;
let workloads: Workloads;
const cluster = useCluster(async ({ cluster: local }) => {
  operator = await startOperatorProcess(local.kubeconfig, { env: { APPSTACK_LEADER_ELECT: "false" } });
  workloads = new Workloads(local.kubeconfig);
}, () => disposeOperator(operator));

test("an App deleted without its finalizer while a plan waits: its stack and its plans are removed, its children go with it", async () => {
  await workloads.create({ kind: "App", metadata: { name: "unfinalized", namespace }, spec: { image: "nginx:1.27", replicas: 1, updatePolicy: "Auto" } });
  await workloads.ready("App", namespace, "unfinalized");
  // A change under Preview: a plan waits for approval, kept in the state folder and the backend.
  await workloads.mergeSpec("App", namespace, "unfinalized", { updatePolicy: "Preview", replicas: 2 });
  const { preview } = await workloads.previewOf("App", namespace, "unfinalized");
  const stack = stackName("App", namespace, "unfinalized");
  const plans = [join(operator!.stateDir, "plans", stack), join(operator!.stateDir, "backend", ".appstack", "plans", stack)];
  for (const folder of plans) assert.ok(existsSync(join(folder, `${preview.planId}.json`)), `plan ${preview.planId} in ${folder}`);

  await workloads.merge("App", namespace, "unfinalized", { metadata: { finalizers: null } });
  await workloads.delete("App", namespace, "unfinalized").catch((error: unknown) => assert.ok(isNotFound(error)));
  await workloads.gone("App", namespace, "unfinalized");
  const path = checkpointPath(operator!.stateDir, "App", namespace, "unfinalized");
  await eventually("the stack and its plans removed", async () => (!existsSync(path) && plans.every((folder) => !existsSync(folder)) ? true : undefined));
  await eventually("the garbage collector to delete the Deployment", async () => ((await orUndefined(() => cluster().apps.readNamespacedDeployment({ name: "unfinalized", namespace }))) ? undefined : true));
});

test("an App in kube-system, excluded by default: Stalled NamespaceExcluded with a Warning Event, no finalizer, no Deployment, no stack", async () => {
  await workloads.create({ kind: "App", metadata: { name: "privileged", namespace: "kube-system" }, spec: { image: "nginx:1.27", replicas: 1, serviceAccountName: "default" } });
  const refused = await workloads.condition("App", "kube-system", "privileged", "Stalled", "True");
  const stalled = refused.status?.conditions?.find((c) => c.type === "Stalled");
  assert.equal(stalled?.reason, "NamespaceExcluded");
  assert.match(stalled?.message ?? "", /namespace kube-system is excluded from this operator/);
  assert.equal(refused.metadata.finalizers, undefined);
  await eventWithReason(cluster().core, "kube-system", "privileged", "NamespaceExcluded", (message) => message.includes("APPSTACK_EXCLUDED_NAMESPACES"));
  assert.equal(await orUndefined(() => cluster().apps.readNamespacedDeployment({ name: "privileged", namespace: "kube-system" })), undefined);
  assert.equal(existsSync(checkpointPath(operator!.stateDir, "App", "kube-system", "privileged")), false);
  // Nothing holds its deletion.
  await workloads.delete("App", "kube-system", "privileged");
  await workloads.gone("App", "kube-system", "privileged");
});
