// kstatus's rules for every kind (generic.go, and status.go's checkReadyCondition): deletion,
// the generation the controller has observed, and the standard conditions.
import { nestedInt64, nestedString, type Json } from "./fields.ts";
import { conditionsOf, current, inProgress, type KstatusResult } from "./result.ts";

/** u.GetKind(): "" when absent or not a string. */
export const kindOf = (object: Json): string => (typeof object["kind"] === "string" ? object["kind"] : "");

/** Go wraps an accessor's error with what it was looking up. */
function lookingUp<T>(what: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw new Error(`looking up ${what} from resource: ${(error as Error).message}`);
  }
}

const generation = (object: Json) => lookingUp("metadata.generation", () => nestedInt64(object, ["metadata", "generation"]));
const observedGeneration = (object: Json) => lookingUp("status.observedGeneration", () => nestedInt64(object, ["status", "observedGeneration"]));

/**
 * checkGenericProperties: what decides for every kind before its own rules. Undefined when it
 * cannot decide; then the kind's rules do.
 */
export function checkGenericProperties(object: Json): KstatusResult | undefined {
  const deletionTimestamp = lookingUp("metadata.deletionTimestamp", () => nestedString(object, ["metadata", "deletionTimestamp"]));
  if (deletionTimestamp) return { status: "Terminating", message: "Resource scheduled for deletion", conditions: [] };

  const stale = checkGeneration(object);
  if (stale) return stale;

  for (const cond of conditionsOf(object)) {
    if (cond.type === "Reconciling" && cond.status === "True") return inProgress(cond.reason, cond.message);
    if (cond.type === "Stalled" && cond.status === "True") {
      return { status: "Failed", message: cond.message, conditions: [{ type: "Stalled", status: "True", reason: cond.reason, message: cond.message }] };
    }
  }
  return undefined;
}

/** checkGeneration: InProgress while status.observedGeneration, where there is one, lags metadata.generation. */
function checkGeneration(object: Json): KstatusResult | undefined {
  const latest = generation(object);
  if (latest === undefined) return undefined;
  const observed = observedGeneration(object);
  if (observed !== undefined && observed !== latest) {
    return inProgress("LatestGenerationNotObserved", `${kindOf(object)} generation is ${latest}, but latest observed generation is ${observed}`);
  }
  return undefined;
}

/** checkGenerationSet: InProgress while either generation is missing (a DaemonSet's controller always sets both). */
export function checkGenerationSet(object: Json): KstatusResult | undefined {
  if (generation(object) === undefined) return inProgress("NoGeneration", `${kindOf(object)} metadata.generation not found`);
  if (observedGeneration(object) === undefined) return inProgress("NoObservedGeneration", `${kindOf(object)} status.observedGeneration not found`);
  return undefined;
}

/** checkReadyCondition: the widely used Ready condition, for kinds with no rules of their own. */
export function checkReadyCondition(object: Json): KstatusResult | undefined {
  for (const cond of conditionsOf(object)) {
    if (cond.type !== "Ready") continue;
    if (cond.status === "True") return current("Resource is Ready");
    // Unknown counts as InProgress too, as upstream does.
    if (cond.status === "False" || cond.status === "Unknown") return inProgress(cond.reason, cond.message);
  }
  return undefined;
}
