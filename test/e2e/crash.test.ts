// Crash safety: the operator is killed (with the Pulumi engines it runs) in the middle of an
// update and in the middle of a destroy; a new operator on the same state converges on its own.
import assert from "node:assert/strict";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { eventually, isNotFound, useCluster } from "../helpers/cluster.ts";
import { disposeOperator, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

let operator: OperatorProcess | undefined;
const cluster = useCluster(undefined, () => disposeOperator(operator));

function lockFiles(stateDir: string): string[] {
  const root = join(stateDir, "backend", ".pulumi", "locks");
  if (!existsSync(root)) return [];
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else files.push(path);
    }
  };
  walk(root);
  return files;
}

/** Kills the operator the moment its engine has locked the stack: an update is under way. */
async function crashDuringOperation(running: OperatorProcess): Promise<void> {
  await eventually("the engine to lock the stack", async () => (lockFiles(running.stateDir).length > 0 ? true : undefined), 60_000);
  await running.stop("SIGKILL");
  assert.ok(lockFiles(running.stateDir).length > 0, "the killed update left its lock behind");
}

test("killed mid-up and mid-destroy, a restarted operator converges without help", async () => {
  const { cluster: local, apps } = cluster();
  const workloads = new Workloads(local.kubeconfig);
  operator = await startOperatorProcess(local.kubeconfig);
  const stateDir = operator.stateDir;

  await workloads.create({ kind: "App", metadata: { name: "crashy", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 2, port: 80 } });
  await crashDuringOperation(operator);
  operator = await startOperatorProcess(local.kubeconfig, { stateDir });
  const ready = await workloads.ready("App", "default", "crashy");
  assert.equal(ready.status?.readyReplicas, 2);
  assert.equal((await apps.readNamespacedDeployment({ name: "crashy", namespace: "default" })).status?.readyReplicas, 2);
  assert.deepEqual(lockFiles(stateDir), []);

  await operator.stop();
  await workloads.delete("App", "default", "crashy");
  operator = await startOperatorProcess(local.kubeconfig, { stateDir });
  await crashDuringOperation(operator);
  operator = await startOperatorProcess(local.kubeconfig, { stateDir });
  await workloads.gone("App", "default", "crashy");
  await assert.rejects(apps.readNamespacedDeployment({ name: "crashy", namespace: "default" }), isNotFound);
  assert.ok(!existsSync(join(stateDir, "backend", ".pulumi", "stacks", "appstack", "app.default.crashy.json")));
  assert.deepEqual(lockFiles(stateDir), []);
});
