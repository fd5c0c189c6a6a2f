import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { createClusterPki } from "../../toolchain/cluster/pki.ts";
import { kubernetesProviderVersion, pinnedVersion, repoRoot, toolByName, toolCacheDir, tools } from "../../toolchain/tools.ts";

const lock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version: string }>;
};

test("the Pulumi CLI is pinned to the version of @pulumi/pulumi in the lockfile", () => {
  assert.equal(pinnedVersion(toolByName("pulumi")), `v${lock.packages["node_modules/@pulumi/pulumi"]?.version}`);
});

test("npm scripts run on the Node.js the project brings (the npm package `node`), not the machine's", () => {
  // `npm test` runs this file: node_modules/.bin comes first on PATH, so `node` is the pinned one.
  assert.equal(process.version, `v${lock.packages["node_modules/node"]?.version}`);
  assert.equal(process.versions.node.split(".")[0], "24");
});

test("the provider plugin is stamped with the version @pulumi/kubernetes asks the engine for", () => {
  assert.equal(kubernetesProviderVersion(), lock.packages["node_modules/@pulumi/kubernetes"]?.version);
});

test("every tool has a pin and its own cache folder", () => {
  const dirs = new Set(tools.map((tool) => `${toolCacheDir(tool)}/${tool.binary}`));
  assert.equal(dirs.size, tools.length);
  assert.match(pinnedVersion(toolByName("kube-apiserver")), /^v1\.\d+\.\d+$/);
  assert.match(pinnedVersion(toolByName("pulumi-resource-kubernetes")), /^v4\.0\.0-\d{14}-[0-9a-f]{12}$/);
});

test("the local cluster's certificates chain to its CA and name the loopback address", () => {
  const pki = createClusterPki("10.96.0.1");
  const ca = new X509Certificate(pki.ca.certPem);
  const serving = new X509Certificate(pki.apiserver.certPem);
  const admin = new X509Certificate(pki.admin.certPem);
  assert.ok(ca.ca);
  assert.ok(serving.verify(ca.publicKey));
  assert.ok(admin.verify(ca.publicKey));
  assert.match(serving.subjectAltName ?? "", /IP Address:127\.0\.0\.1/);
  assert.match(admin.subject, /O=system:masters/);
  assert.ok(!admin.checkIssued(serving));
});
