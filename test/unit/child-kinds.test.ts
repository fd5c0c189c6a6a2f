// Children of any kind: a kind declares the kinds of child it makes, and the watches, the RBAC
// rules, the ownership policy and the stack state's reading cover the union of every registered
// kind's, exactly. Shown with a kind of the tests only (test/helpers/greeter-kind.ts), whose
// children are a Deployment and a ConfigMap, registered here before anything reads the kinds.
import assert from "node:assert/strict";
import { test } from "node:test";
import { recordRegistrations, registeredResource } from "../helpers/pulumi-mocks.ts";

// The mocks first (components register under them), then the kind: its import registers it.
const registered = await recordRegistrations();
const { greeterKind } = await import("../helpers/greeter-kind.ts");
const { declaredChildren } = await import("../../components/workload.ts");
const { childKinds, childKindOfType, childManifests, apiPolicies, registerKind, workloadKinds, customResourceDefinitions } = await import("../../components/kinds.ts");
const { operatorRules } = await import("../../components/install.ts");
const { childKindUnion } = await import("../../crds/child-kinds.ts");
const { childKind } = await import("../../components/child-kind.ts");
const { childrenIn } = await import("../../operator/pulumi/checkpoints.ts");
const { CacheSyncTimeout, Watcher } = await import("../../operator/controller/watch.ts");
const { apiClient } = await import("../../operator/kube/clients.ts");
const { ChildObjectApi } = await import("../../operator/kube/child-apis.ts");
const { createLogger } = await import("../../operator/base/log.ts");
const { additions } = await import("../../operator/controller/additions.ts");
const { handOver } = await import("../../operator/controller/handover.ts");
const { silentServer } = await import("../helpers/silent-api-server.ts");
const { AppsV1Api, CoreV1Api, CustomObjectsApi } = await import("@kubernetes/client-node");

const greeter = (spec: Record<string, unknown>) => ({ apiVersion: "appstack.dev/v1alpha1", kind: "Greeter", metadata: { name: "hello", namespace: "team-a", uid: "uid-hello", generation: 1 }, spec }) as never;

test("the child kinds are the union of every kind's, each once, in the order first declared; the registry closes at its first read", () => {
  assert.deepEqual(workloadKinds(), ["App", "Memcached", "Greeter"]);
  assert.deepEqual(childKinds().map((kind) => `${kind.apiVersion} ${kind.kind} ${kind.plural} ${kind.resourceType}`), [
    "apps/v1 Deployment deployments kubernetes:apps/v1:Deployment",
    "v1 Service services kubernetes:core/v1:Service",
    "networking.k8s.io/v1 NetworkPolicy networkpolicies kubernetes:networking.k8s.io/v1:NetworkPolicy",
    "v1 ConfigMap configmaps kubernetes:core/v1:ConfigMap",
  ]);
  assert.equal(customResourceDefinitions().at(-1)?.metadata.name, "greeters.appstack.dev");
  assert.throws(() => registerKind(greeterKind), /kind Greeter registered after the kinds were read \(App, Memcached, Greeter\)/);
});

