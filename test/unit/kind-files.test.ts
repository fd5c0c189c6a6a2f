// A folder of kind files (--kinds): each file, outside the repository, imports `appstack/kinds`
// and default-exports its kind; the folder's kinds are registered with App and Memcached, and a
// file that fails is returned with its error, naming it, while the others are served. Loaded here
// under tsx (as the install program loads them) and in a plain Node.js (as the operator does).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { repoRoot } from "../../toolchain/tools.ts";
import { batchRunSource, kindFolder } from "../helpers/kind-folder.ts";
import { kindFilesRefusal, loadKindFolder } from "../../components/kind-files.ts";
import { kindsFolderOf } from "../../operator/cmd/kinds-option.ts";

const folder = kindFolder({
  "batch-run.ts": batchRunSource,
  "broken.ts": "export default defineKind({ api: { kind: 'Broken' ",
  "not-a-kind.ts": "export default { kind: 'Nothing' };",
  "taken.ts": batchRunSource.replace('kind: "BatchRun"', 'kind: "App"').replace('plural: "batchruns"', 'plural: "otherapps"'),
});
after(() => rmSync(folder, { recursive: true, force: true }));
const loaded = await loadKindFolder(folder);
const { childKinds, customResourceDefinitions, kindNamed, workloadKinds } = await import("../../components/kinds.ts");
const { operatorRules } = await import("../../components/operator-rules.ts");

test("the folder's kind is registered beside App and Memcached: its CRD in its group, its children watched and in the RBAC rules", () => {
  assert.deepEqual(loaded.kinds, ["BatchRun"]);
  assert.deepEqual(workloadKinds(), ["App", "Memcached", "BatchRun"]);
  assert.equal(kindNamed("batchruns.batch.example.com"), "BatchRun");
  assert.deepEqual(customResourceDefinitions().map((crd) => crd.metadata.name), ["apps.appstack.dev", "memcacheds.appstack.dev", "batchruns.batch.example.com"]);
  assert.deepEqual(childKinds().map((kind) => kind.kind).slice(-2), ["ConfigMap", "Job"]);
  const jobs = (operatorRules() as { apiGroups: string[]; resources: string[]; verbs: string[] }[]).filter((rule) => rule.resources.includes("jobs"));
  assert.deepEqual(jobs, [{ apiGroups: ["batch"], resources: ["jobs"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"] }]);
});

test("each file that fails is named with its error: one that does not parse, one whose default export is no kind, one whose kind name is taken", () => {
  const failures = new Map(loaded.failures.map((failure) => [failure.file.slice(folder.length + 1), failure.error]));
  assert.deepEqual([...failures.keys()], ["broken.ts", "not-a-kind.ts", "taken.ts"]);
  assert.match(failures.get("not-a-kind.ts")!, /its default export is not a kind: end it with `export default defineKind\(\{\.\.\.\}\)`/);
  assert.match(failures.get("taken.ts")!, /kind App \(batch.example.com\): its kind, plural or a short name is App's \(appstack.dev\) already/);
  assert.match(kindFilesRefusal(loaded)!.message, new RegExp(`the kinds folder ${folder}: ${folder}/broken.ts failed to load: `));
});

test("a plain Node.js, as the operator runs, loads the file's TypeScript and resolves appstack/kinds from outside the repository", () => {
  const script = `const { loadKindFolder } = await import(${JSON.stringify(join(repoRoot, "components/kind-files.ts"))}); const { failures, kinds } = await loadKindFolder(process.argv[1]); console.log(JSON.stringify({ kinds, failed: failures.map((f) => f.file.split("/").pop()) }));`;
  const result = spawnSync(process.execPath, ["--input-type=module", "-e", script, folder], { encoding: "utf8", cwd: "/" });
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), { kinds: ["BatchRun"], failed: ["broken.ts", "not-a-kind.ts", "taken.ts"] });
});

test("appstack manifests --kinds refuses a folder with a failing file, naming it, before it builds or renders anything", () => {
  const result = spawnSync(process.execPath, [join(repoRoot, "operator/cmd/cli.ts"), "manifests", "--passphrase-secret", "s", "--kinds", folder], { encoding: "utf8", cwd: repoRoot });
  assert.equal(result.status, 1);
  assert.match(result.stderr, new RegExp(`${folder}/broken.ts failed to load`));
});

test("--kinds is read from the operator's, run's and manifests' arguments, else APPSTACK_KINDS_DIR; never from a command that passes its arguments on, nor by `new`", () => {
  assert.equal(kindsFolderOf("run", ["--samples", "--kinds", "./k"], {}), "./k");
  assert.equal(kindsFolderOf("operator", ["--kinds=/k"], { APPSTACK_KINDS_DIR: "/env" }), "/k");
  assert.equal(kindsFolderOf("status", ["-A"], { APPSTACK_KINDS_DIR: "/env" }), "/env");
  assert.equal(kindsFolderOf("pulumi", ["up", "--kinds", "/k"], {}), undefined);
  assert.equal(kindsFolderOf("manifests", ["--", "--kinds", "/k"], {}), undefined);
  // `new kind` reads its own --dir, registering nothing: a broken file in APPSTACK_KINDS_DIR does not stop it.
  assert.equal(kindsFolderOf("new", ["kind", "Shop", "--dir", "/k"], { APPSTACK_KINDS_DIR: "/env" }), undefined);
});
