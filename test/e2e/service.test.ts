// The operator as an automation service: health and metrics endpoints, and leader election
// between two replicas sharing one backend. Only the leader reconciles; when it dies, the
// standby takes over; a graceful stop hands the lease over at once, and only once its last
// operation is over. A leader whose caches cannot sync gives the lease up and exits, or stops at
// once on SIGTERM.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { CoordinationV1Api, KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { defaultLeaseTiming } from "../../operator/manager/leader.ts";
import { freeLoopbackPorts } from "../../toolchain/cluster/ports.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventually, useCluster } from "../helpers/cluster.ts";
import { holdWrites } from "../helpers/hold.ts";
import { disposeOperator, lockFiles, metricValue as metric, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { httpGet as get } from "../helpers/http.ts";

const replicas: OperatorProcess[] = [];
const cluster = useCluster(undefined, async () => {
  for (const replica of replicas) await disposeOperator(replica);
});
const scratch = mkdtempSync(join(tmpdir(), "appstack-service-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

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
  for (const port of ports) await eventually(`/readyz on ${port}`, async () => ((await get(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined));
  for (const port of ports) assert.equal((await get(`http://127.0.0.1:${port}/healthz`)).status, 200);
  const leaderPort = await eventually("one leader", async () => {
    const leading = [];
    for (const port of ports) if (metric((await get(`http://127.0.0.1:${port}/metrics`)).body, "appstack_leader") === 1) leading.push(port);
    return leading.length === 1 ? leading[0] : undefined;
  });
  const standbyPort = ports.find((p) => p !== leaderPort)!;
  const lease = await leases.readNamespacedLease({ name: "appstack-operator", namespace: "default" });
  assert.ok(lease.spec?.holderIdentity);

  await workloads.create({ kind: "App", metadata: { name: "led", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1 } });
  await workloads.ready("App", "default", "led");
  const leaderMetrics = (await get(`http://127.0.0.1:${leaderPort}/metrics`)).body;
  assert.ok((metric(leaderMetrics, 'appstack_pulumi_operations_total{operation="up",result="succeeded"}') ?? 0) >= 1);
  assert.ok((metric(leaderMetrics, 'appstack_reconcile_total{kind="App",result="success"}') ?? 0) >= 1);
  assert.match(leaderMetrics, /appstack_queue_depth \d+/);
  assert.match(leaderMetrics, /appstack_last_successful_sync_timestamp_seconds \d/);
  const standbyMetrics = (await get(`http://127.0.0.1:${standbyPort}/metrics`)).body;
  assert.equal(metric(standbyMetrics, "appstack_leader"), 0);
  assert.equal(metric(standbyMetrics, 'appstack_pulumi_operations_total{operation="up",result="succeeded"}'), undefined);

  // The leader dies without a word; the lease expires and the standby takes over.
  const killedAt = Date.now();
  await byPort.get(leaderPort)!.stop("SIGKILL");
  await eventually("the standby to lead", async () => (metric((await get(`http://127.0.0.1:${standbyPort}/metrics`)).body, "appstack_leader") === 1 ? true : undefined), 60_000);
  console.error(`standby took over ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the leader was killed`);
  await workloads.create({ kind: "App", metadata: { name: "after-failover", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1 } });
  await workloads.ready("App", "default", "after-failover");

  // A graceful stop hands the lease over at once instead of letting it expire.
  await byPort.get(standbyPort)!.stop("SIGTERM");
  const released = await leases.readNamespacedLease({ name: "appstack-operator", namespace: "default" });
  assert.equal(released.spec?.holderIdentity, undefined);
});

type LogLine = { time: string; msg?: string; error?: string; watch?: string; [field: string]: unknown };

/** An operator's JSON log, line by line. */
function logLines(operator: OperatorProcess): LogLine[] {
  return readFileSync(operator.logFile, "utf8").split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as LogLine);
}

/** The lines of an operator's JSON log whose message is `msg`. */
function logged(replica: OperatorProcess, msg: string): LogLine[] {
  return logLines(replica).filter((line) => line.msg === msg);
}

test("a leader stopped mid-operation renews its lease until the operation is over, and only then hands it over", async () => {
  const kubeconfig = cluster().cluster.kubeconfig;
  const leases = loadKubeConfig(kubeconfig).makeApiClient(CoordinationV1Api);
  const readLease = () => leases.readNamespacedLease({ name: "appstack-operator", namespace: "default" });
  const workloads = new Workloads(kubeconfig);
  const leads = async (replica: OperatorProcess) => metric((await get(`http://127.0.0.1:${replica.healthPort}/metrics`)).body, "appstack_leader") === 1;
  // The default grace (60 s), longer than the lease (15 s). On the first test's state, which has its objects' stacks.
  const leader = await startOperatorProcess(kubeconfig, replicas[0] ? { stateDir: replicas[0].stateDir } : {});
  replicas.push(leader);
  await eventually("the first replica to lead", async () => ((await leads(leader)) ? true : undefined), 60_000);
  const standby = await startOperatorProcess(kubeconfig, { stateDir: leader.stateDir });
  replicas.push(standby);
  await eventually("the standby to be ready", async () => ((await get(`http://127.0.0.1:${standby.healthPort}/readyz`)).status === 200 ? true : undefined));
  const holder = (await readLease()).spec?.holderIdentity;
  assert.ok(holder);

  // An update in flight, its Deployment's create held in admission, when the leader is told to stop.
  const hold = await holdWrites(cluster().cluster, "deployments", "CREATE", "default", "graceful");
  await workloads.create({ kind: "App", metadata: { name: "graceful", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1 } });
  await hold.held;
  const exited = new Promise<number | null>((resolve) => leader.child.once("exit", (code) => resolve(code)));
  const stoppedAt = Date.now();
  leader.child.kill("SIGTERM");
  // Past a whole lease duration (and a standby's retry) since the signal, the stopping leader still
  // renews: a lease left to lapse would have gone to the standby by then.
  const { leaseDurationSeconds, retryPeriodMs } = defaultLeaseTiming;
  const outcome = await eventually("the stopping leader to renew its lease a lease duration past the signal, or the standby to lead", async () => {
    const lease = await readLease();
    if (lease.spec?.holderIdentity !== holder) return `the lease went to ${lease.spec?.holderIdentity ?? "nobody"} with the old leader's operation in flight`;
    if (await leads(standby)) return "the standby leads with the old leader's operation in flight";
    const renewedAt = new Date(lease.spec?.renewTime ?? 0).getTime();
    return renewedAt - stoppedAt > leaseDurationSeconds * 1000 + retryPeriodMs ? "renewing" : undefined;
  }, 60_000);
  assert.equal(outcome, "renewing");
  assert.equal(hold.requests, 1, "a second engine wrote the held Deployment");

  // The operation finishes; its status is written; then, only then, the lease is handed over.
  await hold.release();
  assert.equal(await exited, 0);
  const released = logged(leader, "released the lease");
  assert.equal(released.length, 1, "the stopping leader did not release the lease");
  const succeeded = logged(leader, "pulumi up succeeded").filter((line) => String(line["object"]).endsWith("/graceful"));
  assert.ok(succeeded.length === 1 && succeeded[0]!.time <= released[0]!.time, "the operation ended after the lease was released");
  await eventually("the standby to lead", async () => ((await leads(standby)) ? true : undefined), 60_000);
  const became = logged(standby, "became the leader");
  assert.equal(became.length, 1);
  assert.ok(became[0]!.time >= released[0]!.time, `the standby led at ${became[0]!.time}, before the old leader released the lease at ${released[0]!.time}`);
  await workloads.ready("App", "default", "graceful");
  assert.equal((await cluster().apps.readNamespacedDeployment({ name: "graceful", namespace: "default" })).spec?.template.spec?.containers[0]?.image, "nginx:1.27");
});

test("a replica starting in a pod breaks the stack locks naming that pod, an earlier container's, before anything else", async () => {
  // What a container restarted by the kubelet finds: a lock of its own name that its killed
  // predecessor left, stamped (by whatever clock) after this process started, by a pid that runs.
  const stateDir = mkdtempSync(join(tmpdir(), "appstack-operator-"));
  const folder = join(stateDir, "backend", ".pulumi", "locks", "organization", "appstack", "app.default.restarted");
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, "earlier.json"), JSON.stringify({ pid: process.pid, hostname: "appstack-restarted", username: "root", timestamp: new Date(Date.now() + 3_600_000).toISOString() }));
  // A lease and a namespace of its own: it leads at once and has nothing to reconcile.
  const restarted = await startOperatorProcess(cluster().cluster.kubeconfig, { stateDir, hostname: "appstack-restarted", env: { APPSTACK_LEASE_NAME: "appstack-restarted", APPSTACK_NAMESPACES: "restarted" } });
  replicas.push(restarted);
  await eventually("the earlier container's lock to be broken", async () => (lockFiles(stateDir).length === 0 ? true : undefined));
  assert.equal(logged(restarted, "breaking a stack lock of an earlier container of this pod's name").length, 1);
  await eventually("the restarted replica to be ready", async () => ((await get(`http://127.0.0.1:${restarted.healthPort}/readyz`)).status === 200 ? true : undefined));
});

