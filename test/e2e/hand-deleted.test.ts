// An object deleted without its finalizer (a person's `kubectl patch ... finalizers: null`, then a
// delete) while the operator runs: the garbage collector takes the children by their owner
// references, and the operator forgets what it kept of the object, its stack and its plans, both
// the copy in its state folder and the one in the backend. Read from the state folder and the
// backend's files; the object and the children from the API server.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { eventually, isNotFound, orUndefined, useCluster } from "../helpers/cluster.ts";
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
