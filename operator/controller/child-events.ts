// A child's events, as work for its owner's key. A change (a child created, deleted, or its spec
// or metadata edited) may be drift, or the fix of a failure, and cuts a backoff short; a status
// change (a rollout progressing, a pod crashing again) only moves the owner's status, and leaves a
// backoff to its retry, or a failing `up` would run again on every one.
import { createHash } from "node:crypto";
import type { KubernetesObject } from "@kubernetes/client-node";
import { isWorkloadKind } from "../../components/kinds.ts";
import { instanceLabel, kindLabel } from "../../components/metadata.ts";
import { keyString } from "../kube/clients.ts";
import type { WorkQueue } from "./queue.ts";

export type ChildEventType = "add" | "update" | "delete";

/** Where events become work: `add` cuts a backoff short, `addUnlessWaiting` leaves it. */
export type WorkSink = Pick<WorkQueue, "add" | "addUnlessWaiting">;

/** `queue`, taking only the keys `owns` says are this replica's (sharding: a child's parent may be another replica's). */
export function onlyFor(queue: WorkSink, owns: (key: string) => boolean): WorkSink {
  return {
    add: (key) => (owns(key) ? queue.add(key) : undefined),
    addUnlessWaiting: (key) => (owns(key) ? queue.addUnlessWaiting(key) : undefined),
  };
}

/** Everything of the object but what the API server and the controllers write as it runs. */
function specFingerprint(object: KubernetesObject): string {
  const { metadata, ...rest } = object as KubernetesObject & { status?: unknown };
  const { resourceVersion: _version, managedFields: _fields, ...identity } = metadata ?? {};
  return createHash("sha256").update(JSON.stringify({ ...rest, status: undefined, metadata: identity })).digest("base64");
}

/** The owner's key, from the labels appstack puts on its children. */
function ownerKey(object: KubernetesObject): string | undefined {
  const labels = object.metadata?.labels ?? {};
  const kind = labels[kindLabel];
  const name = labels[instanceLabel];
  const namespace = object.metadata?.namespace;
  return isWorkloadKind(kind) && name && namespace ? keyString({ kind, namespace, name }) : undefined;
}

/**
 * The handlers of one child informer. `statusOnly` for a kind read only for the status (Pods:
 * appstack compares and repairs the Deployment, whose controller makes and replaces the pods).
 */
export function childEvents(queue: WorkSink, statusOnly: boolean): (type: ChildEventType) => (object: KubernetesObject) => void {
  /** Per child: the fingerprint of its last event, to tell a status-only update. */
  const seen = new Map<string, string>();
  const isChange = (type: ChildEventType, object: KubernetesObject): boolean => {
    if (statusOnly) return false;
    const uid = object.metadata?.uid ?? `${object.metadata?.namespace}/${object.metadata?.name}`;
    if (type === "delete") {
      seen.delete(uid);
      return true;
    }
    const fingerprint = specFingerprint(object);
    const before = seen.get(uid);
    seen.set(uid, fingerprint);
    return type === "add" || before !== fingerprint;
  };
  return (type) => (object) => {
    const key = ownerKey(object);
    if (!key) return;
    if (isChange(type, object)) queue.add(key);
    else queue.addUnlessWaiting(key);
  };
}
