// Deadlines, end to end: a Pulumi operation that cannot finish (its Deployment's create held in
// admission) is cancelled at its deadline, killed when it does not stop, and its stack unlocked;
// the object says OperationTimedOut, and once the API server answers again it converges. A
// state-folder file that never answers (a named pipe where a checkpoint was) fails its object's
// operation at the deadline while the leader goes on renewing its lease and the others converge.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { constants, promises as fs, renameSync } from "node:fs";
import { test } from "node:test";
import { CoordinationV1Api } from "@kubernetes/client-node";
import { commandLine, processIds } from "../../operator/base/procfs.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventsOf, eventually, eventWithReason, useCluster } from "../helpers/cluster.ts";
import { holdWrites } from "../helpers/hold.ts";
import { checkpointPath, disposeOperator, lockFiles, metricValue, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { httpGet } from "../helpers/http.ts";
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
    const metrics = (await httpGet(`http://127.0.0.1:${operator!.healthPort}/metrics`)).body;
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
  return processIds().filter((pid) => {
    const args = commandLine(pid) ?? [];
    return args.some((arg, i) => arg === "--stack" && args[i + 1] === stack);
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

/** A probe of the operator's health port that gives up (an operator whose event loop stands still never answers). */
async function probe(port: number, path: string): Promise<{ status: number; body: string } | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(3_000) });
    return { status: response.status, body: await response.text() };
  } catch {
    return undefined;
  }
}

test("a checkpoint that never answers fails its object at the deadline; the leader keeps its lease, /healthz answers, other objects converge", async () => {
  await operator!.stop();
  operator = await startOperatorProcess(cluster().cluster.kubeconfig, { stateDir: operator!.stateDir, env: { APPSTACK_OPERATION_TIMEOUT_SECONDS: "5" } });
  const leases = loadKubeConfig(cluster().cluster.kubeconfig).makeApiClient(CoordinationV1Api);
  // The client hands renewTime over as the API server wrote it (a string), whatever its type says.
  const renewed = async () => new Date((await leases.readNamespacedLease({ name: "appstack-operator", namespace })).spec?.renewTime as unknown as string).getTime();
  await workloads.create({ kind: "App", metadata: { name: "hung", namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
  await workloads.ready("App", namespace, "hung");

  // Its checkpoint becomes a pipe nobody writes: reading it blocks in the kernel for as long as
  // the test says, as a read from a hung NFS mount or a stalled disk does.
  const checkpoint = checkpointPath(operator.stateDir, "App", namespace, "hung");
  renameSync(checkpoint, `${checkpoint}.real`);
  execFileSync("mkfifo", [checkpoint]);
  /** The reads stuck on the pipe return: a writer comes and goes (never blocking: the operator reads). */
  const answer = async () => {
    const writer = await fs.open(`${checkpoint}.hung`, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => undefined);
    await writer?.close();
  };
  try {
    // A spec change: the next `up` reads the checkpoint first (the children the state records).
    await workloads.mergeSpec("App", namespace, "hung", { replicas: 2 });
    const hungSince = Date.now();
    const stalled = await eventually("App hung to say OperationTimedOut", async () => {
      const condition = (await workloads.get("App", namespace, "hung")).status?.conditions?.find((c) => c.type === "Stalled" && c.status === "True");
      return condition?.reason === "OperationTimedOut" ? condition : undefined;
    }, 60_000);
    assert.match(stalled.message, new RegExp(`the state folder does not answer: reading ${checkpoint}`));
    await eventWithReason(cluster().core, namespace, "hung", "OperationTimedOut");

    // The leader renews its lease while the read stays stuck, and says so on /healthz and /metrics.
    await eventually("a renewal of the lease after the read hung", async () => ((await renewed()) > hungSince + 5_000 ? true : undefined), 30_000);
    assert.equal((await probe(operator.healthPort, "/healthz"))?.status, 200);
    assert.equal(metricValue((await probe(operator.healthPort, "/metrics"))?.body ?? "", "appstack_leader"), 1);

    // Another object is created and converges meanwhile: the other paths of the state folder answer.
    await workloads.create({ kind: "App", metadata: { name: "bystander", namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
    assert.equal((await workloads.ready("App", namespace, "bystander")).status?.readyReplicas, 1);
    const lastRenewal = await renewed();
    await eventually("the lease renewed again", async () => ((await renewed()) > lastRenewal ? true : undefined), 30_000);
  } finally {
    // The checkpoint comes back, and the stuck read returns.
    renameSync(checkpoint, `${checkpoint}.hung`);
    renameSync(`${checkpoint}.real`, checkpoint);
    await answer();
  }
  const converged = await workloads.ready("App", namespace, "hung", 120_000);
  assert.equal(converged.status?.readyReplicas, 2);
  assert.equal((await cluster().apps.readNamespacedDeployment({ name: "hung", namespace })).spec?.replicas, 2);
});
