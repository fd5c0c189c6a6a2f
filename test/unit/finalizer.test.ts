import assert from "node:assert/strict";
import { test } from "node:test";
import type { Workload } from "../../crds/types.ts";
import { finalizerName, removeFinalizer } from "../../operator/controller/finalizer.ts";
import type { KubeClients } from "../../operator/kube/clients.ts";

const object = { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: "web", namespace: "default", uid: "u1", finalizers: [finalizerName] }, spec: { image: "nginx", replicas: 1 } } as Workload;
const answering = (code: number) => ({ custom: { patchNamespacedCustomObject: () => Promise.reject(Object.assign(new Error(`HTTP ${code}`), { code })) } }) as unknown as KubeClients;

test("removing the finalizer of an object already gone is done, not a failure; other errors still fail", async () => {
  // Found in the hostile-input test's logs: a reconcile queued before the watch saw the deletion
  // logged "reconcile failed" (NotFound) and tried to record an Event on a gone object.
  await removeFinalizer(answering(404), object);
  await assert.rejects(removeFinalizer(answering(409), object), /HTTP 409/);
});
