// The install program's component through the real engine: the API server serves the CRDs it
// creates, with their validation, and destroy removes them.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ApiextensionsV1Api } from "@kubernetes/client-node";
import { LocalWorkspace } from "@pulumi/pulumi/automation/index.js";
import { AppstackCrds } from "../../components/crds.ts";
import { workspaceOptions } from "../../operator/engine.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventually, isNotFound, useCluster } from "../helpers/cluster.ts";
import { Workloads } from "../helpers/operator.ts";

const cluster = useCluster();
const stateDir = mkdtempSync(join(tmpdir(), "appstack-install-"));
after(() => rmSync(stateDir, { recursive: true, force: true }));

test("the install component creates CRDs that the API server serves and validates", async () => {
  const kubeconfig = cluster().cluster.kubeconfig;
  const options = await workspaceOptions({ backendUrl: `file://${stateDir}`, pulumiHome: join(stateDir, "home"), passphrase: "install-test", kubeconfig }, "appstack");
  const program = () => Promise.resolve({ crds: new AppstackCrds("appstack").names });
  const stack = await LocalWorkspace.createOrSelectStack({ stackName: "install", projectName: "appstack", program }, options);
  const up = await stack.up();
  assert.deepEqual(up.outputs["crds"]?.value, ["apps.appstack.dev", "memcacheds.appstack.dev"]);

  const api = loadKubeConfig(kubeconfig).makeApiClient(ApiextensionsV1Api);
  const crd = await api.readCustomResourceDefinition({ name: "apps.appstack.dev" });
  assert.equal(crd.spec.versions[0]?.additionalPrinterColumns?.length, 5);
  const workloads = new Workloads(kubeconfig);
  const created = await eventually("Apps to be served", async () => workloads.create({ kind: "App", metadata: { name: "probe", namespace: "default" }, spec: { image: "nginx" } }));
  // Defaults from the schema came through Pulumi too.
  assert.equal((created.spec as { replicas?: number }).replicas, 1);
  await assert.rejects(workloads.create({ kind: "App", metadata: { name: "bad", namespace: "default" }, spec: { image: "nginx", replicas: -1 } }), /replicas/);
  await workloads.delete("App", "default", "probe");

  await stack.destroy();
  await assert.rejects(api.readCustomResourceDefinition({ name: "apps.appstack.dev" }), isNotFound);
});
