// `appstack manifests` builds only what rendering runs: the Pulumi CLI, the language host that runs
// the install program, and the Kubernetes provider; none of a cluster's binaries (kube-apiserver,
// etcd, kwok...), which a cold machine would otherwise spend most of its build on. The build and
// the render are observed, not run: what the render produces is manifests.test.ts's.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { runManifestsCli } from "../../operator/cmd/manifests-cli.ts";
import type { ToolName } from "../../toolchain/tools.ts";

const scratch = mkdtempSync(join(tmpdir(), "manifests-build-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

test("appstack manifests asks the build for exactly the CLI, the language host and the Kubernetes provider, before it renders", async () => {
  const steps: string[] = [];
  let built: readonly ToolName[] = [];
  const output = join(scratch, "appstack.yaml");
  const code = await runManifestsCli(["--passphrase-secret", "creds", "-o", output], {
    build: (tools) => {
      built = tools;
      steps.push("build");
    },
    render: async (settings) => {
      steps.push("render");
      assert.deepEqual(settings, [{ key: "appstack:passphraseSecret", value: "creds" }]);
      return ["kind: Namespace\n"];
    },
  });
  assert.equal(code, 0);
  assert.deepEqual([...built].sort(), ["pulumi", "pulumi-language-nodejs", "pulumi-resource-kubernetes"]);
  assert.deepEqual(steps, ["build", "render"]);
  assert.match(readFileSync(output, "utf8"), /kind: Namespace\n$/);
});

test("appstack manifests builds nothing when its command line is refused", async () => {
  const steps: string[] = [];
  await assert.rejects(runManifestsCli(["--replicas", "1"], { build: () => steps.push("build"), render: async () => (steps.push("render"), []) }), /--passphrase-secret is required/);
  assert.deepEqual(steps, []);
});
