// What an object's kind makes of its spec, checked before anything is applied: a child of a kind
// its definition does not declare (which no watch, RBAC rule or ownership rule covers) stalls the
// object, naming the kind to declare; a kind whose code throws stalls its own objects with the
// error, and every other kind's objects go on.
import { childManifests } from "../../components/kinds.ts";
import { UndeclaredChildKind } from "../../components/workload.ts";
import type { Workload } from "../../crds/types.ts";
import type { Phase } from "./conditions.ts";

/** The phase of `object` when its kind cannot make its children from its spec, else undefined. */
export function kindRefusal(object: Workload): Extract<Phase, { kind: "stalled" }> | undefined {
  try {
    childManifests(object);
    return undefined;
  } catch (error) {
    if (error instanceof UndeclaredChildKind) return { kind: "stalled", reason: "UndeclaredChildKind", message: error.message };
    const message = error instanceof Error ? error.message : String(error);
    return { kind: "stalled", reason: "KindError", message: `kind ${object.kind} failed to make the children of ${object.metadata.namespace}/${object.metadata.name}: ${message}` };
  }
}
