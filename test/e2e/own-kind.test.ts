// A kind that exists nowhere in the repository: one file, written into a folder of the system's
// temporary folder (test/helpers/kind-folder.ts: a BatchRun of batch.example.com, whose component
// makes a ConfigMap and a Job, importing only `appstack/kinds`). The install is rendered with
// `appstack manifests --kinds <folder>`, and the operator runs with `--kinds <folder>` as a
// ServiceAccount holding exactly the rendered install's rules, against a real API server. Read back
// from it: the CRD refuses a bad spec with the field's message; an object gets its ConfigMap and
// Job, owned in its group; a hand edit of the ConfigMap is repaired; the rules name exactly the
// ConfigMap and Job resources with the operator's verbs, and with them it does all of that. The
// object is Ready once its Job has started (kstatus reads a running Job as Current): its
// completion is never waited for. Beside it, in the operator's folder: a kind that makes
// a child of a kind it does not declare (Stalled, UndeclaredChildKind, a Warning Event), one whose
// component throws (Stalled with the error), and a file that does not parse (logged by name); the
// operator and the other kinds go on. And a Guestbook of webapp.example.com, as `appstack new kind`
// writes it into both folders, unedited: its sample object, as written, passes the CRD (its CEL
// rule too), gets its Deployment and Service and goes Ready. Then its file is edited (a label on
// its Deployment) and the operator restarted on the same state: the object is applied anew because
// its kind's program changed, and its Deployment has the label.
import { batchRunSource, brokenSource, faultySource, kindFolder, misfitSource } from "../helpers/kind-folder.ts";
import { loadKindFolder } from "../../components/kind-files.ts";
import { newKind } from "../../operator/cmd/new-cli.ts";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { AppsV1Api, BatchV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import yaml from "js-yaml";

// Registered in this process too, before anything reads the kinds: the test installs the API and names the kind.
// The install is rendered from the files that load; the operator's folder has the broken one too.
const kinds = { "batch-run.ts": batchRunSource, "faulty.ts": faultySource, "misfit.ts": misfitSource };
const folder = kindFolder(kinds);
const operatorFolder = kindFolder({ ...kinds, "broken.ts": brokenSource });
for (const each of [folder, operatorFolder]) await newKind(["kind", "Guestbook", "--group", "webapp.example.com", "--dir", each]);
assert.deepEqual((await loadKindFolder(folder)).kinds, ["BatchRun", "Faulty", "Guestbook", "Misfit"]);
const { mergePatch, kubeClients } = await import("../../operator/kube/clients.ts");
const { installApi } = await import("../../operator/kube/apply.ts");
const { loadKubeConfig } = await import("../../toolchain/cluster/readiness.ts");
const { eventually, isNotFound, useCluster } = await import("../helpers/cluster.ts");
const { appstackCli, disposeOperator, startOperatorProcess, Workloads } = await import("../helpers/operator.ts");
const { serviceAccountKubeconfig } = await import("../helpers/service-account-kubeconfig.ts");

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
type Document = { kind: string; metadata: { name: string }; rules?: Rule[]; spec?: Record<string, unknown> };

const namespace = "batch-team";
const operatorUser = "system:serviceaccount:appstack-system:appstack-operator";
const scratch = mkdtempSync(join(tmpdir(), "appstack-own-kind-test-"));
let rendered: Document[] = [];
let operator: Awaited<ReturnType<typeof startOperatorProcess>> | undefined;
let operatorKubeconfig = "";
const operatorOptions = { installApi: false, args: ["--kinds", operatorFolder], env: { APPSTACK_LEADER_ELECT: "false" } };

const cluster = useCluster(
  async ({ cluster: local, core }) => {
    const render = await appstackCli(local.kubeconfig, "manifests", "--passphrase-secret", "appstack-credentials", "--kinds", folder);
    assert.equal(render.status, 0, render.stderr);
    rendered = yaml.loadAll(render.stdout) as Document[];
    // The operator's identity holds the rendered install's ClusterRole, as its pod would.
    const role = rendered.find((document) => document.kind === "ClusterRole" && document.metadata.name === "appstack-operator-appstack")!;
    const rbac = loadKubeConfig(local.kubeconfig).makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespace({ body: { metadata: { name: "appstack-system" } } });
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNamespacedServiceAccount({ namespace: "appstack-system", body: { metadata: { name: "appstack-operator" } } });
    await rbac.createClusterRole({ body: { metadata: { name: "appstack-operator-rendered" }, rules: role.rules! } });
    const subjects = [{ kind: "ServiceAccount", name: "appstack-operator", namespace: "appstack-system" }];
    await rbac.createClusterRoleBinding({ body: { metadata: { name: "appstack-operator-rendered" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "appstack-operator-rendered" }, subjects } });
    await installApi(kubeClients(local.kubeconfig), { operatorUsers: [operatorUser] });
    operatorKubeconfig = await serviceAccountKubeconfig(core, local.kubeconfig, "appstack-system", "appstack-operator", scratch);
    operator = await startOperatorProcess(operatorKubeconfig, operatorOptions);
  },
  async () => {
    await disposeOperator(operator);
    rmSync(scratch, { recursive: true, force: true });
    for (const each of [folder, operatorFolder]) rmSync(each, { recursive: true, force: true });
  },
);

test("the rendered install holds the kind's CRD in its group, and rules naming exactly its ConfigMap and Job children with the operator's verbs", () => {
  assert.ok(rendered.some((document) => document.kind === "CustomResourceDefinition" && document.metadata.name === "batchruns.batch.example.com"));
  const rules = rendered.find((document) => document.kind === "ClusterRole" && document.metadata.name === "appstack-operator-appstack")!.rules!;
  const write = ["get", "list", "watch", "create", "update", "patch", "delete"];
  assert.deepEqual(rules.filter((rule) => rule.resources.some((resource) => ["configmaps", "jobs"].includes(resource))), [
    { apiGroups: [""], resources: ["configmaps"], verbs: write },
    { apiGroups: ["batch"], resources: ["jobs"], verbs: write },
  ]);
  assert.deepEqual(rules.filter((rule) => rule.apiGroups.includes("batch.example.com")), [
    { apiGroups: ["batch.example.com"], resources: ["batchruns", "faulties", "misfits"], verbs: ["get", "list", "watch", "patch"] },
    { apiGroups: ["batch.example.com"], resources: ["batchruns/status", "faulties/status", "misfits/status"], verbs: ["get", "patch"] },
    { apiGroups: ["batch.example.com"], resources: ["batchruns/finalizers", "faulties/finalizers", "misfits/finalizers"], verbs: ["update"] },
  ]);
  // Nothing wider: no other kind of child of batch, no wildcard.
  assert.ok(!rules.some((rule) => rule.resources.includes("*") || rule.resources.includes("cronjobs") || rule.resources.includes("secrets")));
  const deployment = rendered.find((document) => document.kind === "Deployment") as unknown as { spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } };
  assert.deepEqual(deployment.spec.template.spec.containers[0]!.env.find((env) => env.name === "APPSTACK_KINDS_DIR"), { name: "APPSTACK_KINDS_DIR", value: "/app/kinds" });
});

