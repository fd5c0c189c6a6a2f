// `appstack new kind`: the file it writes, in a folder outside the repository, is loaded unedited
// by the kinds folder's loader and registered beside App and Memcached: its CRD (with its fields'
// defaults, bounds and CEL rule), its children (a Deployment and a Service, as its component
// declares them under Pulumi's mocks). Its sample object passes its CRD's schema; its test, run as
// a kind's author runs it (`node --import tsx --test`) in a project that has appstack as a
// package, passes, and fails once the kind's component is broken. What it refuses, it refuses
// writing nothing; the command line's exit code says so. docs/writing-a-kind.md shows the
// templates' output, generated.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type * as pulumi from "@pulumi/pulumi";
import yaml from "js-yaml";
import { Errors } from "typebox/schema";
import type { WorkloadComponent } from "../../components/workload.ts";
import { recordRegistrations, registeredResource } from "../helpers/pulumi-mocks.ts";

// The mocks first: the kind files' components are made under them.
const registered = await recordRegistrations();
const { repoRoot } = await import("../../toolchain/tools.ts");
const { newKind } = await import("../../operator/cmd/new-cli.ts");
const { kindTemplate, kindTemplateBlock } = await import("../../operator/cmd/kind-template.ts");
const { exampleKind, pluralOf } = await import("../../operator/cmd/kind-names.ts");
const { kindTestBlock, kindTestTemplate, sampleBlock, sampleTemplate } = await import("../../operator/cmd/kind-sample-templates.ts");
const { blockText } = await import("../../operator/cmd/generated-blocks.ts");
const { UsageError } = await import("../../operator/cmd/flags.ts");
const { loadKindFolder } = await import("../../components/kind-files.ts");

const scratch = mkdtempSync(join(tmpdir(), "appstack-new-kind-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));
const kinds = join(scratch, "kinds");

// Guestbook with its group; Cart takes the folder's group from Guestbook's file.
const guestbook = await newKind(["kind", "Guestbook", "--group", "webapp.example.com", "--dir", kinds]);
const cart = await newKind(["kind", "Cart", "--version", "v1alpha1", "--dir", kinds]);
const loaded = await loadKindFolder(kinds);
const { childKinds, childManifests, customResourceDefinitions, kindDefinition, kindNamed } = await import("../../components/kinds.ts");

test("it writes DIR/<kind>.ts, DIR/samples/<kind>.yaml and DIR/test/<kind>.test.ts from the templates, the group from --group or, without it, from the folder's kind files", () => {
  const names = { kind: "Guestbook", group: "webapp.example.com", plural: "guestbooks" };
  assert.deepEqual(guestbook, { kind: join(kinds, "guestbook.ts"), sample: join(kinds, "samples", "guestbook.yaml"), test: join(kinds, "test", "guestbook.test.ts") });
  assert.equal(readFileSync(guestbook.kind, "utf8"), kindTemplate(names));
  assert.equal(readFileSync(guestbook.sample, "utf8"), sampleTemplate(names));
  assert.equal(readFileSync(guestbook.test, "utf8"), kindTestTemplate(names));
  assert.equal(cart.kind, join(kinds, "cart.ts"));
  assert.match(readFileSync(cart.sample, "utf8"), /apiVersion: webapp\.example\.com\/v1alpha1\nkind: Cart\n/);
  assert.match(readFileSync(cart.kind, "utf8"), /group: "webapp\.example\.com",\n {4}kind: "Cart",\n {4}plural: "carts",/);
});

test("the loader loads both unedited: their CRDs in their group with the template's fields, their Deployment and Service children", () => {
  assert.deepEqual(loaded, { folder: kinds, kinds: ["Cart", "Guestbook"], failures: [] });
  assert.equal(kindNamed("guestbooks.webapp.example.com"), "Guestbook");
  const crd = customResourceDefinitions().find((each) => each.metadata.name === "guestbooks.webapp.example.com");
  assert.ok(crd, "its CRD is derived");
  assert.equal(crd.spec["group"], "webapp.example.com");
  const version = (crd.spec["versions"] as { name: string; subresources: { scale?: { specReplicasPath: string } }; schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, Record<string, unknown>> } } } } }[])[0]!;
  assert.equal(version.name, "v1alpha1");
  assert.equal(version.subresources.scale?.specReplicasPath, ".spec.replicas");
  const fields = version.schema.openAPIV3Schema.properties.spec.properties;
  assert.deepEqual(fields["image"]?.["x-kubernetes-validations"], [{ rule: "!self.endsWith(':latest')", message: "spec.image names a version, not :latest: a rollout must be repeatable" }]);
  assert.deepEqual([fields["replicas"]?.["default"], fields["replicas"]?.["minimum"], fields["replicas"]?.["maximum"]], [1, 0, 100]);
  assert.deepEqual([fields["port"]?.["default"], fields["port"]?.["maximum"]], [8080, 65535]);
  assert.deepEqual(kindDefinition("Guestbook").childKinds.map((kind) => kind.kind), ["Deployment", "Service"]);
  // The built-in Deployment and Service kinds of child, not copies: App's watches and rules cover them.
  assert.deepEqual(childKinds().map((kind) => kind.kind).filter((kind) => ["Deployment", "Service"].includes(kind)), ["Deployment", "Service"]);

  const object = { apiVersion: "webapp.example.com/v1alpha1", kind: "Guestbook", metadata: { name: "guests", namespace: "team-a", uid: "uid-guests" }, spec: { image: "nginx:1.27", replicas: 2, port: 80 } };
  const children = childManifests(object);
  assert.deepEqual(children.map((child) => `${child.kind}/${child.name}`), ["Deployment/guests", "Service/guests"]);
  const deployment = children[0]!.manifest as { metadata: { ownerReferences: { apiVersion: string }[] }; spec: { replicas: number; template: { spec: { containers: { image: string; ports: { containerPort: number }[] }[] } } } };
  assert.equal(deployment.metadata.ownerReferences[0]?.apiVersion, "webapp.example.com/v1alpha1");
  assert.equal(deployment.spec.replicas, 2);
  assert.deepEqual(deployment.spec.template.spec.containers.map((c) => [c.image, c.ports[0]?.containerPort]), [["nginx:1.27", 80]]);
  const service = children[1]!.manifest as { spec: { ports: { port: number; targetPort: string }[] } };
  assert.deepEqual(service.spec.ports.map((p) => [p.port, p.targetPort]), [[80, "http"]]);
});

