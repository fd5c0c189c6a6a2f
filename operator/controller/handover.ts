// Before a repair, imperative edits of a child appstack owns (kubectl edit, patch, set; any Update
// by a client other than the cluster's own controllers) are handed over to appstack's field
// manager, as Flux's kustomize-controller does. Server-side apply removes only the fields its
// manager owns: without the handover, an edited list key (a containerPort, a Service port) stays
// beside the one appstack applies, and the repair fails on a duplicate name.
import type { V1ManagedFieldsEntry } from "@kubernetes/client-node";

/** Their Updates (status, the revision annotation, scale) are theirs to keep. */
const clusterControllers = new Set(["kube-controller-manager", "kube-scheduler"]);

type FieldSet = Record<string, unknown>;

function isFieldSet(value: unknown): value is FieldSet {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The union of two managedFields field sets (fieldsV1 trees). */
export function unionOfFields(a: FieldSet, b: FieldSet): FieldSet {
  const union: FieldSet = { ...a };
  for (const [key, value] of Object.entries(b)) {
    const mine = union[key];
    union[key] = isFieldSet(mine) && isFieldSet(value) ? unionOfFields(mine, value) : value;
  }
  return union;
}

/**
 * The managedFields with every imperative edit's fields owned by `manager`'s apply entry; undefined
 * when nothing is to be handed over (or `manager` has not applied the object).
 */
export function handOver(entries: readonly V1ManagedFieldsEntry[], manager: string): V1ManagedFieldsEntry[] | undefined {
  const ours = entries.find((entry) => entry.manager === manager && entry.operation === "Apply" && !entry.subresource);
  const taken = entries.filter((entry) => entry.operation === "Update" && !entry.subresource && entry.manager !== manager && !clusterControllers.has(entry.manager ?? ""));
  if (!ours || !taken.length) return undefined;
  const fieldsV1 = taken.reduce<FieldSet>((fields, entry) => unionOfFields(fields, isFieldSet(entry.fieldsV1) ? entry.fieldsV1 : {}), isFieldSet(ours.fieldsV1) ? ours.fieldsV1 : {});
  return entries.filter((entry) => !taken.includes(entry)).map((entry) => (entry === ours ? { ...entry, fieldsV1 } : entry));
}
