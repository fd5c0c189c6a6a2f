// Status: what the live Deployment and pods say, with the conditions of the current phase and the
// stack report, written through the status subresource only when something in it changed.
import type { V1Deployment, V1DeploymentStatus, V1Pod } from "@kubernetes/client-node";
import { describe } from "../../components/kinds.ts";
import { historyMessageLimit, statusHistoryLimit, type PreviewStatus, type StackOperation, type StackStatus, type Workload, type WorkloadStatus } from "../../crds/types.ts";
import { conditionsFor, type ChildPhase, type Phase } from "./conditions.ts";
import { type FailingSince, podTrouble } from "./pod-trouble.ts";
import { decodeApplied } from "./drift.ts";
import { keyOf, patchWorkload, type KubeClients } from "../kube/clients.ts";
import { canonicalJson } from "../base/canonical-json.ts";

/**
 * Like `kubectl rollout status`: the newest spec is observed and every replica is updated and
 * available. Paused (`kubectl rollout pause`), the Deployment controller rolls nothing out and the
 * next change would say RollingOut for ever: never Ready. A pause by anyone is drift (additions.ts),
 * undone by the repair; this keeps Ready false should one ever stand without a repair under way.
 */
export function rolloutPhase(object: Workload, deployment: V1Deployment | undefined): ChildPhase {
  if (deployment?.spec?.paused) return { kind: "stalled", reason: "DeploymentPaused", message: "the Deployment is paused (spec.paused): nothing rolls out until it is resumed" };
  return rolloutProgress(object, deployment);
}

function rolloutProgress(object: Workload, deployment: V1Deployment | undefined): ChildPhase {
  const want = describe(object).replicas(object.spec);
  if (!deployment) return { kind: "progressing", reason: "Creating", message: "the Deployment does not exist yet" };
  const status = deployment.status ?? {};
  const progressing = status.conditions?.find((c) => c.type === "Progressing");
  if (progressing?.reason === "ProgressDeadlineExceeded") return { kind: "stalled", reason: "ProgressDeadlineExceeded", message: progressing.message ?? "rollout stalled" };
  if ((status.observedGeneration ?? 0) < (deployment.metadata?.generation ?? 0)) return { kind: "progressing", reason: "RollingOut", message: "the Deployment controller has not seen the newest spec yet" };
  const progress = replicaProgress(want, status);
  return progress.kind === "ready" ? progress : (refused(status) ?? progress);
}

/**
 * The API server refused the ReplicaSet's pods (Pod Security admission, a ResourceQuota, a
 * LimitRange, a webhook): the Deployment says so in its ReplicaFailure condition, with the API
 * server's words. No retry of the ReplicaSet controller gets past that without a change.
 */
function refused(status: V1DeploymentStatus): ChildPhase | undefined {
  const failure = status.conditions?.find((c) => c.type === "ReplicaFailure" && c.status === "True");
  if (!failure) return undefined;
  // The ReplicaSet controller's reason, as the Deployment passes it on: FailedCreate for pods refused.
  return { kind: "stalled", reason: (failure.reason ?? "FailedCreate") as "FailedCreate", message: `the API server refuses the pods: ${failure.message ?? "no message"}` };
}

/** The replica counts of a Deployment whose newest spec the controller has seen, as `kubectl rollout status` reads them. */
function replicaProgress(want: number, status: V1DeploymentStatus): ChildPhase {
  const updated = status.updatedReplicas ?? 0;
  const available = status.availableReplicas ?? 0;
  const total = status.replicas ?? 0;
  if (updated < want) return { kind: "progressing", reason: "RollingOut", message: `${updated} of ${want} replicas updated` };
  if (total > updated) return { kind: "progressing", reason: "RollingOut", message: `${total - updated} old replicas are pending termination` };
  // Scaled down (a repair of a hand-made scale-up included): the extra pods still run, and
  // kstatus reads the Deployment as InProgress until they are gone.
  if (total > want) return { kind: "progressing", reason: "RollingOut", message: `scaling down: ${total} replicas, want ${want}` };
  if (available < want) return { kind: "progressing", reason: "RollingOut", message: `${available} of ${want} updated replicas available` };
  return { kind: "ready", message: `${available} of ${want} replicas available` };
}

/**
 * Long enough for a slow image pull's first retries, short against the Deployment's ten-minute
 * progress deadline: a pod that has not started in two minutes needs a person.
 */
export const defaultPodStartTimeoutMs = 120_000;

/**
 * A rollout that waits on pods that cannot start says why, in the kubelet's or the scheduler's
 * words (pod-trouble.ts). Past `stallAfterMs` from when the longest such trouble began (a pod's
 * creation, or the exit that began a crash loop: FailingSince) the object is
 * Stalled: an image that cannot be pulled, a crash loop or a missing Secret needs a change, not
 * more time. A pod no node fits stays Reconciling: a cluster autoscaler adds nodes for it.
 * `recheckInMs` says when the phase turns Stalled if nothing else changes first.
 */
