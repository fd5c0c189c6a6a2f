// The whole chain, with nothing faked: the Automation API drives the real Pulumi engine, which
// drives the real Kubernetes provider, against a real kube-apiserver whose pods kwok runs.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { readFileSync } from "node:fs";
import * as k8s from "@pulumi/kubernetes";
import { LocalWorkspace } from "@pulumi/pulumi/automation/index.js";
import { workspaceOptions } from "../../operator/pulumi/engine.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { eventually, isNotFound, useCluster } from "../helpers/cluster.ts";
import { engineBinaries } from "../../toolchain/tools.ts";

const cluster = useCluster();
const stateDir = mkdtempSync(join(tmpdir(), "appstack-smoke-"));
after(() => rmSync(stateDir, { recursive: true, force: true }));

test("a Pulumi stack creates a Deployment whose pods run on kwok nodes, and destroy removes it", async () => {
  const { core, apps } = cluster();
  const kubeconfig = readFileSync(cluster().cluster.kubeconfig, "utf8");
  const labels = { "app.kubernetes.io/name": "smoke" };
  const program = async () => {
    const provider = new k8s.Provider("local", { kubeconfig, enableServerSideApply: true });
    const deployment = new k8s.apps.v1.Deployment(
      "smoke",
      {
        metadata: { name: "smoke", namespace: "default" },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: "web", image: "nginx:1.27" }] } },
        },
      },
      { provider },
    );
    return { readyReplicas: deployment.status.readyReplicas };
  };
  const options = await workspaceOptions(
    { backendUrl: `file://${stateDir}`, pulumiHome: join(stateDir, "home"), passphrase: "smoke-test", binaries: engineBinaries() },
    "smoke",
    new StateIo(60_000),
  );
  const stack = await LocalWorkspace.createOrSelectStack({ stackName: "smoke", projectName: "smoke", program }, options);

  const up = await stack.up();
  assert.equal(up.summary.result, "succeeded");
  // Pulumi's await logic returned only once the rollout completed; confirm it with the API server.
  const deployment = await apps.readNamespacedDeployment({ name: "smoke", namespace: "default" });
  assert.equal(deployment.spec?.replicas, 2);
  assert.equal(deployment.status?.readyReplicas, 2);
  assert.equal(deployment.spec?.template.spec?.containers[0]?.image, "nginx:1.27");
  const pods = await core.listNamespacedPod({ namespace: "default", labelSelector: "app.kubernetes.io/name=smoke" });
  assert.equal(pods.items.length, 2);
  for (const pod of pods.items) {
    assert.equal(pod.status?.phase, "Running");
    assert.match(pod.spec?.nodeName ?? "", /^kwok-node-/);
  }
  assert.equal(up.outputs["readyReplicas"]?.value, 2);

  const destroy = await stack.destroy();
  assert.equal(destroy.summary.result, "succeeded");
  await assert.rejects(apps.readNamespacedDeployment({ name: "smoke", namespace: "default" }), isNotFound);
  await eventually("the pods to be gone", async () => {
    const left = await core.listNamespacedPod({ namespace: "default", labelSelector: "app.kubernetes.io/name=smoke" });
    return left.items.length === 0 ? true : undefined;
  });
  await stack.workspace.removeStack("smoke");
});
