// What a platform team's scanner says: checkov's Kubernetes checks on the rendered install
// (`appstack manifests`, with its opt-in NetworkPolicy) and on each kind's children as the
// components make them from a spec that gives only what the kind requires, with the NetworkPolicy
// a hardened user asks for (spec.networkPolicy). Every failure left is in
// the allowlist below with why; a failure not listed fails the test, and so does a listed one that
// no longer fails (the list would hide a regression behind it). No cluster: it scans files.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import yaml from "js-yaml";
import type { App } from "../../components/app.ts";
import { childKindNamed, childManifests, workloadKinds } from "../../components/kinds.ts";
import { defaultMemcachedImage } from "../../components/manifests.ts";
import type { Memcached } from "../../components/memcached.ts";
import type { Workload } from "../../crds/types.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { checkovEnvironment, checkovUnavailable, checkovVersion, runCheckov } from "../helpers/checkov.ts";

const skip = checkovUnavailable() ?? false;
const scratch = mkdtempSync(join(tmpdir(), "checkov-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * Each kind's object with only the fields its schema requires (and a port, so that an App has its
 * Service), defaulted as the API server defaults them, and spec.networkPolicy, which a hardened
 * user sets (docs/security.md): with it, no pod is without a NetworkPolicy.
 */
const app: App = { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: "web", namespace: "team-a", uid: "uid-web" }, spec: { image: "nginx:1.27", replicas: 1, port: 8080, networkPolicy: { from: "Namespace" } } };
const memcached: Memcached = { apiVersion: "appstack.dev/v1alpha1", kind: "Memcached", metadata: { name: "cache", namespace: "team-a", uid: "uid-cache" }, spec: { size: 3, image: defaultMemcachedImage, networkPolicy: { from: "Namespace" } } };
const objects: Workload[] = [app, memcached];

/** Each remaining failure, by check and resource (kind.namespace.name), with why it stays. */
const cpuLimit = "no CPU limit, on purpose: a limit throttles, which only stretches the work (the operator's engines towards their deadlines); CPU requests are set";
const digest = "an image by tag, not digest: the install's pinned image digest is the release issue's, a child's image is its spec's";
const pullAlways = "imagePullPolicy left to the kubelet's default for the tag: Always would make every pod start depend on the registry";
const baseline = "spec.podSecurity defaults to Baseline for an App (its image may need root, as nginx's does); profile Restricted sets what this check asks, and a namespace that enforces restricted needs it";
const appResources = "an App's image is anyone's: its spec.resources is the user's to set, no default fits every image";
const allowlist: Readonly<Record<string, string>> = {
  "CKV_K8S_11 Deployment.appstack-system.appstack-operator": cpuLimit,
  "CKV_K8S_15 Deployment.appstack-system.appstack-operator": pullAlways,
  "CKV_K8S_43 Deployment.appstack-system.appstack-operator": digest,
  "CKV_K8S_38 Deployment.appstack-system.appstack-operator": "the operator's pod calls the API: its ServiceAccount token is what it authenticates with",

  "CKV_K8S_11 Deployment.team-a.cache": cpuLimit,
  "CKV_K8S_15 Deployment.team-a.cache": pullAlways,
  "CKV_K8S_43 Deployment.team-a.cache": digest,

  "CKV_K8S_11 Deployment.team-a.web": cpuLimit,
  "CKV_K8S_15 Deployment.team-a.web": pullAlways,
  "CKV_K8S_43 Deployment.team-a.web": digest,
  "CKV_K8S_10 Deployment.team-a.web": appResources,
  "CKV_K8S_12 Deployment.team-a.web": appResources,
  "CKV_K8S_13 Deployment.team-a.web": appResources,
  "CKV_K8S_20 Deployment.team-a.web": baseline,
  "CKV_K8S_22 Deployment.team-a.web": "an App's image may write to its root file system (nginx writes its cache and pid there); the spec has no field for it yet",
  "CKV_K8S_23 Deployment.team-a.web": baseline,
  "CKV_K8S_28 Deployment.team-a.web": baseline,
  "CKV_K8S_29 Deployment.team-a.web": baseline,
  "CKV_K8S_30 Deployment.team-a.web": baseline,
  "CKV_K8S_31 Deployment.team-a.web": baseline,
  "CKV_K8S_37 Deployment.team-a.web": baseline,
  "CKV_K8S_40 Deployment.team-a.web": baseline,
  "CKV_K8S_8 Deployment.team-a.web": "no liveness probe: only the image knows what its health is, and a generic check that fails restarts the pod; the spec has no field for one yet",
};

/** checkov's name of a resource, to kind.namespace.name: a graph check (CKV2_) appends the pod's labels. */
const resourceKey = (resource: string) => resource.split(".").slice(0, 3).join(".");

function renderInstall(): string {
  const rendered = spawnSync(process.execPath, [join(repoRoot, "operator/cmd/appstack.mjs"), "manifests", "--passphrase-secret", "appstack-credentials", "--network-policy", "true"], { cwd: repoRoot, encoding: "utf8", env: { ...process.env, KUBECONFIG: "/nonexistent", TMPDIR: scratch } });
  assert.equal(rendered.status, 0, rendered.stderr);
  return rendered.stdout;
}

function writeChildren(folder: string): void {
  for (const object of objects) {
    const documents = childManifests(object).map((child) => ({ apiVersion: childKindNamed(child.kind).apiVersion, kind: child.kind, ...child.manifest }));
    writeFileSync(join(folder, `${object.kind.toLowerCase()}.yaml`), documents.map((document) => yaml.dump(document, { noRefs: true })).join("---\n"));
  }
}

test("every kind has an object here", () => {
  assert.deepEqual(objects.map((object) => object.kind), workloadKinds());
});

test(`checkov ${checkovVersion} finds nothing in the rendered install and the children but what its allowlist names, with why`, { skip }, () => {
  const environment = checkovEnvironment();
  const folder = join(scratch, "scanned");
  mkdirSync(folder);
  writeFileSync(join(folder, "install.yaml"), renderInstall());
  writeChildren(folder);
  const { failed, passed } = runCheckov(environment, folder);
  const key = (failure: (typeof failed)[number]) => `${failure.checkId} ${resourceKey(failure.resource)}`;
  const found = [...new Set(failed.map(key))].sort();
  console.log(`checkov ${checkovVersion}: ${passed} passed, ${failed.length} failed, all listed`);
  const named = new Map(failed.map((failure) => [key(failure), failure.checkName]));
  assert.deepEqual(found.filter((key) => !(key in allowlist)).map((key) => `${key}: ${named.get(key)}`), [], "failures not in the allowlist: fix them, or list them with why");
  assert.deepEqual(Object.keys(allowlist).filter((key) => !found.includes(key)), [], "listed failures that no longer fail: take them off the list");
});
