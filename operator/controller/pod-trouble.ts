// Why an object's pods do not run, in the kubelet's and the scheduler's own words: a container
// waiting on an image pull, a crash loop or a configuration error, or a pod no node fits. Without
// this a rollout that cannot go on reads "0 of 2 updated replicas available" until the
// Deployment's progress deadline (ten minutes), and nobody learns why.
import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { podWaitingReasons, type PodWaitingReason } from "./reasons.ts";

/**
 * Container waiting reasons that no wait ends by itself (reasons.ts lists them): the kubelet
 * retries with a backoff, but the spec (or an image, a Secret, a registry) has to change first.
 * ContainerCreating and PodInitializing are the normal start and are not among them.
 */
const waitingTroubles: ReadonlySet<string> = new Set(podWaitingReasons);
const isWaitingTrouble = (reason: string | undefined): reason is PodWaitingReason => reason !== undefined && waitingTroubles.has(reason);

export interface PodTrouble {
  /** The kubelet's reason (ImagePullBackOff, CrashLoopBackOff, ...) or Unschedulable. */
  readonly reason: PodWaitingReason | "Unschedulable";
  /** One pod's case, in words, with the pod and container named. */
  readonly detail: string;
  /** How many of the pods are in trouble of any kind. */
  readonly count: number;
  /** When the longest trouble began (failingSince): how long a pod has not run. */
  readonly since: Date | undefined;
}

/**
 * The kubelet forgets a container's restart backoff once it has run this long
 * (pkg/kubelet/kuberuntime: twice the 5-minute maximum backoff): a longer run ends a crash loop,
 * so its exit begins a new one.
 */
export const backoffResetMs = 600_000;

/** The memory's bound: far more containers than one operator watches in trouble at once. */
const remembered = 10_000;

/**
 * When each container in trouble began failing. A pod's creation time is the wrong start for a
 * pod that ran for days before it began to crash, and the pod's status keeps only the last run:
 * once a crash-looping container has restarted, nothing in it says when the loop began. So the
 * start is read from the status the first time the trouble is seen (the end of a run long
 * enough to end a crash loop, else the start of the last run, else the pod's creation) and kept
 * until the container has run past backoffResetMs again. A restarted operator reads it anew
 * from the status: later than the truth, never earlier, so it only adds grace.
 */
export class FailingSince {
  private readonly began = new Map<string, Date>();

  /** When the trouble of `status`, a container of `pod`, began. */
  troubled(pod: V1Pod, status: V1ContainerStatus): Date | undefined {
    const key = containerKey(pod, status);
    const known = this.began.get(key);
    if (known) return known;
    const start = streakStartOf(pod, status);
    if (!start) return undefined;
    if (this.began.size >= remembered) this.began.delete(this.began.keys().next().value!);
    this.began.set(key, start);
    return start;
  }

  /** `status` is not in trouble now: its streak ends once it has run past the kubelet's reset. */
  settled(pod: V1Pod, status: V1ContainerStatus, now: Date): void {
    const running = status.state?.running?.startedAt;
    if (running && now.getTime() - new Date(running).getTime() >= backoffResetMs) this.began.delete(containerKey(pod, status));
  }
}

function containerKey(pod: V1Pod, status: V1ContainerStatus): string {
  return `${pod.metadata?.uid ?? `${pod.metadata?.namespace}/${pod.metadata?.name}`}/${status.name}`;
}

/** Where the status alone places the start of a container's trouble (see FailingSince). */
function streakStartOf(pod: V1Pod, status: V1ContainerStatus): Date | undefined {
  const last = status.lastState?.terminated;
  const started = last?.startedAt ? new Date(last.startedAt) : undefined;
  const finished = last?.finishedAt ? new Date(last.finishedAt) : undefined;
  if (started && finished && finished.getTime() - started.getTime() >= backoffResetMs) return finished;
  return started ?? createdAt(pod);
}

/** The one memory of the operator's process (each replica judges the pods of its own objects). */
const failingSince = new FailingSince();

function lastExit(status: V1ContainerStatus): string {
  const terminated = status.lastState?.terminated;
  if (!terminated) return "";
  const how = terminated.reason ? ` (${terminated.reason})` : "";
  const when = terminated.finishedAt ? ` at ${new Date(terminated.finishedAt).toISOString()}` : "";
  return `; last exit code ${terminated.exitCode}${how}${when}`;
}

/** What is wrong with one container, or undefined when it is running or starting normally. */
function containerTrouble(status: V1ContainerStatus): { reason: PodWaitingReason; detail: string } | undefined {
  const waiting = status.state?.waiting;
  const reason = waiting?.reason;
  if (!waiting || !isWaitingTrouble(reason)) return undefined;
  const message = waiting.message ? `: ${waiting.message}` : "";
  const image = reason.includes("Image") ? ` (image ${status.image})` : "";
  const exit = reason === "CrashLoopBackOff" ? lastExit(status) : "";
  return { reason, detail: `container ${status.name} ${reason}${image}${message}${exit}` };
}

interface Trouble {
  readonly reason: PodTrouble["reason"];
  readonly detail: string;
  readonly since: Date | undefined;
}

function createdAt(pod: V1Pod): Date | undefined {
  return pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp) : undefined;
}

/** The first container of `pod` in trouble; every other one tells the memory it is fine. */
function containersTrouble(pod: V1Pod, memory: FailingSince, now: Date): Trouble | undefined {
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  let found: Trouble | undefined;
  for (const status of statuses) {
    const trouble = containerTrouble(status);
    if (!trouble) memory.settled(pod, status, now);
    else found ??= { reason: trouble.reason, detail: `pod ${pod.metadata?.name ?? ""}: ${trouble.detail}`, since: memory.troubled(pod, status) };
  }
  return found;
}

function podTroubleOf(pod: V1Pod, memory: FailingSince, now: Date): Trouble | undefined {
  const found = containersTrouble(pod, memory, now);
  if (found) return found;
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
  if (scheduled?.status !== "False" || scheduled.reason !== "Unschedulable") return undefined;
  return { reason: "Unschedulable", detail: `pod ${pod.metadata?.name ?? ""} cannot be scheduled: ${scheduled.message ?? "no node fits"}`, since: createdAt(pod) };
}

/** The pods that cannot start, summed up by the longest trouble's case; undefined when none. */
export function podTrouble(pods: readonly V1Pod[], now = new Date(), memory = failingSince): PodTrouble | undefined {
  const troubled = pods
    .map((pod) => podTroubleOf(pod, memory, now))
    .filter((trouble): trouble is Trouble => trouble !== undefined)
    .sort((a, b) => (a.since?.getTime() ?? 0) - (b.since?.getTime() ?? 0));
  const longest = troubled[0];
  if (!longest) return undefined;
  return { reason: longest.reason, detail: longest.detail, count: troubled.length, since: longest.since };
}
