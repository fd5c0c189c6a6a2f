// The finalizer that lets the operator destroy an object's stack before the object goes away.
import type { Workload } from "../../crds/types.ts";
import { isNotFound, keyOf, patchWorkload, type JsonPatch, type KubeClients } from "../kube/clients.ts";

export const finalizerName = "appstack.dev/stack";

export function hasFinalizer(object: Workload): boolean {
  return object.metadata.finalizers?.includes(finalizerName) ?? false;
}

/**
 * Adds the finalizer without overwriting a finalizer list that changed since `object` was read
 * (another controller's finalizer): a list read is guarded by a `test` of it (422 when it changed),
 * and no list read, where the `add` would set the whole list, by the resourceVersion read (409 when
 * the object changed), as the sharder's label writes are. Either is a conflict (`isConflict`) the
 * reconcile fails with: the queue runs it again (at once when the finalizers changed), reading it anew.
 */
export async function addFinalizer(clients: KubeClients, object: Workload): Promise<Workload> {
  const current = object.metadata.finalizers;
  const patch: JsonPatch = current
    ? [{ op: "test", path: "/metadata/finalizers", value: current }, { op: "add", path: "/metadata/finalizers/-", value: finalizerName }]
    : [{ op: "replace", path: "/metadata/resourceVersion", value: object.metadata.resourceVersion }, { op: "add", path: "/metadata/finalizers", value: [finalizerName] }];
  return patchWorkload(clients, keyOf(object), patch);
}

/**
 * Drops the finalizer. An object already gone is done, not a failure: a reconcile queued before the
 * watch reported the deletion reads a cached copy that still has the finalizer.
 */
export async function removeFinalizer(clients: KubeClients, object: Workload): Promise<void> {
  const index = object.metadata.finalizers?.indexOf(finalizerName) ?? -1;
  if (index < 0) return;
  const patch = [
    { op: "test" as const, path: `/metadata/finalizers/${index}`, value: finalizerName },
    { op: "remove" as const, path: `/metadata/finalizers/${index}` },
  ];
  await patchWorkload(clients, keyOf(object), patch).catch((error: unknown) => {
    if (!isNotFound(error)) throw error;
  });
}
