// kstatus's rules for the replicated workloads (core.go's stsConditions, deploymentConditions,
// replicasetConditions, daemonsetConditions), in upstream's order, with its messages.
import { intField, stringField, type Json } from "./fields.ts";
import { checkGenerationSet } from "./generic.ts";
import { conditionsOf, current, inProgress, type KstatusResult } from "./result.ts";

const tooFewReady = "LessReady";
const tooFewAvailable = "LessAvailable";
const tooFewUpdated = "LessUpdated";
const tooFewReplicas = "LessReplicas";
const extraPods = "ExtraPods";
/** Where the Deployment controller sets no Progressing condition (its "no deadline"). */
const maxInt32 = 2147483647;

/** A StatefulSet's controller sets no conditions: its counts and revisions say it all. */
export function statefulSet(obj: Json): KstatusResult {
  // updateStrategy OnDelete is a user-managed StatefulSet.
  if (stringField(obj, ".spec.updateStrategy.type", "") === "OnDelete") return current("StatefulSet is using the ondelete update strategy");

  const specReplicas = intField(obj, ".spec.replicas", 1);
  const readyReplicas = intField(obj, ".status.readyReplicas", 0);
  const currentReplicas = intField(obj, ".status.currentReplicas", 0);
  const updatedReplicas = intField(obj, ".status.updatedReplicas", 0);
  const statusReplicas = intField(obj, ".status.replicas", 0);
  const partition = intField(obj, ".spec.updateStrategy.rollingUpdate.partition", -1);

  if (specReplicas > statusReplicas) return inProgress(tooFewReplicas, `Replicas: ${statusReplicas}/${specReplicas}`);
  if (specReplicas > readyReplicas) return inProgress(tooFewReady, `Ready: ${readyReplicas}/${specReplicas}`);
  if (statusReplicas > specReplicas) return inProgress(extraPods, `Pending termination: ${statusReplicas - specReplicas}`);
  if (partition !== -1) {
    if (updatedReplicas < specReplicas - partition) return inProgress("PartitionRollout", `updated: ${updatedReplicas}/${specReplicas - partition}`);
    return current(`Partition rollout complete. updated: ${updatedReplicas}`);
  }
  if (specReplicas > currentReplicas) return inProgress("LessCurrent", `current: ${currentReplicas}/${specReplicas}`);
  if (stringField(obj, ".status.currentRevision", "") !== stringField(obj, ".status.updateRevision", "")) {
    return inProgress("RevisionMismatch", "Waiting for updated revision to match current");
  }
  return current(`All replicas scheduled as expected. Replicas: ${statusReplicas}`);
}

/** A Deployment: Failed once its progress deadline is exceeded, else its counts, then its conditions. */
export function deployment(obj: Json): KstatusResult {
  let progressing = intField(obj, ".spec.progressDeadlineSeconds", maxInt32) === maxInt32;
  let available = false;
  for (const c of conditionsOf(obj)) {
    if (c.type === "Progressing") {
      if (c.reason === "ProgressDeadlineExceeded") {
        return { status: "Failed", message: "Progress deadline exceeded", conditions: [{ type: "Stalled", status: "True", reason: c.reason, message: c.message }] };
      }
      if (c.status === "True" && c.reason === "NewReplicaSetAvailable") progressing = true;
    } else if (c.type === "Available" && c.status === "True") {
      available = true;
    }
  }

  const specReplicas = intField(obj, ".spec.replicas", 1); // the controller's default
  const statusReplicas = intField(obj, ".status.replicas", 0);
  const updatedReplicas = intField(obj, ".status.updatedReplicas", 0);
  const readyReplicas = intField(obj, ".status.readyReplicas", 0);
  const availableReplicas = intField(obj, ".status.availableReplicas", 0);

  if (specReplicas > statusReplicas) return inProgress(tooFewReplicas, `Replicas: ${statusReplicas}/${specReplicas}`);
  if (specReplicas > updatedReplicas) return inProgress(tooFewUpdated, `Updated: ${updatedReplicas}/${specReplicas}`);
  if (statusReplicas > specReplicas) return inProgress(extraPods, `Pending termination: ${statusReplicas - specReplicas}`);
  if (updatedReplicas > availableReplicas) return inProgress(tooFewAvailable, `Available: ${availableReplicas}/${updatedReplicas}`);
  if (specReplicas > readyReplicas) return inProgress(tooFewReady, `Ready: ${readyReplicas}/${specReplicas}`);
  if (!progressing) return inProgress("ReplicaSetNotAvailable", "ReplicaSet not Available");
  if (!available) return inProgress("DeploymentNotAvailable", "Deployment not Available");
  return current(`Deployment is available. Replicas: ${statusReplicas}`);
}

/** A ReplicaSet: InProgress (not Failed) on ReplicaFailure, as upstream reads it, else its counts. */
export function replicaSet(obj: Json): KstatusResult {
  if (conditionsOf(obj).some((c) => c.type === "ReplicaFailure" && c.status === "True")) {
    return inProgress("ReplicaFailure", "Replica Failure condition. Check Pods");
  }
  const specReplicas = intField(obj, ".spec.replicas", 1);
  const statusReplicas = intField(obj, ".status.replicas", 0);
  const readyReplicas = intField(obj, ".status.readyReplicas", 0);
  const availableReplicas = intField(obj, ".status.availableReplicas", 0);
  const fullyLabelledReplicas = intField(obj, ".status.fullyLabeledReplicas", 0);

  if (specReplicas > fullyLabelledReplicas) return inProgress("LessLabelled", `Labelled: ${fullyLabelledReplicas}/${specReplicas}`);
  if (specReplicas > availableReplicas) return inProgress(tooFewAvailable, `Available: ${availableReplicas}/${specReplicas}`);
  if (specReplicas > readyReplicas) return inProgress(tooFewReady, `Ready: ${readyReplicas}/${specReplicas}`);
  if (statusReplicas > specReplicas) return inProgress(extraPods, `Pending termination: ${statusReplicas - specReplicas}`);
  return current(`ReplicaSet is available. Replicas: ${statusReplicas}`);
}

/** A DaemonSet: both generations must be set (its controller always sets them), then its counts. */
export function daemonSet(obj: Json): KstatusResult {
  const unobserved = checkGenerationSet(obj);
  if (unobserved) return unobserved;

  const desiredNumberScheduled = intField(obj, ".status.desiredNumberScheduled", -1);
  const currentNumberScheduled = intField(obj, ".status.currentNumberScheduled", 0);
  const updatedNumberScheduled = intField(obj, ".status.updatedNumberScheduled", 0);
  const numberAvailable = intField(obj, ".status.numberAvailable", 0);
  const numberReady = intField(obj, ".status.numberReady", 0);

  if (desiredNumberScheduled === -1) return inProgress("NoDesiredNumber", "Missing .status.desiredNumberScheduled");
  if (desiredNumberScheduled > currentNumberScheduled) return inProgress("LessCurrent", `Current: ${currentNumberScheduled}/${desiredNumberScheduled}`);
  if (desiredNumberScheduled > updatedNumberScheduled) return inProgress(tooFewUpdated, `Updated: ${updatedNumberScheduled}/${desiredNumberScheduled}`);
  if (desiredNumberScheduled > numberAvailable) return inProgress(tooFewAvailable, `Available: ${numberAvailable}/${desiredNumberScheduled}`);
  if (desiredNumberScheduled > numberReady) return inProgress(tooFewReady, `Ready: ${numberReady}/${desiredNumberScheduled}`);
  return current(`All replicas scheduled as expected. Replicas: ${desiredNumberScheduled}`);
}
