// A leader frozen mid-update (a paused VM: the operator, its engine and its plugins stop; nothing
// is killed) past its lease, on a state folder shared by every replica. The next leader must not
// break the frozen leader's stack lock: the frozen engine may resume at any moment and write the
// stack. Each replica has a hostname of its own, as a pod has: the name of one of the pods of a
// Deployment (kwok runs them), which is how the next leader tells that the holder is a replica of
// its install, and whether it is gone.
// - The frozen leader resumes: it finds its lease lost, kills its engine, removes its own lock and
//   exits; the new leader then finishes the update.
// - The frozen leader never resumes (killed while frozen): its lock stays while its pod still
//   runs, and is broken once the pod is gone (the kubelet's or an administrator's word).
// In both, exactly one engine's write reaches the API server while the holder may live.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, test } from "node:test";
import { eventually, eventWithReason, useCluster } from "../helpers/cluster.ts";
import { holdWrites } from "../helpers/hold.ts";
import { disposeOperator, lockFiles, metricValue, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { httpGet } from "../helpers/http.ts";
import { processesUnder, signalTree } from "../helpers/proctree.ts";

const namespace = "default";
/** The names of the install's pods, one per replica: a, b and c. */
let hosts: string[] = [];
const replicas: OperatorProcess[] = [];
const cluster = useCluster(async ({ core, apps }) => {
  // The install's pods, running before any lock is taken.
  const labels = { "app.kubernetes.io/name": "appstack-operator" };
  await apps.createNamespacedDeployment({ namespace, body: { metadata: { name: "appstack-operator" }, spec: { replicas: 3, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: "operator", image: "appstack:test" }] } } } } });
  hosts = await eventually("the install's three pods running", async () => {
    const pods = (await core.listNamespacedPod({ namespace, labelSelector: "app.kubernetes.io/name=appstack-operator" })).items;
    return pods.length === 3 && pods.every((pod) => pod.status?.containerStatuses?.[0]?.state?.running) ? pods.map((pod) => pod.metadata!.name!).sort() : undefined;
  });
});
after(async () => {
  // A replica left frozen by a failed test would never answer the SIGTERM that stops it.
  for (const replica of replicas) if (replica.child.exitCode === null && replica.child.signalCode === null) signalTree(replica.child.pid!, "SIGCONT");
  for (const replica of replicas) await disposeOperator(replica).catch(() => undefined);
});

async function startReplica(hostname: string, stateDir?: string): Promise<OperatorProcess> {
  // Its pods and the Apps share one namespace here, which an install never does: the operator's own
  // namespace is excluded by default (APPSTACK_EXCLUDED_NAMESPACES), so only kube-system is.
  const replica = await startOperatorProcess(cluster().cluster.kubeconfig, { hostname, env: { POD_NAMESPACE: namespace, APPSTACK_EXCLUDED_NAMESPACES: "kube-system" }, ...(stateDir ? { stateDir } : {}) });
  replicas.push(replica);
  return replica;
}

const leads = async (replica: OperatorProcess) => (metricValue(await httpGet(`http://127.0.0.1:${replica.healthPort}/metrics`).then((r) => r.body, () => ""), "appstack_leader") === 1 ? true : undefined);

/** The hosts named by the stack locks of a state folder. */
function lockHolders(stateDir: string): string[] {
  return lockFiles(stateDir)
    .filter((file) => file.endsWith(".json"))
    .map((file) => (JSON.parse(readFileSync(file, "utf8")) as { hostname: string }).hostname);
}

async function stackLocked(workloads: Workloads, name: string, holder: string): Promise<void> {
  await eventually(`App ${name} to say that ${holder} holds its stack`, async () => {
    const reconciling = (await workloads.get("App", namespace, name)).status?.conditions?.find((c) => c.type === "Reconciling");
    return reconciling?.reason === "StackLocked" && reconciling.message.includes(`on ${holder} since`) && reconciling.message.includes(`pod ${namespace}/${holder} still runs`) ? true : undefined;
  }, 60_000);
}

/** How many reconciles of the replica found a stack locked by another engine. */
async function lockedReconciles(replica: OperatorProcess): Promise<number> {
  return metricValue((await httpGet(`http://127.0.0.1:${replica.healthPort}/metrics`)).body, "appstack_reconcile_total", { kind: "App", result: "locked" }) ?? 0;
}

