// API faults under the standby and under the leader. Each replica reaches the API server through a
// proxy of its own (helpers/fault-proxy.ts), so that one replica's connections can be reset or
// stalled while everything else works:
// - the standby's API resets, then stalls: it says not ready meanwhile, keeps contending, and takes
//   over when the leader is killed afterwards;
// - the leader's API resets for less than the renew deadline: it keeps leading, and a change
//   made meanwhile is applied once its watches reconnect;
// - the leader's API stalls past the renew deadline: it gives up and exits, the standby takes over,
//   and a change made during the stall is applied by the new leader;
// - the leader's watch connections left half-open (open, silent): a child's change made meanwhile
//   still reaches it once the watch's own deadline closes them.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { eventually, useCluster } from "../helpers/cluster.ts";
import { FaultProxy, kubeconfigThrough } from "../helpers/fault-proxy.ts";
import { disposeOperator, firstPassDone, lockFiles, metricValue, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { httpGet } from "../helpers/http.ts";
import { mergePatch } from "../../operator/kube/clients.ts";

const namespace = "default";
const scratch = mkdtempSync(join(tmpdir(), "appstack-api-faults-"));
const replicas: { operator: OperatorProcess; proxy: FaultProxy; name: string }[] = [];
const cluster = useCluster(undefined, async () => {
  for (const replica of replicas) await disposeOperator(replica.operator).catch(() => undefined);
  for (const replica of replicas) await replica.proxy.close();
});
after(() => rmSync(scratch, { recursive: true, force: true }));

type Replica = (typeof replicas)[number];

async function startReplica(name: string, stateDir?: string, env?: Record<string, string>): Promise<Replica> {
  const { kubeconfig, server } = cluster().cluster;
  const proxy = await FaultProxy.start({ host: "127.0.0.1", port: Number(new URL(server).port) });
  const operator = await startOperatorProcess(kubeconfigThrough(kubeconfig, server, proxy, join(scratch, `${name}.kubeconfig`)), { stateDir, ...(env ? { env } : {}) });
  const replica = { operator, proxy, name };
  replicas.push(replica);
  return replica;
}

const leading = async (replica: Replica) => metricValue(await httpGet(`http://127.0.0.1:${replica.operator.healthPort}/metrics`).then((r) => r.body, () => ""), "appstack_leader");
const readyz = async (replica: Replica) => (await httpGet(`http://127.0.0.1:${replica.operator.healthPort}/readyz`).catch(() => ({ status: 0 }))).status;
const leaseCallErrors = async (replica: Replica) => metricValue(await httpGet(`http://127.0.0.1:${replica.operator.healthPort}/metrics`).then((r) => r.body), "appstack_leader_lease_calls_total", { result: "error" }) ?? 0;

/** Resolves once `replica` has made `count` more failed lease calls than `since`: the fault reached its elector. */
async function leaseCallsFailed(replica: Replica, since: number, count: number): Promise<void> {
  await eventually(`${count} failed lease calls of ${replica.name}`, async () => ((await leaseCallErrors(replica)) >= since + count ? true : undefined), 60_000);
}

async function leaderOf(pair: Replica[]): Promise<{ leader: Replica; standby: Replica }> {
  return eventually("one leader and one ready standby", async () => {
    const flags = await Promise.all(pair.map(leading));
    const statuses = await Promise.all(pair.map(readyz));
    const leader = pair[flags.indexOf(1)];
    const standby = pair.find((r) => r !== leader);
    return flags.filter((f) => f === 1).length === 1 && statuses.every((s) => s === 200) && leader && standby ? { leader, standby } : undefined;
  }, 60_000);
}

async function imageApplied(workloads: Workloads, name: string, image: string): Promise<void> {
  const object = await workloads.ready("App", namespace, name, 120_000);
  const deployment = await cluster().apps.readNamespacedDeployment({ name, namespace });
  assert.equal(deployment.spec?.template.spec?.containers[0]?.image, image);
  assert.equal(object.status?.readyReplicas, 1);
}

test("API faults under the standby and under the leader: failover still happens, and no change is lost", { timeout: 10 * 60_000 }, async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  const first = await startReplica("first");
  const second = await startReplica("second", first.operator.stateDir);
  let { leader, standby } = await leaderOf([first, second]);
  await workloads.create({ kind: "App", metadata: { name: "steady", namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
  await imageApplied(workloads, "steady", "nginx:1.27");

  // Under the standby: resets, then a stall. It says it is not ready, and it never leads meanwhile.
  standby.proxy.set("reset");
  await eventually("the standby to say not ready while its API resets", async () => ((await readyz(standby)) === 503 ? true : undefined), 30_000);
  const failedBeforeStall = await leaseCallErrors(standby);
  standby.proxy.set("stall");
  await workloads.mergeSpec("App", namespace, "steady", { image: "nginx:1.28" });
  await imageApplied(workloads, "steady", "nginx:1.28");
  // Two lease calls that went unanswered until their deadline, and a retry between: a standby
  // that took silence for an expired lease would have led by now.
  await leaseCallsFailed(standby, failedBeforeStall, 2);
  assert.equal(await leading(standby), 0);
  assert.equal(await leading(leader), 1);
  standby.proxy.set("none");
  await eventually("the standby ready again", async () => ((await readyz(standby)) === 200 ? true : undefined), 60_000);

  // ... and it still contends: the leader dies, the standby takes over.
  const killedAt = Date.now();
  await leader.operator.stop("SIGKILL");
  await workloads.mergeSpec("App", namespace, "steady", { image: "nginx:1.29" });
  await eventually("the standby to take over", async () => ((await leading(standby)) === 1 ? true : undefined), 60_000);
  const afterKill = (Date.now() - killedAt) / 1000;
  await imageApplied(workloads, "steady", "nginx:1.29");

  // Under the leader: resets shorter than the renew deadline. It keeps the lease; its watches
  // reconnect and the change made meanwhile is applied.
  const survivor = standby;
  const third = await startReplica("third", first.operator.stateDir);
  ({ leader, standby } = await leaderOf([survivor, third]));
  const failedBeforeReset = await leaseCallErrors(leader);
  leader.proxy.set("reset");
  await workloads.mergeSpec("App", namespace, "steady", { image: "nginx:1.30" });
  // The outage lasts until a renewal has failed in it (a renewal is due every 2 s, the renew
  // deadline is 10 s): the leader lived through a failed renewal, not only dropped watches.
  await leaseCallsFailed(leader, failedBeforeReset, 1);
  leader.proxy.set("none");
  await imageApplied(workloads, "steady", "nginx:1.30");
  assert.equal(await leading(leader), 1, "a short API outage cost the leader its lease");
  assert.equal(await leading(standby), 0);

  // Under the leader: a stall past the renew deadline. It gives up and exits; the standby leads
  // and applies the change made during the stall.
  const stalledAt = Date.now();
  leader.proxy.set("stall");
  await workloads.mergeSpec("App", namespace, "steady", { image: "nginx:1.31" });
  await eventually("the stalled leader to exit", async () => (leader.operator.child.exitCode !== null ? true : undefined), 60_000);
  assert.equal(leader.operator.child.exitCode, 1);
  await eventually("the standby to take over", async () => ((await leading(standby)) === 1 ? true : undefined), 60_000);
  const afterStall = (Date.now() - stalledAt) / 1000;
  await imageApplied(workloads, "steady", "nginx:1.31");
  leader.proxy.set("none");
  console.error(`api faults: the standby took over ${afterKill.toFixed(1)} s after the leader was killed, ${afterStall.toFixed(1)} s after the leader's API stalled`);

  await standby.operator.stop();
  assert.deepEqual(lockFiles(standby.operator.stateDir), []);
});

test("watch connections left half-open: a child's change made meanwhile still reaches the operator within the watch's deadline", { timeout: 5 * 60_000 }, async () => {
  const { core, apps } = cluster();
  // A namespace and a lease of its own: nothing of the test above can take part.
  const ns = "half-open";
  await core.createNamespace({ body: { metadata: { name: ns } } });
  const watchTimeoutSeconds = 2;
  const replica = await startReplica("half-open", undefined, { APPSTACK_NAMESPACES: ns, APPSTACK_LEASE_NAME: "half-open", APPSTACK_WATCH_TIMEOUT_SECONDS: String(watchTimeoutSeconds) });
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  await workloads.create({ kind: "App", metadata: { name: "watched", namespace: ns }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
  await workloads.ready("App", ns, "watched");
  // Nothing queued or running: the connections open now are the watches, the lease's, and the API
  // calls' kept connections, which close 5 s after their last use (operator/kube/connection-pool.ts).
  await firstPassDone(replica.operator, 1);

  replica.proxy.set("half-open");
  const changedAt = Date.now();
  await apps.patchNamespacedDeploymentScale({ name: "watched", namespace: ns, body: { spec: { replicas: 3 } } }, mergePatch);
  // Only through a new watch can the operator learn of the scale (its resync is 10 minutes away):
  // repaired, and the App Ready for it.
  await eventually("the scale to be repaired", async () => {
    const deployment = await apps.readNamespacedDeployment({ name: "watched", namespace: ns });
    if (deployment.spec?.replicas !== 1) return undefined;
    const object = await workloads.get("App", ns, "watched");
    const ready = object.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    return ready && object.status?.observedGeneration === object.metadata.generation ? true : undefined;
  }, 60_000);
  const repairedAfter = (Date.now() - changedAt) / 1000;
  console.error(`half-open watches (timeout ${watchTimeoutSeconds} s): a Deployment scaled by hand was repaired ${repairedAfter.toFixed(1)} s later`);
  const expired = readFileSync(replica.operator.logFile, "utf8").split("\n").filter((line) => line.includes('"watch failed; restarting"') && line.includes("taken for dead"));
  assert.ok(expired.length > 0, "no watch was taken for dead");
  replica.proxy.set("none");
  await replica.operator.stop();
});
