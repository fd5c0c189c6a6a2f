// Why an object's pods do not run, in the kubelet's and the scheduler's own words: a container
// waiting on an image pull, a crash loop or a configuration error, or a pod no node fits. Without
// this a rollout that cannot go on reads "0 of 2 updated replicas available" until the
// Deployment's progress deadline (ten minutes), and nobody learns why.
import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";

/**
 * Container waiting reasons that no wait ends by itself: the kubelet retries with a backoff, but
 * the spec (or an image, a Secret, a registry) has to change first. ContainerCreating and
 * PodInitializing are the normal start and are not among them.
 */
const waitingTroubles = new Set([
  "ImagePullBackOff",
  "ErrImagePull",
  "ErrImageNeverPull",
  "InvalidImageName",
  "CrashLoopBackOff",
  "CreateContainerConfigError",
  "CreateContainerError",
  "RunContainerError",
]);

export interface PodTrouble {
  /** The kubelet's reason (ImagePullBackOff, CrashLoopBackOff, ...) or Unschedulable. */
  readonly reason: string;
  /** One pod's case, in words, with the pod and container named. */
  readonly detail: string;
  /** How many of the pods are in trouble of any kind. */
  readonly count: number;
  /** When the oldest pod in trouble was created: how long it has not started. */
  readonly since: Date | undefined;
}

function lastExit(status: V1ContainerStatus): string {
  const terminated = status.lastState?.terminated;
  if (!terminated) return "";
  const how = terminated.reason ? ` (${terminated.reason})` : "";
  const when = terminated.finishedAt ? ` at ${new Date(terminated.finishedAt).toISOString()}` : "";
  return `; last exit code ${terminated.exitCode}${how}${when}`;
}

/** What is wrong with one container, or undefined when it is running or starting normally. */
function containerTrouble(status: V1ContainerStatus): { reason: string; detail: string } | undefined {
  const waiting = status.state?.waiting;
  if (!waiting?.reason || !waitingTroubles.has(waiting.reason)) return undefined;
  const message = waiting.message ? `: ${waiting.message}` : "";
  const image = waiting.reason.includes("Image") ? ` (image ${status.image})` : "";
  const exit = waiting.reason === "CrashLoopBackOff" ? lastExit(status) : "";
  return { reason: waiting.reason, detail: `container ${status.name} ${waiting.reason}${image}${message}${exit}` };
}

function podTroubleOf(pod: V1Pod): { reason: string; detail: string } | undefined {
  const name = pod.metadata?.name ?? "";
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  for (const status of statuses) {
    const trouble = containerTrouble(status);
    if (trouble) return { reason: trouble.reason, detail: `pod ${name}: ${trouble.detail}` };
  }
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
  if (scheduled?.status === "False" && scheduled.reason === "Unschedulable") {
    return { reason: "Unschedulable", detail: `pod ${name} cannot be scheduled: ${scheduled.message ?? "no node fits"}` };
  }
  return undefined;
}

/** The pods that cannot start, summed up by the oldest one's case; undefined when none. */
export function podTrouble(pods: readonly V1Pod[]): PodTrouble | undefined {
  const troubled = pods
    .map((pod) => ({ pod, trouble: podTroubleOf(pod) }))
    .filter((entry): entry is { pod: V1Pod; trouble: { reason: string; detail: string } } => entry.trouble !== undefined)
    .map(({ pod, trouble }) => ({ ...trouble, created: pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp) : undefined }))
    .sort((a, b) => (a.created?.getTime() ?? 0) - (b.created?.getTime() ?? 0));
  const oldest = troubled[0];
  if (!oldest) return undefined;
  return { reason: oldest.reason, detail: oldest.detail, count: troubled.length, since: oldest.created };
}