async function appliedBy(workloads: Workloads, name: string): Promise<void> {
  const object = await workloads.ready("App", namespace, name, 120_000);
  const deployment = await cluster().apps.readNamespacedDeployment({ name, namespace });
  assert.equal(deployment.spec?.template.spec?.containers[0]?.image, "nginx:1.27");
  assert.deepEqual(deployment.metadata?.ownerReferences?.map((o) => o.uid), [object.metadata.uid]);
}

test("a leader frozen mid-update keeps its stack lock until it is provably gone: no second engine writes the stack", { timeout: 10 * 60_000 }, async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  const [a, b, c] = hosts as [string, string, string];
  const first = await startReplica(a);
  await eventually(`${a} to lead`, () => leads(first), 60_000);
  const second = await startReplica(b, first.stateDir);

  // Frozen, then resumed.
  const firstHold = await holdWrites(cluster().cluster, "deployments", "CREATE", namespace, "frozen-1");
  await workloads.create({ kind: "App", metadata: { name: "frozen-1", namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
  await firstHold.held;
  assert.deepEqual(lockHolders(first.stateDir), [a]);
  assert.ok(processesUnder(first.child.pid!, "pulumi").length > 0, "the leader's engine is mid-update");
  signalTree(first.child.pid!, "SIGSTOP");
  await eventually(`${b} to lead once the frozen leader's lease expires`, () => leads(second), 60_000);
  await stackLocked(workloads, "frozen-1", a);
  await eventWithReason(cluster().core, namespace, "frozen-1", "StackLocked", (m) => m.includes(a));
  // Waiting on the lock is counted as such (once the reconcile that said so has returned), not as a successful sync.
  await eventually("a reconcile counted as locked", async () => ((await lockedReconciles(second)) >= 1 ? true : undefined));
  assert.deepEqual(lockHolders(first.stateDir), [a], "the frozen leader's lock was broken");
  assert.equal(firstHold.requests, 1, "a second engine wrote while the frozen one may resume");
  const exited = new Promise<number | null>((resolve) => first.child.once("exit", (code) => resolve(code)));
  signalTree(first.child.pid!, "SIGCONT");
  assert.equal(await exited, 1, "the resumed leader did not give up");
  assert.ok(!lockHolders(first.stateDir).includes(a), "the resumed leader left its lock");
  await firstHold.release();
  await appliedBy(workloads, "frozen-1");

  // Frozen, then killed while frozen: it never resumes.
  const third = await startReplica(c, first.stateDir);
  const secondHold = await holdWrites(cluster().cluster, "deployments", "CREATE", namespace, "frozen-2");
  await workloads.create({ kind: "App", metadata: { name: "frozen-2", namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
  await secondHold.held;
  signalTree(second.child.pid!, "SIGSTOP");
  await eventually(`${c} to lead once the frozen leader's lease expires`, () => leads(third), 60_000);
  await stackLocked(workloads, "frozen-2", b);
  const lockedBefore = await lockedReconciles(third);
  signalTree(second.child.pid!, "SIGKILL");
  // Dead, but nothing the new leader can see says so: its pod still shows it running. The new
  // leader looks at the lock twice more after the kill, and keeps it each time.
  await eventually(`${c} to find the lock again twice after the kill`, async () => ((await lockedReconciles(third)) >= lockedBefore + 2 ? true : undefined), 60_000);
  await stackLocked(workloads, "frozen-2", b);
  assert.deepEqual(lockHolders(first.stateDir), [b]);
  assert.equal(secondHold.requests, 1);
  // What the kubelet does once it has seen the containers dead, or an administrator for a lost node.
  await cluster().core.deleteNamespacedPod({ name: b, namespace, gracePeriodSeconds: 0 });
  await eventually("the dead leader's lock to be broken", async () => (lockHolders(first.stateDir).includes(b) ? undefined : true), 60_000);
  await secondHold.release();
  await appliedBy(workloads, "frozen-2");
  await appliedBy(workloads, "frozen-1");

  for (const name of ["frozen-1", "frozen-2"]) await workloads.delete("App", namespace, name);
  for (const name of ["frozen-1", "frozen-2"]) await workloads.gone("App", namespace, name);
  await third.stop();
  assert.deepEqual(lockFiles(first.stateDir), []);
});
