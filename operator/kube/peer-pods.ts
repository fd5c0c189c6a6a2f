// Proof that another replica's engines are gone, from its pod. A pod's hostname is its name, so a
// stack lock taken on another host names the pod of the replica that took it. Its engines ran in
// that pod's container: they are provably gone once the pod is gone (the kubelet confirmed its
// containers dead, or an administrator force-deleted it, as for a StatefulSet on a lost node), has
// ended, has never been on a node, or its containers have started again since the lock was taken.
// A pod that still shows a container running since before the lock may be frozen with its engine
// mid-update, or cut off from the API server while still writing the stack: its lock stays.
//
// Only facts of one clock are compared. The lock's time is by the holder's node clock, and so is a
// container's startedAt (the kubelet's, on that node: a pod never moves), while the pod's
// creationTimestamp is by the API server's: a node clock behind it would make a live leader's
// first lock look older than its pod. A newer pod of the same name (a StatefulSet's) on another
// node is told apart by none of these when that node's clock is behind: its lock stays, until that
// pod, starting, breaks the locks of its name that it finds (stack-locks.ts).
import type { CoreV1Api, V1Pod } from "@kubernetes/client-node";
import type { HolderCheck, HolderVerdict } from "../base/lock-holders.ts";
import { briefError, isNotFound } from "./clients.ts";

const time = (value: Date | string | undefined): number => (value === undefined ? NaN : new Date(value).getTime());

/** The pod's containers that have run since before `takenAtMs` (all running ones when the lock has no time). */
function runningSince(pod: V1Pod, takenAtMs: number | undefined) {
  // startedAt has whole seconds: a restart within the lock's second counts as before it, which errs on keeping the lock.
  return (pod.status?.containerStatuses ?? []).filter((c) => c.state?.running && (takenAtMs === undefined || !(time(c.state.running.startedAt) > takenAtMs)));
}

/** Why the replica that took a lock at `takenAtMs` (by its clock) in `pod` is provably gone; undefined when it is not. */
function goneBecause(podName: string, pod: V1Pod, takenAtMs: number | undefined): string | undefined {
  // A StatefulSet reuses names: a pod of that name that no node has run is another pod than the holder's.
  if (!pod.spec?.nodeName) return `pod ${podName} has never run on a node (a newer pod of that name: the holder's pod is gone)`;
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") return `pod ${podName} has ended (${phase})`;
  const reported = (pod.status?.containerStatuses ?? []).length > 0;
  if (reported && runningSince(pod, takenAtMs).length === 0) return `the containers of pod ${podName} have stopped or started again since the lock was taken`;
  return undefined;
}

/** The verdict on a lock taken at `takenAtMs` (by the holder's clock) by the replica in `pod` (undefined: no such pod). */
export function podVerdict(podName: string, pod: V1Pod | undefined, takenAtMs: number | undefined): HolderVerdict {
  if (!pod) return { gone: true, why: `pod ${podName} no longer exists` };
  const gone = goneBecause(podName, pod, takenAtMs);
  if (gone) return { gone: true, why: gone };
  const since = runningSince(pod, takenAtMs)[0]?.state?.running?.startedAt;
  return { gone: false, why: `pod ${podName} still runs${since ? ` (since ${new Date(since).toISOString()})` : ""}, so its engine may still write the stack; the lock stays until that pod is gone or restarted` };
}

/** Judges other hosts' locks by the pods of that name in `namespace` (where the replicas run). An API error proves nothing. */
export function peerPodCheck(core: CoreV1Api, namespace: string): HolderCheck {
  return async (host, takenAtMs) => {
    try {
      return podVerdict(`${namespace}/${host}`, await core.readNamespacedPod({ name: host, namespace }), takenAtMs);
    } catch (error) {
      if (isNotFound(error)) return podVerdict(`${namespace}/${host}`, undefined, takenAtMs);
      return { gone: false, why: `whether pod ${namespace}/${host} still runs cannot be told (${briefError(error)}); the lock stays` };
    }
  };
}
