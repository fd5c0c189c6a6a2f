// kstatus's rules for the other built-in kinds (core.go: Pod, PersistentVolumeClaim, Service,
// Job, PodDisruptionBudget, CustomResourceDefinition, and the kinds that are always ready), in
// upstream's order, with its messages.
import { goType, goValue, intField, isMap, nestedField, stringField, type Json } from "./fields.ts";
import { conditionsOf, conditionWithStatus, current, failed, inProgress, type KstatusResult } from "./result.ts";

/** How long a pod may stay unscheduled before it counts as unschedulable (ScheduleWindow). */
const scheduleWindowMs = 15_000;

export const alwaysReady = (): KstatusResult => current("Resource is always ready");

/** A PodDisruptionBudget that passed the generic generation check has had its disruptions computed. */
export const podDisruptionBudget = (): KstatusResult => current("AllowedDisruptions has been computed.");

export function persistentVolumeClaim(obj: Json): KstatusResult {
  const phase = stringField(obj, ".status.phase", "unknown");
  if (phase !== "Bound") return inProgress("NotBound", `PVC is not Bound. phase: ${phase}`);
  return current("PVC is Bound");
}

export function service(obj: Json): KstatusResult {
  const specType = stringField(obj, ".spec.type", "ClusterIP");
  const specClusterIP = stringField(obj, ".spec.clusterIP", "");
  if (specType === "LoadBalancer" && specClusterIP === "") return inProgress("NoIPAssigned", "ClusterIP not set. Service type: LoadBalancer");
  return current("Service is ready");
}

/** A Job is Current while it runs and once it completes; Failed once it has failed. */
export function job(obj: Json): KstatusResult {
  const parallelism = intField(obj, ".spec.parallelism", 1);
  const completions = intField(obj, ".spec.completions", parallelism);
  const succeeded = intField(obj, ".status.succeeded", 0);
  const active = intField(obj, ".status.active", 0);
  const failedPods = intField(obj, ".status.failed", 0);
  const starttime = stringField(obj, ".status.startTime", "");
  for (const c of conditionsOf(obj)) {
    if (c.type === "Complete" && c.status === "True") return current(`Job Completed. succeeded: ${succeeded}/${completions}`);
    if (c.type === "Failed" && c.status === "True") return failed("JobFailed", `Job Failed. failed: ${failedPods}/${completions}`);
  }
  if (starttime === "") return inProgress("JobNotStarted", "Job not started");
  return current(`Job in progress. success:${succeeded}, active: ${active}, failed: ${failedPods}`);
}

export function customResourceDefinition(obj: Json): KstatusResult {
  for (const c of conditionsOf(obj)) {
    if (c.type === "NamesAccepted" && c.status === "False") return failed(c.reason, c.message);
    if (c.type === "Established") {
      if (c.status === "False" && c.reason !== "Installing") return failed(c.reason, c.message);
      if (c.status === "True") return current("CRD is established");
    }
  }
  return inProgress("Installing", "Install in progress");
}

/** A Pod: a finished one is Current either way; a running one Failed while a container crash-loops. */
export function pod(obj: Json, now: number): KstatusResult {
  const conditions = conditionsOf(obj);
  const phase = stringField(obj, ".status.phase", "");
  switch (phase) {
    case "Succeeded":
      return current("Pod has completed successfully");
    case "Failed":
      return current("Pod has completed, but not successfully");
    case "Running": {
      if (conditionWithStatus(conditions, "Ready", "True")) return current("Pod is Ready");
      const crashLooping = crashLoopingContainers(obj);
      if (crashLooping.length > 0) return failed("ContainerCrashLooping", `Containers in CrashLoop state: ${crashLooping.join(",")}`);
      return inProgress("PodRunningNotReady", "Pod is running but is not Ready");
    }
    case "Pending": {
      const unscheduled = conditionWithStatus(conditions, "PodScheduled", "False");
      if (unscheduled?.reason === "Unschedulable") {
        if (now - scheduleWindowMs < creationTime(obj)) return inProgress("PodNotScheduled", "Pod has not been scheduled");
        return failed("PodUnschedulable", "Pod could not be scheduled");
      }
      return inProgress("PodPending", "Pod is in the Pending phase");
    }
    case "":
      // The kubelet has not observed the pod yet.
      return inProgress("PodNotObserved", "Pod phase not available");
    default:
      throw new Error(`unknown phase ${phase}`);
  }
}

/** u.GetCreationTimestamp(): an RFC 3339 time, or Go's zero time (long ago) when absent or not one. */
function creationTime(obj: Json): number {
  const text = stringField(obj, ".metadata.creationTimestamp", "");
  const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
  return rfc3339.test(text) ? Date.parse(text) : Number.NEGATIVE_INFINITY;
}

/** getCrashLoopingContainers: the containers waiting in CrashLoopBackOff. Go panics on a malformed entry; this throws. */
function crashLoopingContainers(obj: Json): string[] {
  const { found, value } = nestedField(obj, ["status", "containerStatuses"]);
  if (!found) return [];
  if (!Array.isArray(value)) throw new Error(`.status.containerStatuses accessor error: ${goValue(value)} is of the type ${goType(value)}, expected []interface{}`);
  const names: string[] = [];
  for (const item of value as unknown[]) {
    const cs = asMap(item);
    if (!Object.hasOwn(cs, "name")) continue;
    const name = asString(cs["name"]);
    if (!Object.hasOwn(cs, "state")) continue;
    const state = asMap(cs["state"]);
    if (!Object.hasOwn(state, "waiting")) continue;
    const waiting = asMap(state["waiting"]);
    if (!Object.hasOwn(waiting, "reason")) continue;
    if (asString(waiting["reason"]) === "CrashLoopBackOff") names.push(name);
  }
  return names;
}

const conversion = (value: unknown, want: string) => new Error(`interface conversion: interface {} is ${value === null ? "nil" : goType(value)}, not ${want}`);

function asMap(value: unknown): Json {
  if (!isMap(value)) throw conversion(value, "map[string]interface {}");
  return value;
}

function asString(value: unknown): string {
  if (typeof value !== "string") throw conversion(value, "string");
  return value;
}