test("its CRD refuses a bad spec with the field's message: its pattern, and its CEL rule's own message", async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  const create = (message: string) => workloads.create({ kind: "BatchRun", metadata: { name: "bad", namespace }, spec: { message } });
  await assert.rejects(create("Hello!"), /spec\.message in body should match '\^\[a-z \]\+\$'/);
  await assert.rejects(create("a".repeat(41)), /spec\.message is at most 40 characters: the Job echoes it on one line/);
});

test("an object gets its ConfigMap and Job, owned in its group; a hand edit of the ConfigMap is repaired; deleted, its children go", async () => {
  const { core } = cluster();
  const kubeconfig = cluster().cluster.kubeconfig;
  const batch = loadKubeConfig(kubeconfig).makeApiClient(BatchV1Api);
  const workloads = new Workloads(kubeconfig);
  const readConfigMap = () => core.readNamespacedConfigMap({ name: "hello", namespace });
  const created = await workloads.create({ kind: "BatchRun", metadata: { name: "hello", namespace }, spec: { message: "hello world" } });
  assert.equal(created.apiVersion, "batch.example.com/v1alpha1");

  const ready = await workloads.ready("BatchRun", namespace, "hello");
  const owner = `batch.example.com/v1alpha1 BatchRun/hello ${ready.metadata.uid}`;
  const configMap = await readConfigMap();
  assert.deepEqual(configMap.data, { message: "hello world" });
  assert.deepEqual(configMap.metadata?.ownerReferences?.map((ref) => `${ref.apiVersion} ${ref.kind}/${ref.name} ${ref.uid}`), [owner]);
  const job = await batch.readNamespacedJob({ name: "hello", namespace });
  assert.deepEqual(job.spec?.template.spec?.containers.map((container) => container.command), [["echo", "hello world"]]);
  assert.deepEqual(job.metadata?.ownerReferences?.map((ref) => `${ref.apiVersion} ${ref.kind}/${ref.name} ${ref.uid}`), [owner]);

  // A hand edit of the message and a key added beside it: drift, seen on the ConfigMap's watch and repaired.
  await core.patchNamespacedConfigMap({ name: "hello", namespace, body: { data: { message: "tampered", extra: "1" } } }, mergePatch);
  await eventually("the ConfigMap repaired", async () => {
    const data = (await readConfigMap()).data;
    return data?.["message"] === "hello world" && !("extra" in data) ? true : undefined;
  });
  await workloads.ready("BatchRun", namespace, "hello");

  await workloads.delete("BatchRun", namespace, "hello");
  await workloads.gone("BatchRun", namespace, "hello");
  await assert.rejects(readConfigMap(), isNotFound);
  await eventually("the Job deleted", async () => batch.readNamespacedJob({ name: "hello", namespace }).then(() => undefined, (error: unknown) => (isNotFound(error) ? true : undefined)));
});

