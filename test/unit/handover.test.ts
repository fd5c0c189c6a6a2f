// The handover of edits by others, on managedFields as the API server wrote them after `kubectl
// patch` changed a containerPort (a list key) of a Deployment appstack applied, and after other
// edits of its spec and metadata.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1ManagedFieldsEntry } from "@kubernetes/client-node";
import { unionOfFields } from "../../operator/controller/edits.ts";
import { handOver } from "../../operator/controller/handover.ts";

const container = 'k:{"name":"app"}';
const entries: V1ManagedFieldsEntry[] = [
  { manager: "appstack", operation: "Apply", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:replicas": {}, "f:template": { "f:spec": { "f:containers": { [container]: { ".": {}, "f:image": {} } } } } } } },
  { manager: "kube-controller-manager", operation: "Update", subresource: "status", fieldsType: "FieldsV1", fieldsV1: { "f:status": { "f:replicas": {} } } },
  { manager: "kube-controller-manager", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:annotations": { "f:deployment.kubernetes.io/revision": {} } } } },
  { manager: "kubectl-patch", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:template": { "f:spec": { "f:containers": { [container]: { "f:ports": { 'k:{"containerPort":9090,"protocol":"TCP"}': { ".": {}, "f:containerPort": {} } } } } } } } } },
  { manager: "hpa", operation: "Update", subresource: "scale", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:replicas": {} } } },
];

type Tree = { [key: string]: Tree };
const containerOf = (entry: V1ManagedFieldsEntry) => (entry.fieldsV1 as Tree)["f:spec"]!["f:template"]!["f:spec"]!["f:containers"]![container]!;

test("an edit's spec fields become appstack's; the cluster's controllers and subresources keep theirs", () => {
  const after = handOver(entries, "appstack")!;
  assert.deepEqual(after.map((e) => `${e.manager}/${e.operation}/${e.subresource ?? ""}`), ["appstack/Apply/", "kube-controller-manager/Update/status", "kube-controller-manager/Update/", "hpa/Update/scale"]);
  assert.deepEqual(Object.keys(containerOf(after[0]!)).sort(), [".", "f:image", "f:ports"]);
});

test("an editor keeps its metadata and a restart stamp; another applier's spec fields are handed over too", () => {
  const labelAndEnv = { "f:metadata": { "f:labels": { "f:team": {} } }, "f:spec": { "f:template": { "f:metadata": { "f:annotations": { "f:kubectl.kubernetes.io/restartedAt": {} } }, "f:spec": { "f:containers": { [container]: { "f:env": { 'k:{"name":"EXTRA"}': { ".": {}, "f:name": {} } } } } } } } };
  const edits: V1ManagedFieldsEntry[] = [
    entries[0]!,
    { manager: "kubectl-edit", operation: "Update", fieldsType: "FieldsV1", fieldsV1: labelAndEnv },
    { manager: "dba", operation: "Apply", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:paused": {} } } },
    { manager: "kubectl-label", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:labels": { "f:owner": {} } } } },
  ];
  const after = handOver(edits, "appstack")!;
  assert.deepEqual(after.map((e) => e.manager), ["appstack", "kubectl-edit", "kubectl-label"]);
  assert.deepEqual(after[1]!.fieldsV1, { "f:metadata": { "f:labels": { "f:team": {} } }, "f:spec": { "f:template": { "f:metadata": { "f:annotations": { "f:kubectl.kubernetes.io/restartedAt": {} } } } } });
  assert.deepEqual(after[2], edits[3]);
  const ours = after[0]!.fieldsV1 as Tree;
  assert.deepEqual(Object.keys(ours["f:spec"]!).sort(), ["f:paused", "f:replicas", "f:template"]);
  assert.deepEqual(Object.keys(ours["f:spec"]!["f:template"]!), ["f:spec"], "the restart stamp is not appstack's");
  assert.deepEqual(Object.keys(containerOf(after[0]!)).sort(), [".", "f:env", "f:image"]);
});

test("nothing to hand over, or no apply of appstack's to hand it to: no change", () => {
  assert.equal(handOver(entries.filter((e) => e.manager !== "kubectl-patch"), "appstack"), undefined);
  assert.equal(handOver(entries.filter((e) => e.manager !== "appstack"), "appstack"), undefined);
  assert.equal(handOver([entries[0]!, { manager: "kubectl-label", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:labels": { "f:owner": {} } } } }], "appstack"), undefined);
});

test("field sets unite recursively", () => {
  assert.deepEqual(unionOfFields({ "f:a": { "f:b": {} } }, { "f:a": { "f:c": {} }, "f:d": {} }), { "f:a": { "f:b": {}, "f:c": {} }, "f:d": {} });
});