test("its component declares the Deployment and the Service under it, as Pulumi resources of the provider's types", async () => {
  const owner = { apiVersion: "webapp.example.com/v1alpha1", kind: "Guestbook", name: "guests", namespace: "team-a", uid: "uid-guests" };
  const spec = { image: "nginx:1.27", replicas: 2, port: 80 };
  const component = kindDefinition("Guestbook").component(owner, spec, {}) as WorkloadComponent & { service?: pulumi.Resource };
  assert.ok(component.deployment && component.service, "it exposes its Deployment, whose rollout Ready follows, and its Service");
  await registeredResource(component.deployment);
  await registeredResource(component.service);
  const mine = new Map(registered.filter((each) => each.name === "guests").map((each) => [each.type, each.inputs]));
  assert.deepEqual([...mine.keys()].sort(), ["kubernetes:apps/v1:Deployment", "kubernetes:core/v1:Service", "webapp:index:Guestbook"]);
  assert.equal((mine.get("kubernetes:apps/v1:Deployment")?.["spec"] as { replicas: number }).replicas, 2);
  assert.equal((mine.get("kubernetes:core/v1:Service")?.["spec"] as { type: string }).type, "ClusterIP");
});

test("its sample passes its CRD's schema, as the API server checks it: the group's apiVersion, the kind, the spec's types and bounds", () => {
  const crd = customResourceDefinitions().find((each) => each.metadata.name === "guestbooks.webapp.example.com")!;
  const schema = (crd.spec["versions"] as { schema: { openAPIV3Schema: Record<string, unknown> } }[])[0]!.schema.openAPIV3Schema;
  const sample = yaml.load(readFileSync(guestbook.sample, "utf8")) as { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> };
  assert.deepEqual([sample.apiVersion, sample.kind, sample.metadata.name], ["webapp.example.com/v1alpha1", "Guestbook", "guestbook-sample"]);
  const errors = (object: unknown) => Errors(schema, object)[1].map((error) => `${error.instancePath} ${error.message}`);
  assert.deepEqual(errors(sample), []);
  // The check can fail: a port out of bounds, a replica count that is no integer, an image missing.
  assert.deepEqual(errors({ ...sample, spec: { ...sample.spec, port: 0 } }), ["/spec/port must be >= 1"]);
  assert.deepEqual(errors({ ...sample, spec: { ...sample.spec, replicas: "two" } }), ["/spec/replicas must be integer"]);
  assert.equal(errors({ ...sample, spec: { port: 80 } }).length, 1);
  // Its CEL rule is the API server's to evaluate (test/e2e/own-kind.test.ts creates the sample): an image with its version.
  assert.deepEqual((schema as { properties: { spec: { properties: { image: { "x-kubernetes-validations": { rule: string }[] } } } } }).properties.spec.properties.image["x-kubernetes-validations"].map((each) => each.rule), ["!self.endsWith(':latest')"]);
  assert.match(String(sample.spec["image"]), /^nginx:\d+\.\d+$/);
});

