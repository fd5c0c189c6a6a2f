// Proof that another replica's engines are gone, from its pod. A pod's hostname is its name, so a
// stack lock taken on another host may name the pod of a replica that took it. It may as well name
// a host that was never a pod of this install: a person's laptop running `appstack stacks refresh`
// against the same PostgreSQL database, or the machine that runs the install program, whose stack
// (Pulumi project `appstack` too) may be kept there. The API server answers 404 for those as for a
// deleted pod, so a 404 alone proves nothing: a lock is judged here only when its holder is proven
// to be a pod of this install, that is of the Deployment (or bare ReplicaSet) that runs this
// replica's own pod (POD_NAME in POD_NAMESPACE), in that pod's namespace (not the Lease's, which
// may be another). The proof is the pod's controller when it exists: one of those ReplicaSets. A
// pod that no longer exists shows no owner; its name then is the proof: a ReplicaSet names its
// pods `<its name>-` and five of the API server's random characters (the prefix cut to 58), so a
// 404 for such a name of one of this install's ReplicaSets is a pod of this install that is gone.
// Only a host outside the cluster named exactly so, or a pod of an identically named ReplicaSet in
// another namespace sharing the database, could pass for one. A holder not so proven keeps its
// lock, whatever the API says of that name: the object says StackLocked, naming it.
//
// A pod of this install is gone once the pod is gone (the kubelet confirmed its containers dead,
// or an administrator force-deleted it, as for a pod on a lost node), has ended, has never been on
// a node, or its containers have started again since the lock was taken. A pod that still shows a
// container running since before the lock may be frozen with its engine mid-update, or cut off
// from the API server while still writing the stack: its lock stays.
//
// Only facts of one clock are compared. The lock's time is by the holder's node clock, and so is a
// container's startedAt (the kubelet's, on that node: a pod never moves), while the pod's
// creationTimestamp is by the API server's: a node clock behind it would make a live leader's
// first lock look older than its pod. A newer pod of the same name (a StatefulSet's) on another
// node is told apart by none of these when that node's clock is behind: its lock stays, until that
// pod, starting, breaks the locks of its name that it finds (stack-locks.ts).
import type { AppsV1Api, CoreV1Api, V1ObjectMeta, V1Pod, V1ReplicaSet } from "@kubernetes/client-node";
import type { HolderCheck, HolderVerdict } from "../base/lock-holders.ts";
import { briefError, orUndefined } from "./clients.ts";

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

/** This replica's pod, from the downward API: POD_NAME, and POD_NAMESPACE (or the service account's namespace). */
export interface OwnPod {
  readonly name: string;
  readonly namespace: string;
}

/** What the check reads: pods and ReplicaSets of the pods' namespace. */
export interface PodApi {
  readonly core: Pick<CoreV1Api, "readNamespacedPod">;
  readonly apps: Pick<AppsV1Api, "listNamespacedReplicaSet">;
}

const controllerOf = (meta: V1ObjectMeta | undefined) => meta?.ownerReferences?.find((owner) => owner.controller);

/** The characters of the API server's generated names (k8s.io/apimachinery's util/rand). */
const generatedSuffix = /^[bcdfghjklmnpqrstvwxz2456789]{5}$/;

/** Whether `host` is a name the ReplicaSet `set` gives its pods: `<set>-` cut to 58 characters, then five generated ones. */
export function namedBy(set: string, host: string): boolean {
  const prefix = `${set}-`.slice(0, 58);
  return host.startsWith(prefix) && generatedSuffix.test(host.slice(prefix.length));
}

/** This install: what runs this replica's pod (its Deployment, or a bare ReplicaSet), and the ReplicaSets whose pods are its pods. */
interface Install {
  readonly name: string;
  readonly sets: readonly V1ReplicaSet[];
}

/** This install as the API server tells it, or why it cannot: then no other host is provably one of its pods. */
async function installOf(api: PodApi, self: OwnPod): Promise<Install | string> {
  const own = controllerOf((await api.core.readNamespacedPod({ name: self.name, namespace: self.namespace })).metadata);
  if (own?.kind !== "ReplicaSet") return `this replica's pod ${self.namespace}/${self.name} belongs to no ReplicaSet, so no other host is provably a pod of its install`;
  const all = (await api.apps.listNamespacedReplicaSet({ namespace: self.namespace })).items;
  const top = controllerOf(all.find((set) => set.metadata?.uid === own.uid)?.metadata) ?? own;
  const sets = all.filter((set) => set.metadata?.uid === top.uid || controllerOf(set.metadata)?.uid === top.uid);
  return { name: `${top.kind} ${self.namespace}/${top.name}`, sets };
}

/** The verdict on a lock taken by `host`, given this install. */
async function installVerdict(api: PodApi, self: OwnPod, install: Install, host: string, takenAtMs: number | undefined): Promise<HolderVerdict> {
  const podName = `${self.namespace}/${host}`;
  const pod = await orUndefined(() => api.core.readNamespacedPod({ name: host, namespace: self.namespace }));
  const ours = pod
    ? install.sets.some((set) => set.metadata?.uid === controllerOf(pod.metadata)?.uid)
    : install.sets.some((set) => namedBy(set.metadata?.name ?? "", host));
  if (ours) return podVerdict(podName, pod, takenAtMs);
  const seen = pod ? `pod ${podName} is not one of its pods` : `no pod ${podName} exists, and no ReplicaSet of the install names its pods so`;
  return { gone: false, why: `${host} is no pod of this install (${install.name}): ${seen}. A lock of another machine (a person's \`appstack stacks\`, the install program's own stack) is never proven gone; it stays` };
}

/**
 * Judges other hosts' locks by this install's pods, in the namespace of this replica's own pod.
 * An API error proves nothing.
 */
export function installPodCheck(api: PodApi, self: OwnPod): HolderCheck {
  return async (host, takenAtMs) => {
    try {
      const install = await installOf(api, self);
      if (typeof install === "string") return { gone: false, why: `${install}; the lock stays` };
      return await installVerdict(api, self, install, host, takenAtMs);
    } catch (error) {
      return { gone: false, why: `whether ${host} is a pod of this install that is gone cannot be told (${briefError(error)}); the lock stays` };
    }
  };
}