test("a kind that makes a child of a kind it does not declare: its object is Stalled, UndeclaredChildKind naming the kind to declare, with a Warning Event; nothing is applied", async () => {
  const { core } = cluster();
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  await workloads.create({ kind: "Misfit", metadata: { name: "misfit", namespace }, spec: {} });
  const stalled = await workloads.condition("Misfit", namespace, "misfit", "Stalled", "True");
  const condition = stalled.status?.conditions?.find((c) => c.type === "Stalled");
  assert.equal(condition?.reason, "UndeclaredChildKind");
  assert.match(condition?.message ?? "", /Misfit batch-team\/misfit makes a child of kind Secret, which its definition does not declare: add it to its childKinds \(declared: ConfigMap\)/);
  const events = await eventually("the Warning Event", async () => {
    const list = await core.listNamespacedEvent({ namespace, fieldSelector: "involvedObject.name=misfit,reason=UndeclaredChildKind" });
    return list.items.length ? list.items : undefined;
  });
  assert.equal(events[0]?.type, "Warning");
  assert.equal(events[0]?.involvedObject.apiVersion, "batch.example.com/v1alpha1");
  assert.match(events[0]?.message ?? "", /child of kind Secret/);
  await assert.rejects(core.readNamespacedConfigMap({ name: "misfit", namespace }), isNotFound);
  await assert.rejects(core.readNamespacedSecret({ name: "misfit", namespace }), isNotFound);
});

test("a kind file that does not parse is logged by name, a kind whose component throws has its object Stalled with the error, and every other kind goes on", async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  const log = readFileSync(operator!.logFile, "utf8").split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, string>);
  const failed = log.find((line) => line["msg"]?.startsWith("a kind file failed to load"));
  assert.equal(failed?.["file"], join(operatorFolder, "broken.ts"));
  assert.ok(failed?.["error"], "its error is logged");
  assert.equal(log.find((line) => line["msg"] === "kinds loaded")?.["kinds"], "BatchRun, Faulty, Guestbook, Misfit");

  await workloads.create({ kind: "Faulty", metadata: { name: "faulty", namespace }, spec: {} });
  await workloads.create({ kind: "BatchRun", metadata: { name: "after", namespace }, spec: { message: "still here" } });
  const stalled = await workloads.condition("Faulty", namespace, "faulty", "Stalled", "True");
  assert.match(stalled.status?.conditions?.find((c) => c.type === "Stalled")?.message ?? "", /the faulty component gives up on purpose/);
  await workloads.ready("BatchRun", namespace, "after");
  assert.deepEqual((await cluster().core.readNamespacedConfigMap({ name: "after", namespace })).data, { message: "still here" });
});

