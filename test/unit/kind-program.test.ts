// A kind's program version (issue 46): a kind loaded from a kind file is applied with appstack's
// program version and a digest of its file's source and its programVersion, so that an edited kind
// file applies every object of its kind anew once the operator restarts. App's and Memcached's
// records stay what they were before kinds had versions, so an upgrade applies none of them anew.
// Each "operator start" is a plain Node.js loading the folder, as the operator does.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { repoRoot } from "../../toolchain/tools.ts";
import { batchRunSource, kindFolder } from "../helpers/kind-folder.ts";
import { appliedRecord, decide, decodeApplied, encodeApplied, programVersion, programVersionOf, specDigest } from "../../operator/controller/drift.ts";
import type { Workload } from "../../crds/types.ts";

const folder = kindFolder({ "batch-run.ts": batchRunSource });
after(() => rmSync(folder, { recursive: true, force: true }));
const file = join(folder, "batch-run.ts");

/** BatchRun's program version as an operator started now on the folder computes it. */
function versionAtStart(): string {
  const script = `const { loadKindFolder } = await import(${JSON.stringify(join(repoRoot, "components/kind-files.ts"))}); await loadKindFolder(process.argv[1]); const { programVersionOf } = await import(${JSON.stringify(join(repoRoot, "operator/controller/drift.ts"))}); console.log(programVersionOf("BatchRun"));`;
  const result = spawnSync(process.execPath, ["--input-type=module", "-e", script, folder], { encoding: "utf8", cwd: "/" });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.trim();
}

const spec = specDigest({ message: "hello" });
const decision = (applied: string, now: string) => decide({ program: now, generation: 2, applied: decodeApplied(encodeApplied({ programVersion: applied, generation: 2, spec })), drift: [], orphanedState: false });

test("a kind file edited between two starts applies its objects anew, saying the kind's program changed; an unchanged one applies nothing", () => {
  const before = versionAtStart();
  assert.match(before, /^4\+[0-9a-f]{12}$/);
  assert.equal(versionAtStart(), before, "the same source gives the same version at every start");
  assert.deepEqual(decision(before, before), { action: "none" });

  // The author adds a label to the Job's metadata: the spec is the same, the children are not.
  writeFileSync(file, readFileSync(file, "utf8").replace("const job = { metadata,", 'const job = { metadata: { ...metadata, labels: { ...metadata.labels, team: "batch" } },'));
  const after = versionAtStart();
  assert.notEqual(after, before);
  assert.deepEqual(decision(before, after), { action: "apply", reason: "the kind's program changed (its kind file or its programVersion)", refresh: false, cause: "program" });
  // A release of appstack that bumps its own version says so instead.
  const upgraded = decision(`3+${before.split("+")[1]}`, after);
  assert.equal(upgraded.action === "apply" && upgraded.reason, "the operator's program changed");
});

test("a kind's programVersion, bumped for a change outside its file, applies its objects anew", () => {
  const before = versionAtStart();
  writeFileSync(file, readFileSync(file, "utf8").replace("replicas: () => 0,", 'replicas: () => 0,\n  programVersion: "2",'));
  const bumped = versionAtStart();
  assert.notEqual(bumped, before);
  assert.equal(decision(before, bumped).action, "apply");
});

test("the longer version survives the round trip through status", () => {
  const version = `${programVersion}+0123456789ab`;
  assert.deepEqual(decodeApplied(encodeApplied({ programVersion: version, generation: 3, spec })), { programVersion: version, generation: 3, spec });
});

test("App's and Memcached's records are byte for byte what they were before kinds had versions", () => {
  const meta = (kind: string) => ({ apiVersion: "appstack.dev/v1alpha1", kind, metadata: { name: "web", namespace: "default", uid: "u", generation: 7 } });
  assert.equal(programVersionOf("App"), "4");
  assert.equal(programVersionOf("Memcached"), "4");
  // Computed by the operator before this change, for these very objects.
  assert.equal(appliedRecord({ ...meta("App"), spec: { image: "nginx:1.27", replicas: 2 } } as Workload), "v=4;g=7;s=db57c9b91ee0f744");
  assert.equal(appliedRecord({ ...meta("Memcached"), spec: { image: "memcached:1.6", replicas: 1 } } as Workload), "v=4;g=7;s=52ff5b8b246b8cf8");
});
