// deploy/kustomize's example patches (resources, PostgreSQL, replicas), all uncommented as its
// kustomization.yaml says, give what `appstack manifests` renders with the same options, but for
// the resources, which have no flag. So a change of the install that the patches no longer follow
// fails here rather than in someone's cluster. The render runs the Pulumi engine: once here.
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import yaml from "js-yaml";
import { repoRoot } from "../../toolchain/tools.ts";
import { byName, deployArgs, kustomize, renderInstall, type Manifest } from "../helpers/deploy.ts";

const scratch = mkdtempSync(join(tmpdir(), "deploy-patches-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

type Named = { name: string };
type Container = Named & { env: Named[]; volumeMounts: Named[]; resources?: unknown };
type PodSpec = { containers: Container[]; volumes: Named[] };
const podSpec = (object: Manifest | undefined) => (object as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
const container = (object: Manifest | undefined) => podSpec(object).containers[0]!;
const byItsName = (a: Named, b: Named) => a.name.localeCompare(b.name);

test("deploy/kustomize with its example patches gives the install rendered with --backend-secret appstack-database --replicas 2, with the resources patch's resources", () => {
  const rendered = byName(renderInstall(scratch, [...deployArgs, "--backend-secret", "appstack-database", "--replicas", "2"]));
  // The user's step: the folder copied, its patches block uncommented.
  const copy = join(scratch, "deploy");
  cpSync(join(repoRoot, "deploy"), copy, { recursive: true });
  const kustomization = join(copy, "kustomize/kustomization.yaml");
  const text = readFileSync(kustomization, "utf8");
  const uncommented = text.replace(/^# patches:\n((?:#.*\n)*)/m, (_block, rest: string) => `patches:\n${rest.replace(/^# /gm, "")}`);
  assert.notEqual(uncommented, text, "deploy/kustomize/kustomization.yaml has a commented patches block");
  writeFileSync(kustomization, uncommented);
  const built = byName(kustomize(join(copy, "kustomize")));
  assert.deepEqual([...built.keys()].sort(), [...rendered.keys()].sort());
  const deployment = "Deployment appstack-system/appstack-operator";
  const patch = yaml.load(readFileSync(join(repoRoot, "deploy/kustomize/patches/resources.yaml"), "utf8")) as Manifest;
  assert.deepEqual(container(built.get(deployment)).resources, container(patch).resources);
  // The rest as rendered; a strategic merge orders the lists it merges by name its own way, and
  // their order means nothing, so those are compared by name.
  for (const object of [built.get(deployment), rendered.get(deployment)]) {
    delete container(object).resources;
    container(object).env.sort(byItsName);
    container(object).volumeMounts.sort(byItsName);
    podSpec(object).volumes.sort(byItsName);
  }
  for (const [name, object] of rendered) assert.deepEqual(built.get(name), object, name);
});