export function withPodTrouble(phase: Phase, pods: readonly V1Pod[], stallAfterMs: number, now = new Date(), memory?: FailingSince): { phase: Phase; recheckInMs?: number } {
  if (phase.kind !== "progressing" || phase.reason !== "RollingOut") return { phase };
  const trouble = podTrouble(pods, now, memory);
  if (!trouble) return { phase };
  const message = `${trouble.count} of ${pods.length} pods cannot start: ${trouble.detail}`;
  if (trouble.reason === "Unschedulable") return { phase: { kind: "progressing", reason: trouble.reason, message } };
  const waitedMs = trouble.since ? now.getTime() - trouble.since.getTime() : 0;
  if (waitedMs >= stallAfterMs) return { phase: { kind: "stalled", reason: trouble.reason, message: `${message} (not started for ${Math.round(waitedMs / 1000)} s)` } };
  return { phase: { kind: "progressing", reason: trouble.reason, message }, recheckInMs: stallAfterMs - waitedMs };
}

export interface StatusInput {
  readonly object: Workload;
  readonly deployment: V1Deployment | undefined;
  readonly pods: readonly V1Pod[];
  readonly selector: string;
  readonly phase: Phase;
  readonly stack: StackStatus;
  /** The preview waiting for approval, if any. */
  readonly preview?: PreviewStatus;
  /** A reconcile request (reconcile-request.ts) whose operation has ended: recorded as handled. */
  readonly handledRequest?: string;
}

/**
 * The generation the status speaks for, as kstatus reads it (Flux, kapply, Config Sync): the one
 * whose spec the stack records as applied, or the object's own when Stalled reports that it cannot
 * be applied. A newer spec that is being applied or waits for approval leaves it behind, so that
 * a tool comparing generations alone reads the change as pending; 0 until a first spec is applied.
 */
export function observedGeneration(generation: number | undefined, phase: Phase, stack: StackStatus): number {
  if (phase.kind === "stalled" && generation !== undefined) return generation;
  return decodeApplied(stack.appliedFingerprint)?.generation ?? 0;
}

/** What every kind reports (WorkloadStatus), with the fields only the object's kind reports (its description's statusOf). */
export function computeStatus(input: StatusInput, now = new Date()): WorkloadStatus {
  const { object, deployment } = input;
  const previous = object.status ?? {};
  const generation = object.metadata.generation;
  const status: WorkloadStatus = {
    observedGeneration: observedGeneration(generation, input.phase, input.stack),
    replicas: deployment?.status?.replicas ?? 0,
    readyReplicas: deployment?.status?.readyReplicas ?? 0,
    availableReplicas: deployment?.status?.availableReplicas ?? 0,
    podsNotStarting: podTrouble(input.pods)?.count,
    selector: input.selector,
    conditions: conditionsFor(input.phase, generation, previous.conditions, now),
    lastUpdateTime: previous.lastUpdateTime,
    stack: input.stack,
    preview: input.preview,
    history: withOperation(previous.history, input.stack.lastOperation),
    lastHandledReconcileAt: input.handledRequest ?? previous.lastHandledReconcileAt,
    ...describe(object).statusOf?.(input.pods),
  };
  return status;
}

/**
 * status.history: the operations it holds, and `operation` once more if it is new (an up, refresh or
 * destroy, not a preview: previews change nothing), the oldest dropped past statusHistoryLimit. A
 * failure's message is cut short: the Stalled condition has the latest in full.
 */
export function withOperation(history: readonly StackOperation[] | undefined, operation: StackOperation | undefined): StackOperation[] | undefined {
  const kept = history?.length ? [...history] : undefined;
  if (!operation || operation.kind === "preview") return kept;
  if (kept?.some((entry) => entry.kind === operation.kind && entry.startTime === operation.startTime)) return kept;
  const entry = operation.message && operation.message.length > historyMessageLimit ? { ...operation, message: `${operation.message.slice(0, historyMessageLimit - 1)}…` } : operation;
  return [...(kept ?? []), entry].slice(-statusHistoryLimit);
}

/** The stack report on the object, or, before the first, one that names its stack. */
export function stackStatusOf(object: Workload, stack: string): StackStatus {
  return object.status?.stack ?? { name: stack };
}

function withoutTimestamp(status: WorkloadStatus | undefined): string {
  return canonicalJson({ ...status, lastUpdateTime: undefined });
}

/**
 * Writes `status` unless it says what the object already says; returns whether it wrote. The write
 * holds only if the object is still at the resourceVersion `object` was read at (409 otherwise,
 * `isConflict`): a status computed from a stale read (a write that waited on a stalled connection
 * while another replica took the object over and wrote its own) never lands over a newer one.
 * On success `object` carries the written status and the resourceVersion it made.
 */
export async function writeStatus(clients: KubeClients, object: Workload, status: WorkloadStatus): Promise<boolean> {
  if (withoutTimestamp(object.status) === withoutTimestamp(status)) return false;
  const stamped = JSON.parse(JSON.stringify({ ...status, lastUpdateTime: new Date().toISOString() })) as WorkloadStatus;
  const written = await patchWorkload(clients, keyOf(object), [
    { op: "replace", path: "/metadata/resourceVersion", value: object.metadata.resourceVersion },
    { op: "add", path: "/status", value: stamped },
  ], "status");
  object.status = stamped;
  object.metadata = { ...object.metadata, resourceVersion: written.metadata.resourceVersion };
  return true;
}