test("the RBAC rules name exactly the declared kinds of child: with tenant identities, only to read them", () => {
  const rules = operatorRules() as { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  const configMaps = rules.filter((rule) => rule.resources.includes("configmaps"));
  assert.deepEqual(configMaps, [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"] }]);
  const tenant = (operatorRules(undefined, true) as { resources: string[]; verbs: string[] }[]).find((rule) => rule.resources.includes("configmaps"));
  assert.deepEqual(tenant?.verbs, ["get", "list", "watch"]);
  // Nothing wider: no rule names a kind of child nobody declares.
  for (const other of ["secrets", "statefulsets", "jobs", "*"]) assert.ok(!rules.some((rule) => rule.resources.includes(other)), other);
});

test("the ownership policy covers updates of every declared kind of child", () => {
  const [policy] = apiPolicies();
  assert.deepEqual(policy.spec.matchConstraints.resourceRules, [
    { apiGroups: ["apps"], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["deployments"] },
    { apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["services"] },
    { apiGroups: ["networking.k8s.io"], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["networkpolicies"] },
    { apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["configmaps"] },
  ]);
});

test("the operator watches every declared kind of child, listing by path with no discovery request", async (t) => {
  // An API server that never answers: the caches cannot sync, and the timeout names every watch.
  const server = await silentServer(() => undefined);
  t.after(() => server.close());
  const clients = { config: server.config, core: apiClient(server.config, CoreV1Api), apps: apiClient(server.config, AppsV1Api), custom: apiClient(server.config, CustomObjectsApi), objects: apiClient(server.config, ChildObjectApi) };
  const queue = { add: () => undefined, addUnlessWaiting: () => undefined };
  const watcher = new Watcher(clients, "all", queue, createLogger({ level: "error", write: () => undefined }), 60_000);
  t.after(() => watcher.stop());
  const error = await watcher.start(500).then(() => undefined, (e: unknown) => e);
  assert.ok(error instanceof CacheSyncTimeout, String(error));
  for (const path of ["/apis/apps/v1/deployments", "/api/v1/services", "/apis/networking.k8s.io/v1/networkpolicies", "/api/v1/configmaps", "/api/v1/pods"]) assert.match(error.message, new RegExp(`${path}[,)]|${path}$`), path);
  const listed = server.requests.filter((url) => url.pathname === "/api/v1/configmaps");
  assert.equal(listed[0]?.searchParams.get("labelSelector"), "app.kubernetes.io/managed-by=appstack");
  assert.ok(!server.requests.some((url) => url.pathname === "/api/v1" || url.pathname === "/apis/apps/v1"), "no discovery request");
});

test("a child of a kind its definition does not declare is refused before anything is applied, naming the kind to declare", () => {
  const owner = { kind: "Greeter", name: "hello", namespace: "team-a", uid: "uid-hello" };
  const spec = { image: "nginx:1.27", replicas: 1, greeting: "hi" };
  assert.deepEqual(childManifests(greeter(spec)).map((child) => child.kind), ["Deployment", "ConfigMap"]);
  const sneaky = { ...greeterKind, children: () => [{ kind: "Secret", name: "hello", manifest: {} }] };
  assert.throws(() => declaredChildren(sneaky, owner, spec), /Greeter team-a\/hello makes a child of kind Secret, which its definition does not declare: add it to its childKinds \(declared: Deployment, ConfigMap\)/);
});

test("two kinds that declare one child kind's name differently are refused, naming both; a cluster-scoped kind of child too", () => {
  const ours = childKind({ apiVersion: "example.com/v1", kind: "Certificate", plural: "certificates", namespaced: true });
  const theirs = childKind({ apiVersion: "cert-manager.io/v1", kind: "Certificate", plural: "certificates", namespaced: true });
  assert.equal(ours.resourceType, "kubernetes:example.com/v1:Certificate");
  assert.deepEqual(childKindUnion([["Web", [ours]], ["Api", [ours]]]), [ours]);
  assert.throws(() => childKindUnion([["Web", [ours]], ["Api", [theirs]]]), /the child kind Certificate is declared as example\.com\/v1 certificates \(kubernetes:example\.com\/v1:Certificate\) by Web and as cert-manager\.io\/v1 certificates \(kubernetes:cert-manager\.io\/v1:Certificate\) by Api/);
  const roles = childKind({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", plural: "clusterroles", namespaced: false });
  assert.throws(() => childKindUnion([["Web", [roles]]]), /Web declares the cluster-scoped child kind ClusterRole/);
});

test("a ConfigMap child is the provider's resource of its type, with its apiVersion and kind; the stack's state names it by that type", async () => {
  const component = greeterKind.component({ kind: "Greeter", name: "hello", namespace: "team-a", uid: "uid-hello" }, { image: "nginx:1.27", replicas: 2, greeting: "hi" }, {});
  await registeredResource(component.deployment!);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const configMap = registered.find((r) => r.type === "kubernetes:core/v1:ConfigMap" && r.name === "hello");
  assert.ok(configMap, registered.map((r) => `${r.type}/${r.name}`).join(", "));
  assert.equal(configMap.inputs["apiVersion"], "v1");
  assert.equal(configMap.inputs["kind"], "ConfigMap");
  assert.deepEqual(configMap.inputs["data"], { greeting: "hi" });
  assert.equal(childKindOfType("kubernetes:core/v1:ConfigMap")?.kind, "ConfigMap");
  assert.deepEqual(childrenIn([{ type: "kubernetes:core/v1:ConfigMap", id: "team-a/hello" }, { type: "kubernetes:core/v1:Secret", id: "team-a/x" }]), [{ kind: "ConfigMap", namespace: "team-a", name: "hello" }]);
});

test("the drift check reads what any kind of child holds beside metadata and status: a key added to a ConfigMap's data is drift, handed over and removed", () => {
  const manifest = { metadata: { name: "hello" }, data: { greeting: "hi" } };
  const applied = { manager: "appstack", operation: "Apply", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:labels": { "f:team": {} } }, "f:data": { "f:greeting": {} } } };
  const edit = { manager: "kubectl-patch", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:annotations": { "f:note": {} } }, "f:data": { "f:extra": {} } } };
  assert.deepEqual(additions(manifest, [applied, edit], "appstack"), ["data.extra: added by kubectl-patch"]);
  const handed = handOver([applied, edit], "appstack");
  assert.deepEqual(handed?.[0]?.fieldsV1, { "f:metadata": { "f:labels": { "f:team": {} } }, "f:data": { "f:greeting": {}, "f:extra": {} } });
  // The editor keeps its metadata.
  assert.deepEqual(handed?.[1]?.fieldsV1, { "f:metadata": { "f:annotations": { "f:note": {} } } });
});