/**
 * A kubeconfig of a ServiceAccount that may do what the operator does (leases in default, get, list
 * and watch on its kinds, Deployments and Services) but list no Pods.
 */
async function kubeconfigWithoutPods(): Promise<string> {
  const { cluster: local, core } = cluster();
  const admin = loadKubeConfig(local.kubeconfig);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  const name = "appstack-no-pods";
  const subjects = [{ kind: "ServiceAccount", name, namespace: "default" }];
  const observe = ["get", "list", "watch"];
  await core.createNamespacedServiceAccount({ namespace: "default", body: { metadata: { name } } });
  await rbac.createClusterRole({ body: { metadata: { name }, rules: [
    { apiGroups: ["appstack.dev"], resources: ["apps", "memcacheds"], verbs: observe },
    { apiGroups: ["apps"], resources: ["deployments"], verbs: observe },
    { apiGroups: [""], resources: ["services"], verbs: observe },
  ] } });
  await rbac.createClusterRoleBinding({ body: { metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name }, subjects } });
  await rbac.createNamespacedRole({ namespace: "default", body: { metadata: { name }, rules: [{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] }] } });
  await rbac.createNamespacedRoleBinding({ namespace: "default", body: { metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name }, subjects } });
  const token = await core.createNamespacedServiceAccountToken({ name, namespace: "default", body: { spec: { expirationSeconds: 3600, audiences: [] } } });
  const server = admin.getCurrentCluster()!;
  const config = new KubeConfig();
  config.loadFromOptions({ clusters: [server], users: [{ name, token: token.status?.token }], contexts: [{ name, cluster: server.name, user: name }], currentContext: name });
  const file = join(scratch, `${name}.kubeconfig`);
  writeFileSync(file, config.exportConfig(), { mode: 0o600 });
  return file;
}


