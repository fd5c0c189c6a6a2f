// The install program's components through the real engine: the API server serves the CRDs, with
// their validation; the operator runs with the installed ServiceAccount and nothing more.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { LocalWorkspace } from "@pulumi/pulumi/automation/index.js";
import { AppstackCrds } from "../../components/crds.ts";
import { AppstackInstall } from "../../components/install.ts";
import { workspaceOptions } from "../../operator/pulumi/engine.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventually, isNotFound, useCluster } from "../helpers/cluster.ts";
import { disposeOperator, startOperatorProcess, Workloads } from "../helpers/operator.ts";
import { engineBinaries } from "../../toolchain/tools.ts";

const cluster = useCluster();
const stateDir = mkdtempSync(join(tmpdir(), "appstack-install-"));
after(() => rmSync(stateDir, { recursive: true, force: true }));

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
  assert.ok(container?.env?.some((e) => e.name === "APPSTACK_PASSPHRASE" && e.valueFrom?.secretKeyRef?.name === "appstack-operator-passphrase"));
  const secret = await core.readNamespacedSecret({ name: "appstack-operator-passphrase", namespace: "appstack-system" });
  assert.equal(Buffer.from(secret.data?.["passphrase"] ?? "", "base64").toString(), "stack-secret");
  assert.equal((await core.readNamespacedPersistentVolumeClaim({ name: "appstack-operator-state", namespace: "appstack-system" })).status?.phase, "Bound");
  // The passphrase is a secret in the stack state too.
  const state = JSON.stringify((await stack.exportStack()).deployment);
  assert.ok(!state.includes("stack-secret"));

  // The operator, outside the cluster, with nothing but the installed ServiceAccount's token.
  const token = await core.createNamespacedServiceAccountToken({ name: "appstack-operator", namespace: "appstack-system", body: { spec: { expirationSeconds: 3600, audiences: [] } } });
  const cluster0 = adminConfig.getCurrentCluster()!;
  const tokenConfig = new KubeConfig();
  tokenConfig.loadFromOptions({
    clusters: [cluster0],
    users: [{ name: "operator", token: token.status?.token }],
    contexts: [{ name: "operator", cluster: cluster0.name, user: "operator" }],
    currentContext: "operator",
  });
  const tokenKubeconfig = join(stateDir, "operator.kubeconfig");
  writeFileSync(tokenKubeconfig, tokenConfig.exportConfig(), { mode: 0o600 });
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
