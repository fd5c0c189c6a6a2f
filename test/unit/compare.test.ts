// Drift without an engine: the live children compared with the manifests the components apply,
// as the API server returns them (defaults added, quantities canonical, empty strings omitted),
// and what others added to their spec, as managedFields record it.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Deployment, V1ManagedFieldsEntry, V1Service } from "@kubernetes/client-node";
import { childManifests } from "../../components/kinds.ts";
import type { App } from "../../components/app.ts";
import { judge, summarize } from "../../operator/controller/children.ts";
import { differences, quantityMillis } from "../../operator/controller/compare.ts";
import { unionOfFields } from "../../operator/controller/edits.ts";

const app: App = {
  apiVersion: "appstack.dev/v1alpha1",
  kind: "App",
  metadata: { name: "web", namespace: "team-a", uid: "uid-web", generation: 1 },
  spec: { image: "nginx:1.27", replicas: 2, port: 8080, env: [{ name: "MODE", value: "e2e" }, { name: "EMPTY", value: "" }], resources: { requests: { cpu: "0.5", memory: "1024Mi" } } },
};

const [deploymentChild, serviceChild] = childManifests(app);

const copy = <T>(value: unknown): T => JSON.parse(JSON.stringify(value)) as T;

/** What the API server makes of the Deployment manifest: defaults, canonical quantities, omitted empty strings. */
function storedDeployment(): V1Deployment {
  const live = copy<V1Deployment>(deploymentChild!.manifest);
  live.metadata = { ...live.metadata, uid: "child-uid", resourceVersion: "7", generation: 1, managedFields: [] };
  live.spec!.strategy = { type: "RollingUpdate" };
  const container = live.spec!.template.spec!.containers[0]!;
  container.imagePullPolicy = "IfNotPresent";
  container.env = container.env!.map((e) => (e.value === "" ? { name: e.name } : e));
  container.resources = { requests: { cpu: "500m", memory: "1Gi" } };
  return live;
}

function storedService(): V1Service {
  const live = copy<V1Service>(serviceChild!.manifest);
  live.metadata = { ...live.metadata, uid: "service-uid" };
  live.spec = { ...live.spec, clusterIP: "10.0.0.12", sessionAffinity: "None" };
  return live;
}

const containerOf = (d: V1Deployment) => d.spec!.template.spec!.containers[0]!;

test("the children as the API server stores them match their manifests", () => {
  assert.deepEqual(differences(deploymentChild!.manifest, storedDeployment()), []);
  assert.deepEqual(differences(serviceChild!.manifest, storedService()), []);
});

test("every field appstack sets is compared: replicas, image, env, ports, labels, annotations, Service ports and type", () => {
  const edits: [(live: V1Deployment) => void, RegExp][] = [
    [(d) => (d.spec!.replicas = 5), /^spec\.replicas: 5, want 2$/],
    [(d) => (containerOf(d).image = "evil:1"), /containers\[app\]\.image: "evil:1", want "nginx:1\.27"/],
    [(d) => (containerOf(d).env![0]!.value = "prod"), /env\[MODE\]\.value: "prod", want "e2e"/],
    [(d) => containerOf(d).env!.splice(0, 1), /env\[MODE\]: missing/],
    [(d) => (containerOf(d).ports![0]!.containerPort = 9090), /ports\[http\]\.containerPort: 9090, want 8080/],
    [(d) => (containerOf(d).resources!.requests!["cpu"] = "1"), /resources\.requests\.cpu: "1", want "0\.5"/],
    [(d) => delete d.metadata!.labels!["app.kubernetes.io/managed-by"], /metadata\.labels\[app\.kubernetes\.io\/managed-by\]: missing, want "appstack"/],
    [(d) => delete d.metadata!.annotations!["pulumi.com/patchForce"], /annotations\[pulumi\.com\/patchForce\]: missing/],
    [(d) => (d.spec!.template.metadata!.labels!["app.kubernetes.io/instance"] = "other"), /template\.metadata\.labels/],
  ];
  for (const [edit, expected] of edits) {
    const live = storedDeployment();
    edit(live);
    const found = differences(deploymentChild!.manifest, live);
    assert.equal(found.length, 1, `${expected}: ${found.join(" | ")}`);
    assert.match(found[0]!, expected);
  }
  const serviceEdits: [(live: V1Service) => void, RegExp][] = [
    [(s) => (s.spec!.ports![0]!.targetPort = 9090), /spec\.ports\[http\]\.targetPort: 9090, want "http"/],
    [(s) => (s.spec!.ports![0]!.port = 80), /spec\.ports\[http\]\.port: 80, want 8080/],
    [(s) => (s.spec!.type = "NodePort"), /spec\.type: "NodePort", want "ClusterIP"/],
    [(s) => (s.spec!.selector = { app: "other" }), /spec\.selector/],
  ];
  for (const [edit, expected] of serviceEdits) {
    const live = storedService();
    edit(live);
    assert.match(differences(serviceChild!.manifest, live).join(" | "), expected);
  }
});

