// What a deletion with deletionPolicy Orphan (or of a suspended object) must leave, read from the
// API server: the object's Deployment and Service still there, without the ownerReference to it,
// the managed-by label and the pulumi.com/ annotations, with the labels their pods are selected by.
import assert from "node:assert/strict";
import type { AppsV1Api, CoreV1Api, V1ObjectMeta } from "@kubernetes/client-node";

export async function assertOrphaned(api: { apps: AppsV1Api; core: CoreV1Api }, namespace: string, name: string, uid: string): Promise<void> {
  const deployment = await api.apps.readNamespacedDeployment({ name, namespace });
  const service = await api.core.readNamespacedService({ name, namespace });
  for (const [kind, metadata] of [["Deployment", deployment.metadata], ["Service", service.metadata]] as [string, V1ObjectMeta | undefined][]) {
    const { ownerReferences = [], labels = {}, annotations = {} } = metadata ?? {};
    assert.deepEqual(ownerReferences.filter((ref) => ref.uid === uid), [], `${kind} ${name}: the ownerReference to the deleted object`);
    assert.equal(labels["app.kubernetes.io/managed-by"], undefined, `${kind} ${name}: the managed-by label`);
    assert.deepEqual(Object.keys(annotations).filter((key) => key.startsWith("pulumi.com/")), [], `${kind} ${name}: pulumi annotations`);
    assert.equal(labels["app.kubernetes.io/instance"], name, `${kind} ${name}: the selector labels stay`);
  }
  assert.deepEqual(deployment.spec?.selector.matchLabels, service.spec?.selector, "the Service still selects the Deployment's pods");
}
