import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { createClusterPki } from "../../toolchain/cluster/pki.ts";
import { cniConfig } from "../../toolchain/cluster/node-network.ts";
import { buildInputs, kubernetesProviderVersion, nodeTools, oldestControlPlaneTools, patchFiles, patchModuleDir, patchSubjects, pinnedVersion, repoRoot, testTools, toolByName, toolCacheDir, toolchainDir, tools } from "../../toolchain/tools.ts";

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

test("package.json's engines names the oldest Node.js appstack runs on: 22.15, for module.registerHooks (sdk-footprint.ts)", async () => {
  const manifest = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { engines: { node: string } };
  assert.equal(manifest.engines.node, ">=22.15.0");
  assert.equal(typeof (await import("node:module")).registerHooks, "function");
});

test("the provider plugin is stamped with the version @pulumi/kubernetes asks the engine for", () => {
  assert.equal(kubernetesProviderVersion(), lock.packages["node_modules/@pulumi/kubernetes"]?.version);
});

test("every tool has a pin and its own cache folder", () => {
  const all = [...tools, ...nodeTools];
  const dirs = new Set(all.map((tool) => `${toolCacheDir(tool)}/${tool.binary}`));
  assert.equal(dirs.size, all.length);
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

test("the real node's kubelet and kube-proxy are the control plane's Kubernetes release, and `npm run toolchain` does not build them", () => {
  assert.equal(pinnedVersion(toolByName("kubelet")), pinnedVersion(toolByName("kube-apiserver")));
  assert.equal(pinnedVersion(toolByName("kube-proxy")), pinnedVersion(toolByName("kube-apiserver")));
  assert.deepEqual(tools.filter((tool) => nodeTools.includes(tool)), []);
});

test("the oldest supported control plane is Kubernetes 1.30, in cache folders of its own, and `npm run toolchain` does not build it", () => {
  assert.deepEqual(oldestControlPlaneTools.map((tool) => tool.binary), ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]);
  for (const tool of oldestControlPlaneTools) {
    assert.match(pinnedVersion(tool), /^v1\.30\.\d+$/);
    assert.notEqual(toolCacheDir(tool), toolCacheDir(toolByName(tool.binary as "kube-apiserver")));
  }
  assert.deepEqual(tools.filter((tool) => oldestControlPlaneTools.includes(tool)), []);
});

test("the rule checker is built for its test alone: neither `npm run toolchain` nor a real node builds it, and a change to its main rebuilds it", () => {
  const tool = toolByName("rule-check");
  assert.deepEqual(testTools, [tool]);
  assert.deepEqual([...tools, ...nodeTools].filter((other) => other.moduleDir === tool.moduleDir), []);
  assert.match(pinnedVersion(tool), /^v0\.\d+\.\d+$/);
  assert.ok(buildInputs(tool).includes(join(toolchainDir, "rule-check", "main.go")));
});

test("a real node's API server certificate also names the node's bridge address", () => {
  const serving = new X509Certificate(createClusterPki("10.96.0.1", ["10.247.3.1"]).apiserver.certPem);
  assert.match(serving.subjectAltName ?? "", /IP Address:10\.247\.3\.1/);
});

test("pods of a real node get routes to their own range and the Service range only: nothing is routed off the machine", () => {
  const network = { bridge: "apst01234567", podCidr: "10.247.3.0/24", gateway: "10.247.3.1", serviceCidr: "10.96.0.0/16", ipForwardBefore: "0" };
  const config = JSON.parse(cniConfig(network, "appstack-x", "/tmp/ipam")) as { plugins: { ipMasq: boolean; ipam: { routes: { dst: string }[] } }[] };
  const bridge = config.plugins[0]!;
  assert.equal(bridge.ipMasq, false);
  assert.deepEqual(bridge.ipam.routes, [{ dst: "10.96.0.0/16" }]);
});

// toolchain/patch-module's own Go test, run here so that `npm test` runs it: a patch applies with
// zero fuzz, a changed upstream text (or a line moved) fails naming the patch, builds at once share
// one copy, and the toolchain's own patches apply to the modules its go.mod files pin. It copies
// those two modules from the module cache (a few seconds) and compiles only go-gitdiff.
test("the patches apply to their pinned modules exactly, and a changed upstream fails naming the patch (patch-module's Go test)", () => {
  const result = spawnSync("go", ["test", "-count=1", "./..."], {
    cwd: patchModuleDir,
    env: { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=readonly" },
    encoding: "utf8",
    timeout: 600_000,
  });
  assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
  assert.match(result.stdout, /^ok\s+appstack\.dev\/toolchain\/patch-module/m);
});

test("docs/development/toolchain.md lists every patch, with what it changes, and no patch that is gone", () => {
  const doc = readFileSync(join(repoRoot, "docs/development/toolchain.md"), "utf8");
  const listed = new Set([...doc.matchAll(/`(toolchain\/[\w-]+\/patches\/[\w.-]+\.patch)`/g)].map((m) => m[1]));
  const patches = tools.flatMap((tool) => patchFiles(tool).map((file, i) => ({ path: `toolchain/${tool.moduleDir}/patches/${file}`, subject: patchSubjects(tool)[i] ?? "" })));
  assert.ok(patches.length > 0);
  assert.deepEqual([...listed].sort(), patches.map((p) => p.path).sort());
  for (const { path, subject } of patches) assert.ok(doc.includes(subject), `docs/development/toolchain.md does not say what ${path} changes: "${subject}"`);
});

test("a patched tool's cache folder digests its patches and their applier: a changed patch rebuilds it, and no other tool", () => {
  for (const name of ["pulumi", "pulumi-resource-kubernetes"] as const) {
    const tool = toolByName(name);
    const inputs = buildInputs(tool);
    assert.ok(patchFiles(tool).length > 0, name);
    for (const file of patchFiles(tool)) assert.ok(inputs.includes(join(toolchainDir, tool.moduleDir, "patches", file)), `${name}: ${file}`);
    assert.ok(inputs.includes(join(patchModuleDir, "patch.go")), `${name}: the applier`);
    assert.ok(!inputs.includes(join(patchModuleDir, "patch_test.go")), `${name}: the applier's test`);
  }
  assert.deepEqual(patchFiles(toolByName("kube-apiserver")), []);
  assert.ok(!buildInputs(toolByName("kube-apiserver")).some((file) => file.startsWith(patchModuleDir)));
  assert.match(patchSubjects(toolByName("pulumi"))[0] ?? "", /checkpoint by name/);
});
