// Crash safety: the operator is killed (with the Pulumi engines it runs) in the middle of an
// update and in the middle of a destroy; a new operator on the same state converges on its own.
import assert from "node:assert/strict";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { isNotFound, useCluster } from "../helpers/cluster.ts";
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

/**
 * Kills the operator (with its engines) the moment the engine has locked the stack: an update is
 * under way. Polled tightly: a destroy holds its lock for well under a second.
 */
async function crashDuringOperation(running: OperatorProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (lockFiles(running.stateDir).length === 0) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the engine to lock the stack");
    await sleep(10);
  }
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
  // A finalizer of someone else's holds the Deployment's deletion, which keeps the destroy (and
  // its lock) around longer than a bare delete would.
  const hold = "appstack.dev/test-hold";
  const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
  await apps.patchNamespacedDeployment({ name: "crashy", namespace: "default", body: { metadata: { finalizers: [hold] } } }, merge);
  await workloads.delete("App", "default", "crashy");
  operator = await startOperatorProcess(local.kubeconfig, { stateDir });
  await crashDuringOperation(operator);
  operator = await startOperatorProcess(local.kubeconfig, { stateDir });
  await apps.patchNamespacedDeployment({ name: "crashy", namespace: "default", body: { metadata: { finalizers: null } } }, merge);
  await workloads.gone("App", "default", "crashy");
  await assert.rejects(apps.readNamespacedDeployment({ name: "crashy", namespace: "default" }), isNotFound);
  assert.ok(!existsSync(join(stateDir, "backend", ".pulumi", "stacks", "appstack", "app.default.crashy.json")));
  assert.deepEqual(lockFiles(stateDir), []);
});
