// The handover of imperative edits, on managedFields as the API server wrote them after
// `kubectl patch` changed a containerPort (a list key) of a Deployment appstack applied.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1ManagedFieldsEntry } from "@kubernetes/client-node";
import { handOver, unionOfFields } from "../../operator/controller/handover.ts";

const container = 'k:{"name":"app"}';
const entries: V1ManagedFieldsEntry[] = [
  { manager: "appstack", operation: "Apply", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:replicas": {}, "f:template": { "f:spec": { "f:containers": { [container]: { ".": {}, "f:image": {} } } } } } } },
  { manager: "kube-controller-manager", operation: "Update", subresource: "status", fieldsType: "FieldsV1", fieldsV1: { "f:status": { "f:replicas": {} } } },
  { manager: "kube-controller-manager", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:annotations": { "f:deployment.kubernetes.io/revision": {} } } } },
  { manager: "kubectl-patch", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:template": { "f:spec": { "f:containers": { [container]: { "f:ports": { 'k:{"containerPort":9090,"protocol":"TCP"}': { ".": {}, "f:containerPort": {} } } } } } } } } },
  { manager: "hpa", operation: "Update", subresource: "scale", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:replicas": {} } } },
];

test("an imperative edit's fields become appstack's; the cluster's controllers and subresources keep theirs", () => {
  const after = handOver(entries, "appstack")!;
  assert.deepEqual(after.map((e) => `${e.manager}/${e.operation}/${e.subresource ?? ""}`), ["appstack/Apply/", "kube-controller-manager/Update/status", "kube-controller-manager/Update/", "hpa/Update/scale"]);
  type Tree = { [key: string]: Tree };
  const containers = (after[0]!.fieldsV1 as Tree)["f:spec"]!["f:template"]!["f:spec"]!["f:containers"]![container]!;
  assert.deepEqual(Object.keys(containers).sort(), [".", "f:image", "f:ports"]);
});

test("nothing to hand over, or no apply of appstack's to hand it to: no change", () => {
  assert.equal(handOver(entries.filter((e) => e.manager !== "kubectl-patch"), "appstack"), undefined);
  assert.equal(handOver(entries.filter((e) => e.manager !== "appstack"), "appstack"), undefined);
});

test("field sets unite recursively", () => {
  assert.deepEqual(unionOfFields({ "f:a": { "f:b": {} } }, { "f:a": { "f:c": {} }, "f:d": {} }), { "f:a": { "f:b": {}, "f:c": {} }, "f:d": {} });
});
