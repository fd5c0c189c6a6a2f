// `pulumi up` on the repository's own program with the pinned CLI (through `appstack pulumi`):
// the install program's resources appear in the API server; preview then shows no changes;
// destroy removes them.
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
  const result = spawnSync(process.execPath, [join(repoRoot, "operator/appstack.mjs"), "pulumi", ...args, "--non-interactive"], {
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

test("pulumi up, preview and destroy of the install program", () => {
  const init = pulumi("stack", "init", stack);
  assert.equal(init.status, 0, init.output);
  const up = pulumi("up", "--yes", "--stack", stack);
  assert.equal(up.status, 0, up.output);
  assert.match(up.output, /apps\.appstack\.dev/);
  const preview = pulumi("preview", "--expect-no-changes", "--stack", stack);
  assert.equal(preview.status, 0, preview.output);
  const destroy = pulumi("destroy", "--yes", "--stack", stack);
  assert.equal(destroy.status, 0, destroy.output);
});

test("the CRDs existed while the stack was up and are gone after destroy", async () => {
  const api = loadKubeConfig(cluster().cluster.kubeconfig).makeApiClient(ApiextensionsV1Api);
  await assert.rejects(api.readCustomResourceDefinition({ name: "apps.appstack.dev" }), isNotFound);
  const up = pulumi("up", "--yes", "--stack", stack);
  assert.equal(up.status, 0, up.output);
  const crd = await api.readCustomResourceDefinition({ name: "memcacheds.appstack.dev" });
  assert.equal(crd.spec.names.kind, "Memcached");
  assert.equal(pulumi("destroy", "--yes", "--stack", stack).status, 0);
  await assert.rejects(api.readCustomResourceDefinition({ name: "memcacheds.appstack.dev" }), isNotFound);
});
