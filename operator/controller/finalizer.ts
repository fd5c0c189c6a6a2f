// The finalizer that lets the operator destroy an object's stack before the object goes away.
import type { Workload } from "../../crds/types.ts";
import { isNotFound, keyOf, patchWorkload, type KubeClients } from "../kube/clients.ts";

export const finalizerName = "appstack.dev/stack";

export function hasFinalizer(object: Workload): boolean {
  return object.metadata.finalizers?.includes(finalizerName) ?? false;
}

/** The `test` guards against overwriting a finalizer list that changed since we read it. */
export async function addFinalizer(clients: KubeClients, object: Workload): Promise<Workload> {
  const current = object.metadata.finalizers;
  const patch = current
    ? [{ op: "test" as const, path: "/metadata/finalizers", value: current }, { op: "add" as const, path: "/metadata/finalizers/-", value: finalizerName }]
    : [{ op: "add" as const, path: "/metadata/finalizers", value: [finalizerName] }];
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