test("a leader whose caches cannot sync releases the lease and exits naming what it could not list; a SIGTERM during the sync stops it at once", async () => {
  const kubeconfig = await kubeconfigWithoutPods();
  const leases = loadKubeConfig(cluster().cluster.kubeconfig).makeApiClient(CoordinationV1Api);
  const lease = "sync-deadline";
  const holder = async () => (await leases.readNamespacedLease({ name: lease, namespace: "default" })).spec?.holderIdentity;

  // Past the sync deadline: the lease is released, the process exits 1 and says why.
  const startedAt = Date.now();
  const gaveUp = await startOperatorProcess(kubeconfig, { installApi: false, env: { APPSTACK_LEASE_NAME: lease, APPSTACK_CACHE_SYNC_TIMEOUT_SECONDS: "3", POD_NAME: "gives-up" } });
  replicas.push(gaveUp);
  await eventually("the operator to give up and exit", async () => (gaveUp.child.exitCode !== null ? true : undefined), 60_000);
  console.error(`sync deadline of 3 s: the operator exited ${((Date.now() - startedAt) / 1000).toFixed(1)} s after it was started`);
  assert.equal(gaveUp.child.exitCode, 1);
  const failure = logLines(gaveUp).find((line) => line.msg === "the operator could not start; releasing the lease and exiting");
  assert.match(failure?.error ?? "", /caches not synced within 3 s; could not list .*\/api\/v1\/pods \(HTTP 403: pods is forbidden: User "system:serviceaccount:default:appstack-no-pods" cannot list/);
  assert.doesNotMatch(failure?.error ?? "", /deployments|services/);
  assert.ok(logLines(gaveUp).some((line) => line.msg === "released the lease"));
  assert.equal(await holder(), undefined);

  // A SIGTERM while the caches sync (the default deadline, 2 minutes): it stops at once, and
  // hands the lease over.
  const stopped = await startOperatorProcess(kubeconfig, { installApi: false, env: { APPSTACK_LEASE_NAME: lease, POD_NAME: "stops" } });
  replicas.push(stopped);
  await eventually("the operator to lead and fail to list pods", async () => {
    const failing = logLines(stopped).some((line) => line.msg === "watch failed; restarting" && line.watch === "/api/v1/pods");
    return failing && (await holder())?.startsWith("stops_") ? true : undefined;
  });
  assert.equal((await get(`http://127.0.0.1:${stopped.healthPort}/readyz`)).status, 503);
  const signalledAt = Date.now();
  await stopped.stop("SIGTERM");
  const stopSeconds = (Date.now() - signalledAt) / 1000;
  console.error(`SIGTERM during the cache sync: the operator exited ${stopSeconds.toFixed(1)} s later`);
  assert.equal(stopped.child.exitCode, 0);
  assert.ok(stopSeconds < 10, `the operator took ${stopSeconds.toFixed(1)} s to stop`);
  assert.equal(await holder(), undefined);
});
