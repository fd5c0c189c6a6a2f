// The operator as an automation service: health and metrics endpoints, and leader election
// between two replicas sharing one backend. Only the leader reconciles; when it dies, the
// standby takes over; a graceful stop hands the lease over at once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { CoordinationV1Api } from "@kubernetes/client-node";
import { freeLoopbackPorts } from "../../toolchain/cluster/ports.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventually, useCluster } from "../helpers/cluster.ts";
import { disposeOperator, httpGet as get, metricValue as metric, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

const replicas: OperatorProcess[] = [];
const cluster = useCluster(undefined, async () => {
  for (const replica of replicas) await disposeOperator(replica);
});

test("one of two replicas leads and reconciles; the other takes over when it dies", async () => {
  const kubeconfig = cluster().cluster.kubeconfig;
  const leases = loadKubeConfig(kubeconfig).makeApiClient(CoordinationV1Api);
  const workloads = new Workloads(kubeconfig);
  const ports = await freeLoopbackPorts(2);
  const first = await startOperatorProcess(kubeconfig, { env: { APPSTACK_HEALTH_ADDR: `127.0.0.1:${ports[0]}` } });
  replicas.push(first);
  const second = await startOperatorProcess(kubeconfig, { stateDir: first.stateDir, env: { APPSTACK_HEALTH_ADDR: `127.0.0.1:${ports[1]}` } });
  replicas.push(second);
  const byPort = new Map([[ports[0]!, first], [ports[1]!, second]]);

  // Both become ready: the leader once its caches are synced, the standby once it knows the leader.
  for (const port of ports) await eventually(`/readyz on ${port}`, async () => ((await get(port, "/readyz")).status === 200 ? true : undefined));
  for (const port of ports) assert.equal((await get(port, "/healthz")).status, 200);
  const leaderPort = await eventually("one leader", async () => {
    const leading = [];
    for (const port of ports) if (metric((await get(port, "/metrics")).body, "appstack_leader") === 1) leading.push(port);
    return leading.length === 1 ? leading[0] : undefined;
  });
  const standbyPort = ports.find((p) => p !== leaderPort)!;
  const lease = await leases.readNamespacedLease({ name: "appstack-operator", namespace: "default" });
  assert.ok(lease.spec?.holderIdentity);

  await workloads.create({ kind: "App", metadata: { name: "led", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1 } });
  await workloads.ready("App", "default", "led");
  const leaderMetrics = (await get(leaderPort, "/metrics")).body;
  assert.ok((metric(leaderMetrics, 'appstack_pulumi_operations_total{operation="up",result="succeeded"}') ?? 0) >= 1);
  assert.ok((metric(leaderMetrics, 'appstack_reconcile_total{kind="App",result="success"}') ?? 0) >= 1);
  assert.match(leaderMetrics, /appstack_queue_depth \d+/);
  assert.match(leaderMetrics, /appstack_last_successful_sync_timestamp_seconds \d/);
  const standbyMetrics = (await get(standbyPort, "/metrics")).body;
  assert.equal(metric(standbyMetrics, "appstack_leader"), 0);
  assert.equal(metric(standbyMetrics, 'appstack_pulumi_operations_total{operation="up",result="succeeded"}'), undefined);

  // The leader dies without a word; the lease expires and the standby takes over.
  const killedAt = Date.now();
  await byPort.get(leaderPort)!.stop("SIGKILL");
  await eventually("the standby to lead", async () => (metric((await get(standbyPort, "/metrics")).body, "appstack_leader") === 1 ? true : undefined), 60_000);
  console.error(`standby took over ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the leader was killed`);
  await workloads.create({ kind: "App", metadata: { name: "after-failover", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1 } });
  await workloads.ready("App", "default", "after-failover");

  // A graceful stop hands the lease over at once instead of letting it expire.
  await byPort.get(standbyPort)!.stop("SIGTERM");
  const released = await leases.readNamespacedLease({ name: "appstack-operator", namespace: "default" });
  assert.equal(released.spec?.holderIdentity, undefined);
});
