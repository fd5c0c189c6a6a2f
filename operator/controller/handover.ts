// Before a repair, what others set in a child's spec (edits.ts: kubectl edit, patch, set, rollout
// pause, another applier; never the cluster's own controllers) is handed over to appstack's field
// manager, as Flux's kustomize-controller does. Server-side apply removes only the fields its
// manager owns: without the handover, an added env var, container or `command` and an edited list
// key (a containerPort, a Service port) would stay beside what appstack applies. Every field handed
// over is one the drift report names (additions.ts, compare.ts); the editor keeps its metadata.
import type { V1ManagedFieldsEntry } from "@kubernetes/client-node";
import { fieldsOf, isApplyOf, isOthersEdit, splitEdit, unionOfFields, type FieldSet } from "./edits.ts";

/**
 * The managedFields with the spec fields of every edit by others owned by `manager`'s apply entry
 * (an editor left with no field loses its entry); undefined when nothing is to be handed over (or
 * `manager` has not applied the object).
 */
export function handOver(entries: readonly V1ManagedFieldsEntry[], manager: string): V1ManagedFieldsEntry[] | undefined {
  const ours = entries.find((entry) => isApplyOf(entry, manager));
  if (!ours) return undefined;
  let taken: FieldSet = {};
  const kept: V1ManagedFieldsEntry[] = [];
  for (const entry of entries) {
    if (entry === ours || !isOthersEdit(entry, manager)) {
      kept.push(entry);
      continue;
    }
    const { spec, rest } = splitEdit(fieldsOf(entry));
    if (!Object.keys(spec).length) {
      kept.push(entry);
      continue;
    }
    taken = unionOfFields(taken, spec);
    if (Object.keys(rest).length) kept.push({ ...entry, fieldsV1: rest });
  }
  if (!Object.keys(taken).length) return undefined;
  const fieldsV1 = unionOfFields(fieldsOf(ours), taken);
  return kept.map((entry) => (entry === ours ? { ...entry, fieldsV1 } : entry));
}