test("a kind as `appstack new kind` wrote it, unedited: its CRD defaults and refuses as its fields say; its sample's Deployment and Service are made, owned in its group, and it goes Ready", async () => {
  const { core } = cluster();
  const kubeconfig = cluster().cluster.kubeconfig;
  const apps = loadKubeConfig(kubeconfig).makeApiClient(AppsV1Api);
  const workloads = new Workloads(kubeconfig);
  await assert.rejects(workloads.create({ kind: "Guestbook", metadata: { name: "latest", namespace }, spec: { image: "nginx:latest" } }), /spec\.image names a version, not :latest: a rollout must be repeatable/);
  const defaulted = await workloads.create({ kind: "Guestbook", metadata: { name: "defaults", namespace }, spec: { image: "nginx:1.27" } }, { dryRun: true });
  assert.deepEqual([(defaulted.spec as { replicas?: number }).replicas, (defaulted.spec as { port?: number }).port], [1, 8080], "replicas and port defaulted by the CRD");

  // The sample `appstack new kind` wrote, as written, in the test's namespace.
  const sample = yaml.load(readFileSync(join(folder, "samples", "guestbook.yaml"), "utf8")) as { kind: string; metadata: { name: string }; spec: { image: string; replicas: number; port: number } };
  const name = sample.metadata.name;
  const created = await workloads.create({ ...sample, metadata: { ...sample.metadata, namespace } });
  assert.equal(created.apiVersion, "webapp.example.com/v1alpha1");

  const ready = await workloads.ready("Guestbook", namespace, name);
  const owner = `webapp.example.com/v1alpha1 Guestbook/${name} ${ready.metadata.uid}`;
  const deployment = await apps.readNamespacedDeployment({ name, namespace });
  assert.deepEqual(deployment.spec?.template.spec?.containers.map((container) => [container.image, container.ports?.[0]?.containerPort]), [[sample.spec.image, sample.spec.port]]);
  assert.equal(deployment.status?.readyReplicas, sample.spec.replicas);
  assert.deepEqual(deployment.metadata?.ownerReferences?.map((ref) => `${ref.apiVersion} ${ref.kind}/${ref.name} ${ref.uid}`), [owner]);
  const service = await core.readNamespacedService({ name, namespace });
  assert.deepEqual(service.spec?.ports?.map((port) => [port.port, port.targetPort]), [[sample.spec.port, "http"]]);
  assert.deepEqual(service.spec?.selector, deployment.spec?.selector.matchLabels);
  assert.deepEqual(service.metadata?.ownerReferences?.map((ref) => `${ref.apiVersion} ${ref.kind}/${ref.name} ${ref.uid}`), [owner]);
});

test("the kind's file edited and the operator restarted: its existing object is applied anew, for its kind's program, and its Deployment gets the label the file now gives it", async () => {
  const kubeconfig = cluster().cluster.kubeconfig;
  const apps = loadKubeConfig(kubeconfig).makeApiClient(AppsV1Api);
  const workloads = new Workloads(kubeconfig);
  const name = (yaml.load(readFileSync(join(folder, "samples", "guestbook.yaml"), "utf8")) as { metadata: { name: string } }).metadata.name;
  const before = await workloads.ready("Guestbook", namespace, name);
  const fingerprint = before.status?.stack?.appliedFingerprint;
  assert.match(fingerprint ?? "", /^v=4\+[0-9a-f]{12};g=1;s=/, "recorded with the kind's own program version");
  const file = join(operatorFolder, "guestbook.ts");
  const source = readFileSync(file, "utf8");
  const edited = source.replace(/(const deployment: k8s\.types\.input\.apps\.v1\.Deployment = \{\n\s+)metadata,/, '$1metadata: { ...metadata, labels: { ...metadata.labels, tier: "web" } },');
  assert.notEqual(edited, source, "the template's Deployment takes the label");
  writeFileSync(file, edited);
  await operator!.stop();
  operator = await startOperatorProcess(operatorKubeconfig, { ...operatorOptions, stateDir: operator!.stateDir });

  // The spec is unchanged: only the kind's program version tells the operator to apply it anew.
  const after = await eventually("the Guestbook applied with its kind's new program version", async () => {
    const object = await workloads.get("Guestbook", namespace, name);
    return object.status?.stack?.appliedFingerprint !== fingerprint ? object : undefined;
  });
  assert.match(after.status?.stack?.appliedFingerprint ?? "", /^v=4\+[0-9a-f]{12};g=1;s=/);
  const { why, detail } = after.status?.stack?.lastOperation?.update ?? {};
  assert.deepEqual({ why, detail }, { why: "program", detail: "the kind's program changed (its kind file or its programVersion)" });
  assert.equal((await apps.readNamespacedDeployment({ name, namespace })).metadata?.labels?.["tier"], "web");
  await workloads.ready("Guestbook", namespace, name);
});
