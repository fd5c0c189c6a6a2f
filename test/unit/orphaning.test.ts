// spec.deletionPolicy as pure decisions: which deletions leave the children, the patch that takes
// appstack's marks off a child (and only appstack's, and only this object's), and that changing the
// policy alone costs no Pulumi run. The deletion itself, against an API server: test/e2e/suspend.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { appDeployment } from "../../components/manifests.ts";
import { ownerOf } from "../../components/metadata.ts";
import type { App } from "../../components/app.ts";
import { specDigest } from "../../operator/controller/drift.ts";
import { deletesAsOrphan, unmarking } from "../../operator/controller/orphaning.ts";

const app = (spec: Partial<App["spec"]> = {}): App => ({
  apiVersion: "appstack.dev/v1alpha1",
  kind: "App",
  metadata: { name: "web", namespace: "default", uid: "uid-web" },
  spec: { image: "nginx:1.27", replicas: 1, ...spec },
});

/** The Deployment as the API server holds it: the manifest's metadata, another controller's reference and someone's own label beside it. */
function live(object: App): KubernetesObject {
  const { metadata } = appDeployment(ownerOf(object), object.spec) as { metadata: NonNullable<KubernetesObject["metadata"]> };
  return {
    metadata: {
      ...metadata,
      resourceVersion: "42",
      labels: { ...metadata.labels, team: "a" },
      annotations: { ...metadata.annotations, "example.com/keep": "yes" },
      ownerReferences: [{ apiVersion: "example.com/v1", kind: "Other", name: "x", uid: "uid-other" }, ...(metadata.ownerReferences ?? [])],
    },
  };
}

test("a deletion leaves the children with deletionPolicy Orphan, or when suspended whatever the policy; absent or Delete destroys", () => {
  assert.equal(deletesAsOrphan(app()), false);
  assert.equal(deletesAsOrphan(app({ deletionPolicy: "Delete" })), false);
  assert.equal(deletesAsOrphan(app({ deletionPolicy: "Orphan" })), true);
  assert.equal(deletesAsOrphan(app({ suspend: true })), true);
  assert.equal(deletesAsOrphan(app({ suspend: true, deletionPolicy: "Delete" })), true);
  assert.equal(deletesAsOrphan(app({ suspend: false })), false);
});

test("the patch removes this object's ownerReference, the managed-by label and the provider's annotations; the selector labels and what others set stay", () => {
  const object = app();
  const patch = unmarking(live(object), object.metadata.uid);
  assert.deepEqual(patch, [
    { op: "test", path: "/metadata/resourceVersion", value: "42" },
    { op: "remove", path: "/metadata/ownerReferences/1" },
    { op: "remove", path: "/metadata/labels/app.kubernetes.io~1managed-by" },
    { op: "remove", path: "/metadata/annotations/pulumi.com~1skipAwait" },
    { op: "remove", path: "/metadata/annotations/pulumi.com~1patchForce" },
    { op: "remove", path: "/metadata/annotations/pulumi.com~1patchFieldManager" },
  ]);
});

test("a child already unmarked needs no patch, and another object's reference is never removed", () => {
  const object = app();
  const { metadata } = live(object);
  const unmarked: KubernetesObject = { metadata: { ...metadata, labels: { team: "a" }, annotations: { "example.com/keep": "yes" }, ownerReferences: metadata?.ownerReferences?.slice(0, 1) } };
  assert.equal(unmarking(unmarked, object.metadata.uid), undefined);
  const patch = unmarking(live(object), "uid-someone-else") ?? [];
  assert.ok(patch.every((op) => !op.path.startsWith("/metadata/ownerReferences")), JSON.stringify(patch));
});

test("deletionPolicy alone changes nothing the children are made from: no Pulumi run for it", () => {
  const spec = app().spec;
  assert.equal(specDigest({ ...spec, deletionPolicy: "Orphan" }), specDigest(spec));
  assert.equal(specDigest({ ...spec, deletionPolicy: "Delete" }), specDigest(spec));
});
