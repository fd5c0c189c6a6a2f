// deploy/ holds the install of this version for a checkout with kubectl alone (no npm, no Go):
// deploy/appstack.yaml, what `appstack manifests` renders with default settings, and the Kustomize
// base deploy/kustomize. Both must be what the install program renders now; the render runs the
// Pulumi engine, so it runs once here. The example patches are deploy-patches.test.ts's.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import yaml from "js-yaml";
import { repoRoot } from "../../toolchain/tools.ts";
import { byName, deployArgs, kustomize, regenerate, renderInstall } from "../helpers/deploy.ts";

const scratch = mkdtempSync(join(tmpdir(), "deploy-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));
let rendered = "";
before(() => {
  rendered = renderInstall(scratch, deployArgs);
});

test(`deploy/appstack.yaml and the Kustomize base's copy are what the install program renders now (run \`${regenerate}\` after a change)`, () => {
  for (const file of ["deploy/appstack.yaml", "deploy/kustomize/appstack.yaml"]) {
    assert.ok(readFileSync(join(repoRoot, file), "utf8") === rendered, `${file} is stale: run \`${regenerate}\``);
  }
});

test("kubectl kustomize deploy/kustomize gives the rendered install's objects, its images entry naming the Deployment's image", () => {
  type Kustomization = { images: { name: string; newName: string; newTag: string }[] };
  const { images } = yaml.load(readFileSync(join(repoRoot, "deploy/kustomize/kustomization.yaml"), "utf8")) as Kustomization;
  const objects = byName(rendered);
  const deployment = objects.get("Deployment appstack-system/appstack-operator") as unknown as { spec: { template: { spec: { containers: { image: string }[] } } } };
  const image = deployment.spec.template.spec.containers[0]!.image;
  // The entry finds the install's image by name, and at its defaults changes nothing.
  assert.deepEqual(images, [{ name: image.split(":")[0], newName: image.split(":")[0], newTag: image.split(":")[1] }]);
  const built = byName(kustomize(join(repoRoot, "deploy/kustomize")));
  assert.deepEqual([...built.keys()].sort(), [...objects.keys()].sort());
  for (const [name, object] of objects) assert.deepEqual(built.get(name), object, name);
});
