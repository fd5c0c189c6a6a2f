// A kind in an API group of its own (defineKind's api.group): its CRD, the names the command line
// takes, the clients' resource, the install's RBAC rules and the admission policies all name its
// group, while App's and Memcached's stay appstack.dev's. Registered here before anything reads
// the kinds.
import assert from "node:assert/strict";
import { test } from "node:test";
import { childKind } from "../../components/child-kind.ts";
import { apiPolicies, customResourceDefinitions, kindGroups, kindNamed, kindOwner, registerKind, resourceOf } from "../../components/kinds.ts";
import { childMetadata } from "../../components/metadata.ts";
import { operatorRules } from "../../components/operator-rules.ts";
import { defineKind } from "../../components/workload.ts";
import { approvalPolicy } from "../../crds/approval.ts";
import { Type } from "../../crds/schema-kit.ts";
import { shardLabelsPolicy } from "../../crds/shard-labels.ts";

const secretChild = childKind({ apiVersion: "v1", kind: "Secret", plural: "secrets", namespaced: true });

const definition = (kind: string, plural: string, group?: string) => defineKind({
  api: {
    kind,
    plural,
    ...(group ? { group } : {}),
    description: "A toolbox of the tests.",
    spec: { description: "Its tools.", fields: { tools: Type.Integer({ minimum: 0, default: 1, description: "How many." }) } },
    printerColumns: [],
    replicasPath: ".spec.tools",
  },
  appName: (object) => object.metadata.name,
  childKinds: [secretChild],
  children: () => [],
  component: () => {
    throw new Error("not run here");
  },
  replicas: () => 0,
});

registerKind(definition("Toolbox", "toolboxes", "tools.example.com"));

test("a kind's group that is no API group is refused by defineKind, naming the kind and the field", () => {
  assert.throws(() => definition("Bad", "bads", "nodots"), /Bad: api.group "nodots" is not an API group: a DNS subdomain with at least one dot/);
  assert.throws(() => definition("Bad", "bads", "Upper.Example.com"), /Bad: api.group "Upper.Example.com"/);
});

test("a kind name is unique across every group: another group's Toolbox is refused, and the message says why", () => {
  assert.throws(() => registerKind(definition("Toolbox", "boxes", "other.example.com")), /kind Toolbox \(other.example.com\): its kind, plural or a short name is Toolbox's \(tools.example.com\) already; kind names, plurals and short names are unique across all kinds, whatever their API groups/);
  assert.throws(() => registerKind(definition("Box", "apps", "other.example.com")), /is App's \(appstack.dev\) already/);
});

test("its CRD is <plural>.<group> in its group; the command line takes its names with its own group; its clients' resource is in its group", () => {
  const crd = customResourceDefinitions().find((each) => each.spec["names"] && (each.spec["names"] as { kind: string }).kind === "Toolbox");
  assert.equal(crd?.metadata.name, "toolboxes.tools.example.com");
  assert.equal(crd?.spec["group"], "tools.example.com");
  assert.equal(customResourceDefinitions()[0]?.metadata.name, "apps.appstack.dev");
  assert.equal(kindNamed("toolboxes.tools.example.com"), "Toolbox");
  assert.equal(kindNamed("Toolbox.Tools.Example.com"), "Toolbox");
  assert.equal(kindNamed("toolboxes.appstack.dev"), undefined);
  assert.equal(kindNamed("apps.appstack.dev"), "App");
  assert.deepEqual(resourceOf("Toolbox"), { group: "tools.example.com", version: "v1alpha1", plural: "toolboxes" });
  assert.deepEqual(kindGroups(), [
    { group: "appstack.dev", kinds: ["App", "Memcached"], plurals: ["apps", "memcacheds"] },
    { group: "tools.example.com", kinds: ["Toolbox"], plurals: ["toolboxes"] },
  ]);
});

test("its children's ownerReference names its group's apiVersion", () => {
  const object = { apiVersion: "tools.example.com/v1alpha1", kind: "Toolbox", metadata: { name: "kit", namespace: "team-a", uid: "uid-kit" }, spec: { tools: 1 } };
  assert.equal(childMetadata(kindOwner(object), "kit").ownerReferences[0]?.apiVersion, "tools.example.com/v1alpha1");
  // Whatever the object as listed says (list items carry no apiVersion).
  assert.equal(childMetadata(kindOwner({ ...object, apiVersion: "" }), "kit").ownerReferences[0]?.apiVersion, "tools.example.com/v1alpha1");
});

test("the install's RBAC rules name each group's objects, status and finalizers, and the kind's declared children", () => {
  const rules = operatorRules() as { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  const of = (group: string) => rules.filter((rule) => rule.apiGroups.includes(group)).map((rule) => `${rule.resources.join(",")}: ${rule.verbs.join(",")}`);
  assert.deepEqual(of("tools.example.com"), ["toolboxes: get,list,watch,patch", "toolboxes/status: get,patch", "toolboxes/finalizers: update"]);
  assert.deepEqual(of("appstack.dev"), ["apps,memcacheds: get,list,watch,patch", "apps/status,memcacheds/status: get,patch", "apps/finalizers,memcacheds/finalizers: update"]);
  assert.deepEqual(rules.filter((rule) => rule.resources.includes("secrets")).map((rule) => rule.verbs.join(",")), ["get,list,watch,create,update,patch,delete"]);
});

test("the shard labels' and the approval's policies match each group's resources; approving asks the authorizer of the request's group", () => {
  const users = ["system:serviceaccount:appstack-system:appstack-operator"];
  for (const [policy] of [shardLabelsPolicy(users, kindGroups()), approvalPolicy(users, kindGroups())]) {
    assert.deepEqual(policy.spec.matchConstraints.resourceRules.map((rule) => `${rule.apiGroups.join()}: ${rule.resources.join()}`), ["appstack.dev: apps,memcacheds", "tools.example.com: toolboxes"]);
  }
  const [approval] = approvalPolicy(users, kindGroups());
  const check = approval.spec.validations[0]!;
  assert.match(check.expression, /authorizer\.group\(request\.resource\.group\)/);
  assert.match(check.messageExpression, /on ' \+ request\.resource\.resource \+ '\.' \+ request\.resource\.group \+ ':/);
  assert.match(check.message, /\(memcacheds, toolboxes.tools.example.com for the other kinds\)/);
  // One group alone (App and Memcached): the authorizer is asked of it by name, as the install has always said.
  assert.match(approvalPolicy(users, kindGroups().slice(0, 1))[0].spec.validations[0]!.expression, /authorizer\.group\('appstack.dev'\)/);
});

test("the ownership policy takes an ownerReference to any kind of appstack.dev, and to this group's own kinds only", () => {
  const [policy] = apiPolicies();
  const [validation] = policy.spec.validations;
  assert.match(validation.expression, /\(r\.apiVersion\.startsWith\('appstack\.dev\/'\) \|\| \(r\.apiVersion\.startsWith\('tools\.example\.com\/'\) && r\.kind in \["Toolbox"\]\)\)/);
});
