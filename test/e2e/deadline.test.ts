// Deadlines, end to end: a Pulumi operation that cannot finish (its Deployment's create held in
// admission) is cancelled at its deadline, killed when it does not stop, and its stack unlocked;
// the object says OperationTimedOut, and once the API server answers again it converges.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { CoordinationV1Api } from "@kubernetes/client-node";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventsOf, eventually, eventWithReason, useCluster } from "../helpers/cluster.ts";
import { holdWrites } from "../helpers/hold.ts";
import { disposeOperator, httpGet, lockFiles, metricValue, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { processesUnder } from "../helpers/proctree.ts";

let operator: OperatorProcess | undefined;
let workloads: Workloads;
const namespace = "default";

const cluster = useCluster(
  async ({ cluster: local }) => {
    operator = await startOperatorProcess(local.kubeconfig, { env: { APPSTACK_LEADER_ELECT: "false", APPSTACK_OPERATION_TIMEOUT_SECONDS: "3", APPSTACK_RETRY_BASE_MS: "20000", APPSTACK_RETRY_MAX_MS: "20000" } });
    workloads = new Workloads(local.kubeconfig);
  },
  () => disposeOperator(operator),
);

test("an operation past its deadline is cancelled, its stack unlocked, the object says OperationTimedOut, and it converges later", async () => {
  // The engine's create of the Deployment waits in admission for as long as the test says.
  const hold = await holdWrites(cluster().cluster, "deployments", "CREATE", namespace, "slow");
  await workloads.create({ kind: "App", metadata: { name: "slow", namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
  await hold.held;
  const stalled = await eventually("OperationTimedOut", async () => {
    const object = await workloads.get("App", namespace, "slow");
    const condition = object.status?.conditions?.find((c) => c.type === "Stalled" && c.status === "True");
    return condition?.reason === "OperationTimedOut" ? condition : undefined;
  }, 60_000);
  assert.match(stalled.message, /pulumi up did not finish within its deadline of 3 s/);
  await eventWithReason(cluster().core, namespace, "slow", "OperationTimedOut");
  // Nothing of the cancelled operation is left: no engine, no lock on the stack. Looked at once
  // nothing runs (the retry comes 20 s later).
  await eventually("the queue to be quiet", async () => {
    const metrics = (await httpGet(operator!.healthPort, "/metrics")).body;
    return metricValue(metrics, "appstack_queue_active") === 0 && metricValue(metrics, "appstack_pulumi_operations_running") === 0 ? true : undefined;
  });
  assert.deepEqual(processesUnder(operator!.child.pid!, "pulumi"), []);
  assert.deepEqual(lockFiles(operator!.stateDir), []);
  await hold.release();
  const ready = await workloads.ready("App", namespace, "slow", 120_000);
  assert.equal(ready.status?.readyReplicas, 1);
});

/** Every process on this machine running an engine operation on `stack`, whoever its parent is. */
function enginesAnywhere(stack: string): number[] {
  return readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      return args.some((arg, i) => arg === "--stack" && args[i + 1] === stack) ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

test("a leader stopped past its shutdown grace kills its engines before it hands the lease over", async () => {
  await operator!.stop();
  operator = await startOperatorProcess(cluster().cluster.kubeconfig, { stateDir: operator!.stateDir, env: { APPSTACK_SHUTDOWN_GRACE_SECONDS: "1" } });
  const hold = await holdWrites(cluster().cluster, "deployments", "CREATE", namespace, "handed-over");
  await workloads.create({ kind: "App", metadata: { name: "handed-over", namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
  await hold.held;
  assert.equal(enginesAnywhere("app.default.handed-over").length, 1, "the engine is mid-update");
  const exited = new Promise<number | null>((resolve) => operator!.child.once("exit", (code) => resolve(code)));
  operator.child.kill("SIGTERM");
  // Past its grace the operator must stop its engine itself: a process still running one would not exit.
  const code = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve("still running after 20 s"), 20_000))]);
  // 0: a graceful stop; not killed by its own signal while an engine ran, not hung on the engine.
  assert.equal(code, 0);
  assert.deepEqual(enginesAnywhere("app.default.handed-over"), []);
  const lease = await loadKubeConfig(cluster().cluster.kubeconfig).makeApiClient(CoordinationV1Api).readNamespacedLease({ name: "appstack-operator", namespace: "default" });
  assert.ok(!lease.spec?.holderIdentity, `the lease is still held by ${lease.spec?.holderIdentity}`);
  assert.deepEqual(lockFiles(operator.stateDir), []);
  // The update was stopped, not failed: the object still says it is being applied, for the next
  // leader to carry on, never Stalled with the killed engine's words.
  const interrupted = await workloads.get("App", namespace, "handed-over");
  const conditions = Object.fromEntries((interrupted.status?.conditions ?? []).map((c) => [c.type, c]));
  assert.equal(conditions["Stalled"]?.status, "False", JSON.stringify(interrupted.status));
  assert.equal(conditions["Reconciling"]?.status, "True", JSON.stringify(interrupted.status));
  assert.equal(conditions["Ready"]?.reason, "Applying", JSON.stringify(interrupted.status));
  assert.deepEqual((await eventsOf(cluster().core, namespace, "handed-over")).filter((e) => e.type === "Warning").map((e) => `${e.reason}: ${e.message}`), []);
  await hold.release();
  // The next leader finishes the job.
  operator = await startOperatorProcess(cluster().cluster.kubeconfig, { stateDir: operator.stateDir });
  await workloads.ready("App", namespace, "handed-over", 120_000);
});
