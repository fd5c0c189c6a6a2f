// `pulumi up` on the repository's own program with the pinned CLI (through `appstack pulumi`):
// the install program's resources appear in the API server; preview then shows no changes;
// destroy removes them and says so.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ApiextensionsV1Api } from "@kubernetes/client-node";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { isNotFound, useCluster } from "../helpers/cluster.ts";

const cluster = useCluster();
const stateDir = mkdtempSync(join(tmpdir(), "appstack-pulumi-cli-"));
const stack = `e2e-${process.pid}`;
after(() => {
  rmSync(stateDir, { recursive: true, force: true });
  rmSync(join(repoRoot, `Pulumi.${stack}.yaml`), { force: true });
});

function pulumi(...args: string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [join(repoRoot, "operator/cmd/appstack.mjs"), "pulumi", ...args, "--non-interactive"], {
    cwd: repoRoot,
    encoding: "utf8",
    env: {
      ...process.env,
      KUBECONFIG: cluster().cluster.kubeconfig,
      PULUMI_BACKEND_URL: `file://${stateDir}`,
      PULUMI_HOME: join(stateDir, "home"),
      PULUMI_CONFIG_PASSPHRASE: "cli-test",
    },
  });
  return { status: result.status, output: `${result.stdout}\n${result.stderr}` };
}

test("pulumi preview, up and destroy of the install program", async () => {
  const kc = loadKubeConfig(cluster().cluster.kubeconfig);
  const { core } = cluster();
  // The local cluster has no volume provisioner: a static volume for the state claim.
  await core.createPersistentVolume({
    body: { metadata: { name: "appstack-cli-state" }, spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], hostPath: { path: join(stateDir, "pv") } } },
  });
  assert.equal(pulumi("stack", "init", stack).status, 0);
  assert.equal(pulumi("config", "set", "--secret", "appstack:passphrase", "from-stack-config", "--stack", stack).status, 0);
  assert.equal(pulumi("config", "set", "appstack:image", "appstack:e2e", "--stack", stack).status, 0);

  const preview = pulumi("preview", "--stack", stack);
  assert.equal(preview.status, 0, preview.output);
  assert.match(preview.output, /\+ .*kubernetes:apps\/v1:Deployment/);
  await assert.rejects(core.readNamespace({ name: "appstack-system" }), isNotFound);

  const up = pulumi("up", "--yes", "--stack", stack);
  assert.equal(up.status, 0, up.output);
  const crd = await kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: "memcacheds.appstack.dev" });
  assert.equal(crd.spec.names.kind, "Memcached");
  const operator = await cluster().apps.readNamespacedDeployment({ name: "appstack-operator", namespace: "appstack-system" });
  assert.equal(operator.spec?.template.spec?.containers[0]?.image, "appstack:e2e");
  assert.equal(operator.status?.readyReplicas, 1);
  assert.equal(operator.spec?.template.spec?.serviceAccountName, "appstack-operator");
  const secret = await core.readNamespacedSecret({ name: "appstack-operator-passphrase", namespace: "appstack-system" });
  assert.equal(Buffer.from(secret.data?.["passphrase"] ?? "", "base64").toString(), "from-stack-config");

  const again = pulumi("preview", "--expect-no-changes", "--stack", stack);
  assert.equal(again.status, 0, again.output);

  const destroy = pulumi("destroy", "--yes", "--stack", stack);
  assert.equal(destroy.status, 0, destroy.output);
  await assert.rejects(kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: "memcacheds.appstack.dev" }), isNotFound);
  await assert.rejects(cluster().apps.readNamespacedDeployment({ name: "appstack-operator", namespace: "appstack-system" }), isNotFound);
});