/** Runs the kind's test as its author does, in `project` (a folder whose node_modules has appstack and tsx): its exit code and output. */
function runKindTest(project: string, test: string): Promise<{ status: number | null; output: string }> {
  // Not as a subtest of this run: the runner tells its own children so through NODE_TEST_CONTEXT.
  const env = { ...process.env };
  delete env["NODE_TEST_CONTEXT"];
  const child = spawn(process.execPath, ["--import", "tsx", "--test", test], { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.on("close", (status) => resolve({ status, output })));
}

test("its test passes, run as a project runs it with appstack as a package, and fails once the kind's component declares another port", async () => {
  // Two projects: `appstack` in their node_modules is this repository (as `npm install` of it makes it), tsx beside it.
  const project = (name: string) => {
    const folder = join(scratch, name);
    mkdirSync(join(folder, "node_modules"), { recursive: true });
    symlinkSync(repoRoot, join(folder, "node_modules", "appstack"));
    symlinkSync(join(repoRoot, "node_modules", "tsx"), join(folder, "node_modules", "tsx"));
    cpSync(kinds, join(folder, "kinds"), { recursive: true });
    return folder;
  };
  const working = project("project");
  const broken = project("broken-project");
  const kindFile = join(broken, "kinds", "guestbook.ts");
  const source = readFileSync(kindFile, "utf8");
  assert.match(source, /containerPort: spec\.port/);
  writeFileSync(kindFile, source.replace("containerPort: spec.port", "containerPort: 8080"));

  const test = join("kinds", "test", "guestbook.test.ts");
  const [passed, failed] = await Promise.all([runKindTest(working, test), runKindTest(broken, test)]);
  assert.equal(passed.status, 0, passed.output);
  assert.match(passed.output, /pass 1/);
  assert.equal(failed.status, 1, failed.output);
  assert.match(failed.output, /fail 1/);
  assert.match(failed.output, /actual: 8080,\s+expected: 80/);
});

test("refused, writing nothing: a file there already, a name that is no kind's, a group that is no API group, a version appstack does not serve", async () => {
  const before = readFileSync(guestbook.kind, "utf8");
  await assert.rejects(newKind(["kind", "Guestbook", "--group", "webapp.example.com", "--dir", kinds]), new RegExp(`${guestbook.kind} exists already; nothing is written`));
  assert.equal(readFileSync(guestbook.kind, "utf8"), before);
  // A sample or a test of the name there already, without its kind file: kept, and nothing written.
  for (const [file, other] of [["samples/shop.yaml", "test/shop.test.ts"], ["test/shop.test.ts", "samples/shop.yaml"]] as const) {
    const folder = mkdtempSync(join(scratch, "kept-"));
    mkdirSync(join(folder, file, ".."));
    writeFileSync(join(folder, file), "mine");
    await assert.rejects(newKind(["kind", "Shop", "--group", "shop.example.com", "--dir", folder]), new RegExp(`${join(folder, file)} exists already; nothing is written`));
    assert.equal(readFileSync(join(folder, file), "utf8"), "mine");
    assert.ok(!existsSync(join(folder, "shop.ts")) && !existsSync(join(folder, other)), `${file}: nothing else written`);
  }
  const empty = join(scratch, "empty");
  for (const name of ["guestbook", "Guest-book", "Guest_book", "9Lives", "Gästebuch", `G${"a".repeat(63)}`]) {
    await assert.rejects(newKind(["kind", name, "--group", "webapp.example.com", "--dir", empty]), (error: unknown) => error instanceof UsageError && /is not a kind's name: UpperCamelCase/.test(error.message), name);
  }
  for (const group of ["example", "Example.com", "-web.example.com", "web..example.com", "web_app.example.com"]) {
    await assert.rejects(newKind(["kind", "Shop", `--group=${group}`, "--dir", empty]), new RegExp(`--group ${JSON.stringify(group).replace(/\./g, "\\.")} is not an API group: a DNS subdomain with at least one dot`), group);
  }
  await assert.rejects(newKind(["kind", "Shop", "--group", "shop.example.com", "--version", "v1", "--dir", empty]), /--version v1: appstack serves every kind at v1alpha1/);
  await assert.rejects(newKind(["api", "Shop", "--group", "shop.example.com", "--dir", empty]), /appstack new makes a kind: appstack new kind KIND/);
  assert.ok(!existsSync(empty), "no folder made");
});

test("refused, writing nothing: no group and none in the folder, a folder of several groups, a name another kind has", async () => {
  await assert.rejects(newKind(["kind", "Shop", "--dir", join(scratch, "none")]), /name its API group with --group \(webapp\.example\.com\): no kind file in .*none gives one/);
  const mixed = join(scratch, "mixed");
  mkdirSync(mixed);
  writeFileSync(join(mixed, "a.ts"), kindTemplate({ kind: "Alpha", group: "a.example.com", plural: "alphas" }));
  writeFileSync(join(mixed, "b.ts"), kindTemplate({ kind: "Beta", group: "b.example.com", plural: "betas" }));
  await assert.rejects(newKind(["kind", "Shop", "--dir", mixed]), /the kind files in .*mixed are of several groups \(a\.example\.com, b\.example\.com\)/);
  await assert.rejects(newKind(["kind", "Memcached", "--group", "cache.example.com", "--dir", mixed]), /Memcached \(plural memcacheds\) is Memcached's name already/);
  // A kind of the folder's, in a file named otherwise.
  await assert.rejects(newKind(["kind", "Beta", "--group", "b.example.com", "--dir", mixed]), /Beta \(plural betas\) is Beta's name already/);
  assert.deepEqual(readdirSync(mixed).sort(), ["a.ts", "b.ts"]);
});

test("plurals: English's regular rules, lower case", () => {
  assert.deepEqual(["Guestbook", "Policy", "Key", "Box", "Redis", "Batch", "Memcached"].map(pluralOf), ["guestbooks", "policies", "keys", "boxes", "redises", "batches", "memcacheds"]);
});

test("the command line: exit 0 and what to run next when written, exit 1 and the reason when refused", () => {
  const cli = (...args: string[]) => spawnSync(process.execPath, [join(repoRoot, "operator/cmd/cli.ts"), "new", ...args], { encoding: "utf8", cwd: scratch });
  const written = cli("kind", "Shop", "--group", "shop.example.com", "--dir", "cli-kinds");
  assert.equal(written.status, 0, written.stderr);
  assert.match(written.stderr, /wrote cli-kinds\/shop\.ts: run it with `npm start -- --kinds cli-kinds`/);
  assert.match(written.stderr, /wrote cli-kinds\/samples\/shop\.yaml: an object of it/);
  assert.match(written.stderr, /wrote cli-kinds\/test\/shop\.test\.ts: a unit test of its component, made from the sample's spec: `node --import tsx --test cli-kinds\/test\/shop\.test\.ts`/);
  assert.deepEqual(["shop.ts", "samples/shop.yaml", "test/shop.test.ts"].filter((file) => existsSync(join(scratch, "cli-kinds", file))), ["shop.ts", "samples/shop.yaml", "test/shop.test.ts"]);
  const refused = cli("kind", "shop", "--group", "shop.example.com", "--dir", "cli-kinds");
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /"shop" is not a kind's name/);
  const again = cli("kind", "Shop", "--group", "shop.example.com", "--dir", "cli-kinds");
  assert.equal(again.status, 1);
  assert.match(again.stderr, /shop\.ts exists already/);
});

test(`${kindTemplateBlock.page} shows the templates' output for its example, as generated: the kind file, its sample and its test`, () => {
  for (const block of [kindTemplateBlock, sampleBlock, kindTestBlock]) {
    const page = readFileSync(join(repoRoot, block.page), "utf8");
    assert.equal(blockText(page, block), block.generate(), `${block.beginMarker}: regenerate it: node --import tsx operator/cmd/kind-template.ts --write`);
  }
  assert.equal(exampleKind.plural, "guestbooks");
});
