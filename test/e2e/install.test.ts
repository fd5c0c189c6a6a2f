// The install program's components through the real engine: the API server serves the CRDs, with
// their validation; the operator runs with the installed ServiceAccount and nothing more, installed
// for all namespaces and for a list of them.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ApiextensionsV1Api, AppsV1Api, CoordinationV1Api, CoreV1Api, KubeConfig, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, type V1Deployment } from "@kubernetes/client-node";
import { LocalWorkspace, type Stack } from "@pulumi/pulumi/automation/index.js";
import { AppstackCrds } from "../../components/crds.ts";
import { AppstackInstall } from "../../components/install.ts";
import { workspaceOptions } from "../../operator/pulumi/engine.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventually, isNotFound, orUndefined, useCluster } from "../helpers/cluster.ts";
import { holdWrites } from "../helpers/hold.ts";
import { checkpointPath, disposeOperator, lockFiles, metricValue, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { httpGet } from "../helpers/http.ts";
import { engineBinaries } from "../../toolchain/tools.ts";

const cluster = useCluster();
const stateDir = mkdtempSync(join(tmpdir(), "appstack-install-"));
after(() => rmSync(stateDir, { recursive: true, force: true }));

/** How the Deployment rolls out: its strategy, maxUnavailable and maxSurge. */
/** Where the operator reads its passphrase: the file its variable names, the Secret mounted, where, read-only. Never the variable itself. */
function passphraseSource(deployment: V1Deployment): unknown[] {
  const { containers: [container], volumes = [] } = deployment.spec!.template.spec!;
  const { env = [], volumeMounts = [] } = container!;
  assert.equal(env.find((e) => e.name === "APPSTACK_PASSPHRASE"), undefined);
  const mount = volumeMounts.find((m) => m.name === "passphrase");
  return [env.find((e) => e.name === "APPSTACK_PASSPHRASE_FILE")?.value, volumes.find((volume) => volume.name === "passphrase")?.secret?.secretName, mount?.mountPath, mount?.readOnly];
}

function strategyOf(deployment: V1Deployment): unknown[] {
  const strategy = deployment.spec?.strategy;
  return [strategy?.type, strategy?.rollingUpdate?.maxUnavailable, strategy?.rollingUpdate?.maxSurge];
}

/** A kubeconfig with nothing but a token of the installed ServiceAccount in `namespace`. */
async function serviceAccountKubeconfig(namespace: string): Promise<{ tokenConfig: KubeConfig; tokenKubeconfig: string }> {
  const { cluster: local, core } = cluster();
  const token = await core.createNamespacedServiceAccountToken({ name: "appstack-operator", namespace, body: { spec: { expirationSeconds: 3600, audiences: [] } } });
  const cluster0 = loadKubeConfig(local.kubeconfig).getCurrentCluster()!;
  const tokenConfig = new KubeConfig();
  tokenConfig.loadFromOptions({
    clusters: [cluster0],
    users: [{ name: "operator", token: token.status?.token }],
    contexts: [{ name: "operator", cluster: cluster0.name, user: "operator" }],
    currentContext: "operator",
  });
  const tokenKubeconfig = join(stateDir, `${namespace}.kubeconfig`);
  writeFileSync(tokenKubeconfig, tokenConfig.exportConfig(), { mode: 0o600 });
  return { tokenConfig, tokenKubeconfig };
}

test("the install component creates CRDs that the API server serves and validates", async () => {
  const kubeconfig = cluster().cluster.kubeconfig;
  const options = await workspaceOptions({ backendUrl: `file://${stateDir}`, pulumiHome: join(stateDir, "home"), passphrase: "install-test", binaries: engineBinaries(), kubeconfig }, "appstack", new StateIo(60_000));
  const program = () => Promise.resolve({ crds: new AppstackCrds("appstack").names });
  const stack = await LocalWorkspace.createOrSelectStack({ stackName: "install", projectName: "appstack", program }, options);
  const up = await stack.up();
  assert.deepEqual(up.outputs["crds"]?.value, ["apps.appstack.dev", "memcacheds.appstack.dev"]);

  const api = loadKubeConfig(kubeconfig).makeApiClient(ApiextensionsV1Api);
  const crd = await api.readCustomResourceDefinition({ name: "apps.appstack.dev" });
  assert.deepEqual(crd.spec.versions[0]?.additionalPrinterColumns?.map((c) => c.name), ["Image", "Desired", "Ready", "Status", "Plan", "Age"]);
  const workloads = new Workloads(kubeconfig);
  const created = await eventually("Apps to be served", async () => workloads.create({ kind: "App", metadata: { name: "probe", namespace: "default" }, spec: { image: "nginx" } }));
  // Defaults from the schema came through Pulumi too.
  assert.equal((created.spec as { replicas?: number }).replicas, 1);
  assert.equal((created.spec as { updatePolicy?: string }).updatePolicy, "Auto");
  await assert.rejects(workloads.create({ kind: "App", metadata: { name: "bad", namespace: "default" }, spec: { image: "nginx", replicas: -1 } }), /replicas/);
  await workloads.delete("App", "default", "probe");

  await stack.destroy();
  await assert.rejects(api.readCustomResourceDefinition({ name: "apps.appstack.dev" }), isNotFound);
});

test("the install creates least-privilege RBAC, and the operator reconciles with its ServiceAccount's token", async () => {
  const { cluster: local, core } = cluster();
  const adminConfig = loadKubeConfig(local.kubeconfig);
  // The local cluster has no volume provisioner: a static volume for the state claim to bind.
  await core.createPersistentVolume({
    body: { metadata: { name: "appstack-state" }, spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], hostPath: { path: join(stateDir, "pv") } } },
  });
  const options = await workspaceOptions({ backendUrl: `file://${stateDir}`, pulumiHome: join(stateDir, "home"), passphrase: "install-test", binaries: engineBinaries(), kubeconfig: local.kubeconfig }, "appstack", new StateIo(60_000));
  const program = () => {
    const install = new AppstackInstall("appstack", { passphrase: "stack-secret", image: "appstack:test" });
    return Promise.resolve({ namespace: install.namespace, serviceAccount: install.serviceAccount });
  };
  const stack = await LocalWorkspace.createOrSelectStack({ stackName: "operator", projectName: "appstack", program }, options);
  const up = await stack.up();
  assert.equal(up.outputs["namespace"]?.value, "appstack-system");

  const apps = adminConfig.makeApiClient(AppsV1Api);
  const deployment = await apps.readNamespacedDeployment({ name: "appstack-operator", namespace: "appstack-system" });
  const container = deployment.spec?.template.spec?.containers[0];
  assert.equal(container?.image, "appstack:test");
  assert.equal(container?.readinessProbe?.httpGet?.path, "/readyz");
  assert.equal(container?.livenessProbe?.httpGet?.path, "/healthz");
  assert.deepEqual(passphraseSource(deployment), ["/etc/appstack/passphrase/passphrase", "appstack-operator-passphrase", "/etc/appstack/passphrase", true]);
  // The state volume is ReadWriteOnce: an upgrade's new pod must not wait for the old pod's volume.
  assert.deepEqual(strategyOf(deployment), ["Recreate", undefined, undefined]);
  const secret = await core.readNamespacedSecret({ name: "appstack-operator-passphrase", namespace: "appstack-system" });
  assert.equal(Buffer.from(secret.data?.["passphrase"] ?? "", "base64").toString(), "stack-secret");
  assert.equal((await core.readNamespacedPersistentVolumeClaim({ name: "appstack-operator-state", namespace: "appstack-system" })).status?.phase, "Bound");
  // The passphrase is a secret in the stack state too.
  const state = JSON.stringify((await stack.exportStack()).deployment);
  assert.ok(!state.includes("stack-secret"));

  // The operator, outside the cluster, with nothing but the installed ServiceAccount's token.
  const { tokenConfig, tokenKubeconfig } = await serviceAccountKubeconfig("appstack-system");
  const operator = await startOperatorProcess(tokenKubeconfig, { env: { APPSTACK_LEASE_NAMESPACE: "appstack-system" }, installApi: false });
  try {
    const workloads = new Workloads(local.kubeconfig);
    await workloads.create({ kind: "App", metadata: { name: "rbac-ok", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
    await workloads.ready("App", "default", "rbac-ok");
    await workloads.delete("App", "default", "rbac-ok");
    await workloads.gone("App", "default", "rbac-ok");
  } finally {
    await disposeOperator(operator);
  }

  // What those credentials may not do.
  const asOperator = tokenConfig.makeApiClient(CoreV1Api);
  const forbidden = (error: { code?: number }) => error.code === 403;
  await assert.rejects(asOperator.listNamespacedSecret({ namespace: "kube-system" }), forbidden);
  await assert.rejects(asOperator.readNamespacedSecret({ name: "appstack-operator-passphrase", namespace: "appstack-system" }), forbidden);
  await assert.rejects(asOperator.deleteNamespace({ name: "default" }), forbidden);
  await assert.rejects(tokenConfig.makeApiClient(RbacAuthorizationV1Api).createClusterRole({ body: { metadata: { name: "escalate" }, rules: [] } }), forbidden);

  await stack.destroy();
  await assert.rejects(core.readNamespacedServiceAccount({ name: "appstack-operator", namespace: "appstack-system" }), (error: { code?: number }) => error.code === 404);
});

// A namespace-scoped install, shared by the two tests below (the second destroys it).
const scopedNamespace = "appstack-scoped";
const binding = "appstack-operator-appstack";
const rbacInUseFinalizer = "appstack.dev/rbac-in-use";
const scopedEnv = { APPSTACK_NAMESPACES: "tenant-a,tenant-b", APPSTACK_LEASE_NAMESPACE: scopedNamespace, APPSTACK_RBAC_BINDING: binding };
let scoped: { stack: Stack; tokenKubeconfig: string; operatorState: string } | undefined;
after(() => {
  if (scoped && !process.env["APPSTACK_TEST_LOGS"]) rmSync(scoped.operatorState, { recursive: true, force: true });
});

test("a namespace-scoped install: deleting a watched namespace with an App in it completes, the App's stack destroyed", async () => {
  const { cluster: local, core } = cluster();
  const rbac = loadKubeConfig(local.kubeconfig).makeApiClient(RbacAuthorizationV1Api);
  for (const name of ["tenant-a", "tenant-b"]) await core.createNamespace({ body: { metadata: { name } } });
  const options = await workspaceOptions({ backendUrl: `file://${stateDir}`, pulumiHome: join(stateDir, "home"), passphrase: "install-test", binaries: engineBinaries(), kubeconfig: local.kubeconfig }, "appstack", new StateIo(60_000));
  // A shared backend (never reached here: the operator below runs outside the cluster), so no volume.
  const program = () => {
    const install = new AppstackInstall("appstack", { passphrase: "stack-secret", image: "appstack:test", namespace: scopedNamespace, watchNamespaces: ["tenant-a", "tenant-b"], backendUrl: "s3://appstack-test-unused" });
    return Promise.resolve({ namespace: install.namespace });
  };
  const stack = await LocalWorkspace.createOrSelectStack({ stackName: "scoped", projectName: "appstack", program }, options);
  await stack.up();
  const { tokenKubeconfig } = await serviceAccountKubeconfig(scopedNamespace);
  const first = await startOperatorProcess(tokenKubeconfig, { env: scopedEnv, installApi: false });
  scoped = { stack, tokenKubeconfig, operatorState: first.stateDir };
  const workloads = new Workloads(local.kubeconfig);
  let restarted: OperatorProcess | undefined;
  try {
    await workloads.create({ kind: "App", metadata: { name: "doomed", namespace: "tenant-a" }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
    await workloads.ready("App", "tenant-a", "doomed");
    const heldWhileApps = (await rbac.readNamespacedRoleBinding({ name: binding, namespace: "tenant-a" })).metadata?.finalizers;
    // What the terminating-namespace policy reads (operator/kube/namespaces.ts), granted by the binding in that namespace.
    assert.equal((await loadKubeConfig(tokenKubeconfig).makeApiClient(CoreV1Api).readNamespace({ name: "tenant-a" })).metadata?.name, "tenant-a");
    // Nothing of appstack's in tenant-b: its binding is held by nothing.
    assert.equal((await rbac.readNamespacedRoleBinding({ name: binding, namespace: "tenant-b" })).metadata?.finalizers, undefined);

    // The operator is down while the namespace controller deletes what it can, so that its rights
    // afterwards can only come from a binding that is being deleted.
    await first.stop();
    await core.deleteNamespace({ name: "tenant-a" });
    const bindingDeleting = await eventually("the namespace controller to have deleted the App and the binding as far as it can", async () => {
      const app = await workloads.get("App", "tenant-a", "doomed");
      const left = await orUndefined(() => rbac.readNamespacedRoleBinding({ name: binding, namespace: "tenant-a" }));
      if (!app.metadata.deletionTimestamp || (left && !left.metadata?.deletionTimestamp)) return undefined;
      return { deleting: left !== undefined };
    });
    restarted = await startOperatorProcess(tokenKubeconfig, { env: scopedEnv, installApi: false, stateDir: first.stateDir });
    await eventually("namespace tenant-a to be gone", async () => ((await orUndefined(() => core.readNamespace({ name: "tenant-a" }))) ? undefined : true), 90_000);
    assert.deepEqual(heldWhileApps, [rbacInUseFinalizer], "the binding was not kept while the App had its finalizer");
    assert.ok(bindingDeleting.deleting, "the binding went before the App");
    // Destroyed with the binding's rights, not forgotten for want of them.
    assert.ok(!existsSync(checkpointPath(first.stateDir, "App", "tenant-a", "doomed")), "the App's stack is still in the state");
    const metrics = (await httpGet(`http://127.0.0.1:${restarted.healthPort}/metrics`)).body;
    assert.equal(metricValue(metrics, "appstack_pulumi_operations_total", { operation: "destroy", result: "succeeded" }), 1);
    assert.equal(metricValue(metrics, "appstack_reconcile_total", { kind: "App", result: "forgotten" }), undefined);
  } finally {
    await first.stop();
    await restarted?.stop();
  }
  const deployment = await cluster().apps.readNamespacedDeployment({ name: "appstack-operator", namespace: scopedNamespace });
  // No volume to wait for: the new pod starts beside the old one, which hands its lease over.
  assert.deepEqual(strategyOf(deployment), ["RollingUpdate", 0, 1]);
  assert.ok(deployment.spec?.template.spec?.containers[0]?.env?.some((e) => e.name === "APPSTACK_RBAC_BINDING" && e.value === binding));
});

test("a namespace-scoped install: a watched namespace that is gone holds neither the start nor the other namespace, and is picked up once it is back", async () => {
  assert.ok(scoped, "the namespace-scoped install failed");
  const { cluster: local, core } = cluster();
  const rbac = loadKubeConfig(local.kubeconfig).makeApiClient(RbacAuthorizationV1Api);
  const workloads = new Workloads(local.kubeconfig);
  // tenant-a was deleted above, its binding with it: every list there answers the operator 403.
  // A short sync deadline, so that an operator that waits for tenant-a's caches exits within the wait below.
  // Short watches, so that a running operator meets the 403 of a namespace deleted under it soon (below).
  const operator = await startOperatorProcess(scoped.tokenKubeconfig, { env: { ...scopedEnv, APPSTACK_CACHE_SYNC_TIMEOUT_SECONDS: "20", APPSTACK_WATCH_TIMEOUT_SECONDS: "5" }, installApi: false });
  const metric = async (namespace: string) => metricValue((await httpGet(`http://127.0.0.1:${operator.healthPort}/metrics`)).body, "appstack_watched_namespace_unavailable", { namespace });
  try {
    // Started (the gauge is set once the caches synced on the leader) with tenant-a unreadable.
    await eventually("the operator to start with tenant-a unavailable", async () => ((await metric("tenant-a")) === 1 ? true : undefined), 30_000);
    assert.equal((await httpGet(`http://127.0.0.1:${operator.healthPort}/readyz`)).status, 200);
    await workloads.create({ kind: "App", metadata: { name: "present", namespace: "tenant-b" }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
    await workloads.ready("App", "tenant-b", "present");
    assert.equal(await metric("tenant-b"), 0);
    assert.equal(await metric("tenant-a"), 1);

    // Back: the namespace, and the operator's binding there as the install makes it.
    const model = await rbac.readNamespacedRoleBinding({ name: binding, namespace: "tenant-b" });
    await core.createNamespace({ body: { metadata: { name: "tenant-a" } } });
    await rbac.createNamespacedRoleBinding({ namespace: "tenant-a", body: { metadata: { name: binding, namespace: "tenant-a", labels: model.metadata?.labels ?? {} }, roleRef: model.roleRef, subjects: model.subjects ?? [] } });
    await workloads.create({ kind: "App", metadata: { name: "returned", namespace: "tenant-a" }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
    // Within the 30 s cap of the retry's backoff, plus the App's update.
    await workloads.ready("App", "tenant-a", "returned", 60_000);
    assert.equal(await metric("tenant-a"), 0);
    assert.equal(operator.child.exitCode, null, "the operator restarted");
    const lines = (what: string) => readFileSync(operator.logFile, "utf8").split("\n").filter((line) => line.includes(what) && line.includes("tenant-a"));
    assert.equal(lines("watched namespace does not exist or is not readable").length, 1, "not one warning for tenant-a");
    assert.equal(lines("watched namespace is readable again").length, 1);
    assert.equal(readFileSync(operator.logFile, "utf8").split("\n").filter((line) => line.includes("tenant-b") && line.includes("watched namespace")).length, 0);

    await Promise.all([workloads.delete("App", "tenant-a", "returned"), workloads.delete("App", "tenant-b", "present")]);
    await Promise.all([workloads.gone("App", "tenant-a", "returned"), workloads.gone("App", "tenant-b", "present")]);
    // Deleted again, under the running operator: its watches there end and meet the 403, once said.
    await core.deleteNamespace({ name: "tenant-a" });
    await eventually("namespace tenant-a to be gone", async () => ((await orUndefined(() => core.readNamespace({ name: "tenant-a" }))) ? undefined : true), 90_000);
    await eventually("the running operator to find tenant-a unavailable", async () => ((await metric("tenant-a")) === 1 ? true : undefined), 30_000);
    assert.equal(lines("watched namespace does not exist or is not readable").length, 2, "not one warning for tenant-a's second going");
    assert.equal(lines("watch failed").length, 0, "warned per watch as well");
    assert.equal(operator.child.exitCode, null, "the operator restarted");
  } finally {
    await disposeOperator(operator);
  }
});

test("a namespace-scoped install: a new leader breaks the stack lock of a replica whose pod is gone", async () => {
  assert.ok(scoped, "the namespace-scoped install failed");
  const { cluster: local, core } = cluster();
  const rbac = loadKubeConfig(local.kubeconfig).makeApiClient(RbacAuthorizationV1Api);
  const workloads = new Workloads(local.kubeconfig);
  const replicas: OperatorProcess[] = [];
  const replica = async (hostname: string) => {
    // Only tenant-b: what this test is about. Each replica runs as one of the install's pods would: its hostname is that pod's name.
    replicas.push(await startOperatorProcess(scoped!.tokenKubeconfig, { env: { ...scopedEnv, APPSTACK_NAMESPACES: "tenant-b", POD_NAMESPACE: scopedNamespace }, installApi: false, stateDir: scoped!.operatorState, hostname }));
    return replicas.at(-1)!;
  };
  /** The install's running pod, other than `but`. */
  const installPod = (but?: string) => eventually("the install's pod running", async () => {
    const pods = (await core.listNamespacedPod({ namespace: scopedNamespace, labelSelector: "app.kubernetes.io/name=appstack-operator" })).items;
    return pods.find((pod) => pod.metadata?.name !== but && !pod.metadata?.deletionTimestamp && pod.status?.containerStatuses?.[0]?.state?.running)?.metadata?.name;
  });
  try {
    // Killed mid-update (its Deployment create held): its stack lock stays, naming its host, a pod of the install.
    const deadPod = await installPod();
    const dead = await replica(deadPod);
    const hold = await holdWrites(local, "deployments", "CREATE", "tenant-b", "locked");
    await workloads.create({ kind: "App", metadata: { name: "locked", namespace: "tenant-b" }, spec: { image: "nginx:1.27", replicas: 1 } });
    await hold.held;
    await dead.stop("SIGKILL");
    const holders = lockFiles(scoped.operatorState).filter((file) => file.endsWith(".json")).map((file) => (JSON.parse(readFileSync(file, "utf8")) as { hostname: string }).hostname);
    assert.deepEqual(holders, [deadPod]);
    await hold.release();
    // Its pod gone (its ReplicaSet starts another); the dead leader's Lease deleted to spare the test its 15 s expiry.
    await core.deleteNamespacedPod({ name: deadPod, namespace: scopedNamespace, gracePeriodSeconds: 0 });
    await loadKubeConfig(local.kubeconfig).makeApiClient(CoordinationV1Api).deleteNamespacedLease({ name: "appstack-operator", namespace: scopedNamespace });
    await replica(await installPod(deadPod));
    // The new leader read the dead pod (not found, and named by the install's ReplicaSet: the lock's engine is gone) and broke its lock.
    await workloads.ready("App", "tenant-b", "locked", 90_000);
    assert.deepEqual((await rbac.readNamespacedRoleBinding({ name: binding, namespace: "tenant-b" })).metadata?.finalizers, [rbacInUseFinalizer]);
    // The operator's token may change that binding's finalizers (it just did), not whom it grants.
    const asOperator = loadKubeConfig(scoped.tokenKubeconfig).makeApiClient(RbacAuthorizationV1Api);
    const widen = [{ op: "add", path: "/subjects/-", value: { kind: "ServiceAccount", name: "default", namespace: "tenant-b" } }];
    await assert.rejects(
      asOperator.patchNamespacedRoleBinding({ name: binding, namespace: "tenant-b", body: widen, dryRun: "All" }, setHeaderOptions("Content-Type", PatchStrategy.JsonPatch)),
      (error: { code?: number; body?: unknown }) => error.code === 403 && String(error.body).includes("not its subjects"),
    );
    // The last App of a namespace that stays lets the binding go: nothing holds an uninstall.
    await workloads.delete("App", "tenant-b", "locked");
    await workloads.gone("App", "tenant-b", "locked");
    await eventually("the binding in tenant-b to be let go", async () => ((await rbac.readNamespacedRoleBinding({ name: binding, namespace: "tenant-b" })).metadata?.finalizers ? undefined : true));
  } finally {
    for (const each of replicas) await each.stop().catch(() => undefined);
  }
  await scoped.stack.destroy();
  await assert.rejects(rbac.readNamespacedRoleBinding({ name: binding, namespace: "tenant-b" }), isNotFound);
});