const app0 = 'k:{"name":"app"}';
/** managedFields as the API server writes them: appstack's apply, the Deployment controller's writes, and `edits` by others. */
function withManagers(live: V1Deployment, ...edits: V1ManagedFieldsEntry[]): V1Deployment {
  live.metadata!.managedFields = [
    { manager: "appstack", operation: "Apply", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:replicas": {}, "f:template": { "f:spec": { "f:containers": { [app0]: { ".": {}, "f:image": {}, "f:name": {} } } } } } } },
    { manager: "kube-controller-manager", operation: "Update", subresource: "status", fieldsType: "FieldsV1", fieldsV1: { "f:status": { "f:replicas": {} } } },
    { manager: "kube-controller-manager", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:annotations": { ".": {}, "f:deployment.kubernetes.io/revision": {} } } } },
    ...edits,
  ];
  return live;
}

const edit = (manager: string, fieldsV1: object, operation = "Update"): V1ManagedFieldsEntry => ({ manager, operation, fieldsType: "FieldsV1", fieldsV1 });
const inTemplate = (spec: object): Record<string, unknown> => ({ "f:spec": { "f:template": { "f:spec": spec } } });
const inContainer = (fields: object) => inTemplate({ "f:containers": { [app0]: fields } });

function judgedDifferences(live: V1Deployment | V1Service, child = deploymentChild!): readonly string[] {
  const judged = judge(app, child, live);
  assert.equal(judged.state, "owned");
  return judged.state === "owned" ? judged.differences : [];
}

test("what others add to the spec is drift, named with who added it: env, containers, command, hostNetwork, serviceAccountName, paused", () => {
  const cases: [string, (d: V1Deployment) => void, V1ManagedFieldsEntry, string][] = [
    ["kubectl set env", (d) => containerOf(d).env!.push({ name: "EXTRA", value: "1" }), edit("kubectl-set", inContainer({ "f:env": { 'k:{"name":"EXTRA"}': { ".": {}, "f:name": {}, "f:value": {} } } })), "spec.template.spec.containers[app].env[EXTRA]: added by kubectl-set"],
    ["a second container", (d) => d.spec!.template.spec!.containers.push({ name: "sidecar", image: "envoy", imagePullPolicy: "IfNotPresent" }), edit("kubectl-patch", inTemplate({ "f:containers": { 'k:{"name":"sidecar"}': { ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {} } } })), "spec.template.spec.containers[sidecar]: added by kubectl-patch"],
    ["a command", (d) => (containerOf(d).command = ["sh", "-c", "sleep 1d"]), edit("kubectl-edit", inContainer({ "f:command": {} })), "spec.template.spec.containers[app].command: added by kubectl-edit"],
    ["hostNetwork", (d) => (d.spec!.template.spec!.hostNetwork = true), edit("kubectl-patch", inTemplate({ "f:hostNetwork": {} })), "spec.template.spec.hostNetwork: added by kubectl-patch"],
    ["a port's hostPort", (d) => (containerOf(d).ports![0]!.hostPort = 8080), edit("kubectl-patch", inContainer({ "f:ports": { 'k:{"containerPort":8080,"protocol":"TCP"}': { "f:hostPort": {} } } })), "spec.template.spec.containers[app].ports[http].hostPort: added by kubectl-patch"],
    ["a port of its own", (d) => containerOf(d).ports!.push({ containerPort: 9090, protocol: "TCP" }), edit("kubectl-patch", inContainer({ "f:ports": { 'k:{"containerPort":9090,"protocol":"TCP"}': { ".": {}, "f:containerPort": {}, "f:protocol": {} } } })), "spec.template.spec.containers[app].ports[containerPort=9090,protocol=TCP]: added by kubectl-patch"],
    ["serviceAccountName", (d) => (d.spec!.template.spec!.serviceAccountName = "admin"), edit("kubectl-patch", inTemplate({ "f:serviceAccountName": {} })), "spec.template.spec.serviceAccountName: added by kubectl-patch"],
    ["kubectl rollout pause", (d) => (d.spec!.paused = true), edit("kubectl-rollout", { "f:spec": { "f:paused": {} } }), "spec.paused: added by kubectl-rollout"],
    ["a pod template label", (d) => (d.spec!.template.metadata!.labels!["debug"] = "1"), edit("kubectl-patch", { "f:spec": { "f:template": { "f:metadata": { "f:labels": { "f:debug": {} } } } } }), "spec.template.metadata.labels.debug: added by kubectl-patch"],
    ["a rollout setting", (d) => (d.spec!.strategy = { type: "RollingUpdate", rollingUpdate: { maxSurge: 3 } }), edit("kubectl-patch", { "f:spec": { "f:strategy": { "f:rollingUpdate": { "f:maxSurge": {} } } } }), "spec.strategy.rollingUpdate.maxSurge: added by kubectl-patch"],
    ["a limit", (d) => (containerOf(d).resources!.limits = { cpu: "1" }), edit("kubectl-set", inContainer({ "f:resources": { "f:limits": { ".": {}, "f:cpu": {} } } })), "spec.template.spec.containers[app].resources.limits.cpu: added by kubectl-set"],
    ["another applier", (d) => containerOf(d).env!.push({ name: "MINE", value: "1" }), edit("dba", inContainer({ "f:env": { 'k:{"name":"MINE"}': { ".": {}, "f:name": {}, "f:value": {} } } }), "Apply"), "spec.template.spec.containers[app].env[MINE]: added by dba"],
  ];
  for (const [what, change, entry, expected] of cases) {
    const live = storedDeployment();
    change(live);
    assert.deepEqual(judgedDifferences(withManagers(live, entry)), [expected], what);
  }
});

test("not drift: the API server's defaults, the cluster's controllers, metadata others add, a restart, a scale of the same size", () => {
  const live = storedDeployment();
  // Defaults: in no managedFields entry.
  live.spec!.revisionHistoryLimit = 10;
  live.spec!.template.spec!.dnsPolicy = "ClusterFirst";
  live.metadata!.labels!["team"] = "dba";
  live.metadata!.annotations!["deployment.kubernetes.io/revision"] = "3";
  live.spec!.template.metadata!.annotations = { "kubectl.kubernetes.io/restartedAt": "2026-11-24T20:00:00Z" };
  withManagers(
    live,
    edit("kubectl-label", { "f:metadata": { "f:labels": { "f:team": {} } } }),
    edit("kubectl-rollout", { "f:spec": { "f:template": { "f:metadata": { "f:annotations": { ".": {}, "f:kubectl.kubernetes.io/restartedAt": {} } } } } }),
    { ...edit("kubectl", { "f:spec": { "f:replicas": {} } }), subresource: "scale" },
  );
  assert.deepEqual(judgedDifferences(live), []);
});

test("an addition handed over to appstack and not yet removed is still drift, named as such", () => {
  const live = withManagers(storedDeployment());
  containerOf(live).env!.push({ name: "EXTRA", value: "1" });
  const ours = live.metadata!.managedFields![0]!;
  ours.fieldsV1 = unionOfFields(ours.fieldsV1 as Record<string, unknown>, inContainer({ "f:env": { 'k:{"name":"EXTRA"}': { ".": {}, "f:name": {}, "f:value": {} } } }));
  assert.deepEqual(judgedDifferences(live), ["spec.template.spec.containers[app].env[EXTRA]: added, owned by appstack until removed"]);
});

test("a field appstack sets, changed by someone else, is one difference by value, not an addition", () => {
  const live = storedDeployment();
  containerOf(live).image = "evil:1";
  withManagers(live, edit("kubectl-set", inContainer({ "f:image": {} })));
  assert.deepEqual(judgedDifferences(live), ['spec.template.spec.containers[app].image: "evil:1", want "nginx:1.27"']);
  // Set back to appstack's value by hand: nothing differs, whoever owns it now.
  containerOf(live).image = "nginx:1.27";
  assert.deepEqual(judgedDifferences(live), []);
});

test("the Service's spec is appstack's too; its allocated and defaulted fields are nobody's", () => {
  const live = storedService();
  live.spec!.externalTrafficPolicy = "Local";
  live.metadata!.managedFields = [edit("kubectl-patch", { "f:spec": { "f:externalTrafficPolicy": {} } })];
  assert.deepEqual(judgedDifferences(live, serviceChild), ["spec.externalTrafficPolicy: added by kubectl-patch"]);
  assert.deepEqual(judgedDifferences(storedService(), serviceChild), []);
});

test("quantities compare by value, exactly, as the API server stores them", () => {
  assert.equal(quantityMillis("0.5"), quantityMillis("500m"));
  assert.equal(quantityMillis("1Gi"), quantityMillis("1024Mi"));
  assert.equal(quantityMillis("1.5Gi"), 3n * 2n ** 29n * 1000n);
  assert.equal(quantityMillis("1e3"), quantityMillis("1k"));
  assert.equal(quantityMillis("nginx"), undefined);
  assert.equal(quantityMillis("."), undefined);
  // Floats would not do: 144 of the 999 values 0.001 to 0.999 differed from their "<n>m" form as
  // floats, and the API server stores "0.009" as "9m".
  for (let milli = 1; milli < 1000; milli++) assert.equal(quantityMillis(String(milli / 1000)), quantityMillis(`${milli}m`), `${milli / 1000}`);
  assert.equal(quantityMillis("1.1Gi"), quantityMillis("1181116006400m"));
  // More precise than milli is rounded up, away from zero; past 2^63-1 capped (the CRD refuses those).
  assert.equal(quantityMillis("0.0000000001"), quantityMillis("1m"));
  assert.equal(quantityMillis("1n"), quantityMillis("1m"));
  assert.equal(quantityMillis("1.5m"), quantityMillis("2m"));
  assert.equal(quantityMillis("1e-400"), 1n);
  assert.equal(quantityMillis("999999999999999999999Ei"), quantityMillis("9223372036854775807"));
  assert.equal(quantityMillis("1e999999999"), quantityMillis("9223372036854775807"));
  // int-or-string: a number in the spec comes back as a string (found by the hostile-input test:
  // `memory: 2` against "2" was drift repaired for ever).
  const path = "spec.template.spec.containers[app].resources.limits";
  assert.deepEqual(differences({ memory: 2, cpu: 1.5 }, { memory: "2", cpu: "1500m" }, path), []);
  assert.deepEqual(differences({ memory: 2 }, { memory: "3" }, path), [`${path}.memory: "3", want 2`]);
});

test("a child is the object's own only when its controller reference names the object's uid", () => {
  const ours = storedDeployment();
  assert.equal(judge(app, deploymentChild!, ours).state, "owned");
  assert.equal(judge(app, deploymentChild!, undefined).state, "missing");
  const users = { metadata: { name: "web", namespace: "team-a", labels: { owner: "dba" } } };
  assert.equal(judge(app, deploymentChild!, users).state, "foreign");
  const memcacheds = { metadata: { name: "web", namespace: "team-a", ownerReferences: [{ apiVersion: "appstack.dev/v1alpha1", kind: "Memcached", name: "web", uid: "uid-cache", controller: true }] } };
  const judged = judge(app, deploymentChild!, memcacheds);
  assert.deepEqual(judged.state === "foreign" ? judged.controller : undefined, "Memcached/web");

  const observed = summarize([judge(app, deploymentChild!, memcacheds), judge(app, serviceChild!, undefined)]);
  assert.equal(observed.deployment, undefined, "another object's Deployment is never reported as this one's");
  assert.equal(observed.conflicts.length, 1);
  assert.deepEqual(observed.drift, ["Service web: missing"]);
});
