// The compatibility statement of docs/install.md, proven on its oldest Kubernetes minor: a local
// control plane whose kube-apiserver, kube-controller-manager and kube-scheduler are built from
// toolchain/kube-1.30 (etcd and kwok as every other file's). On it the CRDs install and the API
// server enforces their CEL rules, the admission policy refuses what it is there for, and an App
// lives its whole life through the operator's own process and the real Pulumi engine. Every
// assertion reads the API server. Opt-in (APPSTACK_COMPAT_TESTS=1, and `npm run soak`): its first
// run builds the three binaries, a few minutes that the default CI does not pay.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CoreV1Api, VersionApi, type V1Deployment } from "@kubernetes/client-node";
import { mergePatch } from "../../operator/kube/clients.ts";
import { startCluster, type LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { oldestControlPlaneTools, pinnedVersion } from "../../toolchain/tools.ts";
import { eventually, isNotFound } from "../helpers/cluster.ts";
import { disposeOperator, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

const skip = process.env["APPSTACK_COMPAT_TESTS"] === "1" ? false : "APPSTACK_COMPAT_TESTS=1 runs it (and `npm run soak`): it builds and starts the oldest supported Kubernetes minor's control plane";
const oldest = pinnedVersion(oldestControlPlaneTools[0]!);
const namespace = "compat";

/** The API server's refusal: its HTTP status and the message of its Status body. */
async function refusal(write: () => Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await write();
  } catch (error) {
    const { code, body } = error as { code?: number; body?: unknown };
    const parsed = (typeof body === "string" ? JSON.parse(body) : body) as { message?: string } | undefined;
    return { code: code ?? 0, message: parsed?.message ?? String(error) };
  }
  throw new Error("the API server accepted the write");
}

/** What the App's spec sets on its Deployment, and whose child it is. */
function shapeOf(deployment: V1Deployment): { replicas?: number; image?: string; owner?: string } {
  return { replicas: deployment.spec?.replicas, image: deployment.spec?.template.spec?.containers[0]?.image, owner: deployment.metadata?.ownerReferences?.[0]?.uid };
}

async function gone(read: () => Promise<unknown>): Promise<boolean | undefined> {
  try {
    await read();
    return undefined;
  } catch (error) {
    if (isNotFound(error)) return true;
    throw error;
  }
}

describe(`on Kubernetes ${oldest}, the oldest supported minor`, { skip }, () => {
  let cluster: LocalCluster | undefined;
  let operator: OperatorProcess | undefined;
  let workloads: Workloads;
  let core: CoreV1Api;
  let apps: AppsV1Api;

  before(async () => {
    cluster = await startCluster({ controlPlane: oldestControlPlaneTools, exitOnSignal: true, log: (line) => console.error(line) });
    const kc = loadKubeConfig(cluster.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    // startOperatorProcess installs the CRDs and the admission policies first, as the operator's install does.
    operator = await startOperatorProcess(cluster.kubeconfig, { env: { APPSTACK_LEADER_ELECT: "false" } });
    workloads = new Workloads(cluster.kubeconfig);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await disposeOperator(operator).catch((error: unknown) => console.error("operator stop failed:", error));
    await cluster?.stop();
  });

  test("the API server is that release", async () => {
    const info = await loadKubeConfig(cluster!.kubeconfig).makeApiClient(VersionApi).getCode();
    assert.equal(info.gitVersion, oldest);
  });

  test("the CRDs' CEL rules refuse a bad App with their message, the quantity rules included", async () => {
    const badName = await refusal(() => workloads.create({ kind: "App", metadata: { name: "web.v1", namespace }, spec: { image: "nginx:1.27", port: 8080 } }, { dryRun: true }));
    assert.equal(badName.code, 422);
    assert.match(badName.message, /metadata\.name must be a DNS-1035 label of at most 63 characters/);
    const resources = { requests: { cpu: "2" }, limits: { cpu: "1" } };
    const overLimit = await refusal(() => workloads.create({ kind: "App", metadata: { name: "greedy", namespace }, spec: { image: "nginx:1.27", port: 8080, resources } }, { dryRun: true }));
    assert.equal(overLimit.code, 422);
    assert.match(overLimit.message, /every request must be less than or equal to its limit/);
    // The same App within its limit passes the same rules.
    await workloads.create({ kind: "App", metadata: { name: "greedy", namespace }, spec: { image: "nginx:1.27", port: 8080, resources: { requests: { cpu: "1" }, limits: { cpu: "2" } } } }, { dryRun: true });
  });

  test("the ownership policy refuses an update that makes an existing Deployment an appstack object's child", async () => {
    const labels = { app: "squatter" };
    await apps.createNamespacedDeployment({
      namespace,
      body: { metadata: { name: "squatter" }, spec: { selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: "main", image: "nginx:1.27" }] } } } },
    });
    const ownerReferences = [{ apiVersion: "appstack.dev/v1alpha1", kind: "App", name: "squatter", uid: "00000000-0000-4000-8000-000000000001", controller: true }];
    const takeover = await refusal(() => apps.patchNamespacedDeployment({ name: "squatter", namespace, body: { metadata: { ownerReferences } } }, mergePatch));
    assert.equal(takeover.code, 403);
    assert.match(takeover.message, /appstack\.dev-ownership/);
    assert.match(takeover.message, /appstack does not take over an existing object/);
    assert.equal((await apps.readNamespacedDeployment({ name: "squatter", namespace })).metadata?.ownerReferences, undefined);
  });

  test("an App becomes Ready through the operator and the Pulumi engine, with its Deployment and Service", async () => {
    await workloads.create({ kind: "App", metadata: { name: "web", namespace }, spec: { image: "nginx:1.27", replicas: 2, port: 8080 } });
    const ready = await workloads.ready("App", namespace, "web", 180_000);
    assert.equal(ready.status?.stack?.lastOperation?.kind, "up");
    assert.equal(ready.status?.stack?.lastOperation?.result, "succeeded");
    const deployment = await eventually("the Deployment's 2 ready replicas", async () => {
      const live = await apps.readNamespacedDeployment({ name: "web", namespace });
      return live.status?.readyReplicas === 2 ? live : undefined;
    });
    assert.deepEqual(shapeOf(deployment), { replicas: 2, image: "nginx:1.27", owner: ready.metadata.uid });
    const service = await core.readNamespacedService({ name: "web", namespace });
    assert.equal(service.spec?.ports?.[0]?.port, 8080);
  });

  test("a spec change is applied to the Deployment", async () => {
    const before = await workloads.get("App", namespace, "web");
    await workloads.mergeSpec("App", namespace, "web", { image: "nginx:1.28", replicas: 3 });
    const changed = await workloads.ready("App", namespace, "web", 180_000);
    assert.ok((changed.metadata.generation ?? 0) > (before.metadata.generation ?? 0));
    const live = await apps.readNamespacedDeployment({ name: "web", namespace });
    assert.deepEqual(shapeOf(live), { replicas: 3, image: "nginx:1.28", owner: changed.metadata.uid });
  });

  test("a deleted App takes its Deployment and Service with it, then goes", async () => {
    await workloads.delete("App", namespace, "web");
    await workloads.gone("App", namespace, "web", 180_000);
    assert.equal(await gone(() => apps.readNamespacedDeployment({ name: "web", namespace })), true);
    assert.equal(await gone(() => core.readNamespacedService({ name: "web", namespace })), true);
  });
});
