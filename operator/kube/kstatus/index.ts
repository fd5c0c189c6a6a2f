// kstatus in TypeScript: how healthy a Kubernetes object is, as Flux, kapply and Config Sync read
// it. A port of status.Compute in sigs.k8s.io/cli-utils/pkg/kstatus/status at v0.37.2 (the pin of
// toolchain/kstatus/go.mod): its rules, their order and their messages word for word, so that
// test/unit/kstatus-port.test.ts can hold this file to the Go library object by object.
//
// Why a port: no npm package computes kstatus, and running the Go library (toolchain/kstatus)
// would cost a process for every read of every child in the operator's hot path. Drop it for a
// well-kept JavaScript implementation when one appears, or when the operator can call the Go
// library in-process. On a bump of the cli-utils pin, diff upstream's pkg/kstatus/status between
// the two versions and carry the change here; the test then checks it against the new binary.
import { type Json } from "./fields.ts";
import { alwaysReady, customResourceDefinition, job, persistentVolumeClaim, pod, podDisruptionBudget, service } from "./core.ts";
import { checkGenericProperties, checkReadyCondition, kindOf } from "./generic.ts";
import { current, type KstatusResult } from "./result.ts";
import { daemonSet, deployment, replicaSet, statefulSet } from "./workloads.ts";

export type { Json } from "./fields.ts";
export type { KstatusCondition, KstatusResult, KstatusStatus } from "./result.ts";

type Rule = (object: Json, now: number) => KstatusResult;

/** core.go's legacyTypes: the built-in kinds with rules of their own, by group and kind (the version does not matter). */
const legacyTypes: Readonly<Record<string, Rule>> = {
  Service: service,
  Pod: pod,
  Secret: alwaysReady,
  PersistentVolumeClaim: persistentVolumeClaim,
  "apps/StatefulSet": statefulSet,
  "apps/DaemonSet": daemonSet,
  "extensions/DaemonSet": daemonSet,
  "apps/Deployment": deployment,
  "extensions/Deployment": deployment,
  "apps/ReplicaSet": replicaSet,
  "extensions/ReplicaSet": replicaSet,
  "policy/PodDisruptionBudget": podDisruptionBudget,
  "batch/CronJob": alwaysReady,
  ConfigMap: alwaysReady,
  "batch/Job": job,
  "apiextensions.k8s.io/CustomResourceDefinition": customResourceDefinition,
};

/** GetLegacyConditionsFn: the group of apiVersion as schema.ParseGroupVersion reads it; a malformed one names no kind. */
function legacyRule(object: Json): Rule | undefined {
  const apiVersion = typeof object["apiVersion"] === "string" ? object["apiVersion"] : "";
  const slashes = apiVersion.split("/").length - 1;
  if (slashes > 1) return undefined;
  const group = slashes === 1 && apiVersion !== "/" ? apiVersion.slice(0, apiVersion.indexOf("/")) : "";
  const kind = kindOf(object);
  const key = group === "" ? kind : `${group}/${kind}`;
  return Object.hasOwn(legacyTypes, key) ? legacyTypes[key] : undefined;
}

/**
 * status.Compute for an object as the API server returns it (one read with get or watch; the items
 * of a list carry no kind, so set apiVersion and kind on those first). Throws where Go returns an
 * error (a field of the wrong type, a Pod in an unknown phase), with Go's words. `now` is for the one
 * rule that reads the clock: a Pod unschedulable for less than 15 seconds is still InProgress.
 */
export function kstatusOf(object: Json, now: number = Date.now()): KstatusResult {
  // As the Go binary's decoding refuses it: without a kind, every rule below would be the wrong one.
  if (kindOf(object) === "") throw new Error("Object 'Kind' is missing");
  // Deletion, an unobserved generation, Reconciling or Stalled decide before any kind's rules.
  const generic = checkGenericProperties(object);
  if (generic) return generic;
  const rule = legacyRule(object);
  if (rule) return rule(object, now);
  // Ready is not a kstatus condition, but so widely set that upstream reads it for every other kind.
  return checkReadyCondition(object) ?? current("Resource is current");
}
