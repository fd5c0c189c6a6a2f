import assert from "node:assert/strict";
import { test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { instanceLabel, kindLabel, managedBy, managedByLabel } from "../../components/metadata.ts";
import { childEvents, onlyFor, type ChildEventType } from "../../operator/controller/child-events.ts";

/** The calls the watch makes on the queue. */
function recordingQueue() {
  const calls: string[] = [];
  return { calls, add: (key: string) => void calls.push(`add ${key}`), addUnlessWaiting: (key: string) => void calls.push(`status ${key}`) };
}

const labels = { [managedByLabel]: managedBy, [kindLabel]: "App", [instanceLabel]: "web" };

function deployment(resourceVersion: string, replicas: number, readyReplicas: number): KubernetesObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "default", uid: "d-1", resourceVersion, generation: replicas, labels, managedFields: [{ manager: "kube-controller-manager", time: new Date(Number(resourceVersion)) }] },
    spec: { replicas },
    status: { readyReplicas, observedGeneration: replicas },
  } as KubernetesObject;
}

function pod(resourceVersion: string, phase: string): KubernetesObject {
  return { apiVersion: "v1", kind: "Pod", metadata: { name: "web-abc", namespace: "default", uid: "p-1", resourceVersion, labels }, spec: { containers: [] }, status: { phase } } as KubernetesObject;
}

test("a Deployment's status-only update leaves the backoff; its creation, spec change and deletion cut it short", () => {
  const queue = recordingQueue();
  const on = childEvents(queue, false);
  const events: [ChildEventType, KubernetesObject][] = [
    ["add", deployment("1", 2, 0)],
    ["update", deployment("2", 2, 1)],
    ["update", deployment("3", 2, 2)],
    ["update", deployment("4", 3, 2)],
    ["delete", deployment("5", 3, 2)],
  ];
  for (const [type, object] of events) on(type)(object);
  assert.deepEqual(queue.calls, ["add App/default/web", "status App/default/web", "status App/default/web", "add App/default/web", "add App/default/web"]);
});

test("a label or annotation edit of a Deployment is a change", () => {
  const queue = recordingQueue();
  const on = childEvents(queue, false);
  const edited = deployment("2", 2, 0);
  edited.metadata!.annotations = { note: "by hand" };
  on("add")(deployment("1", 2, 0));
  on("update")(edited);
  assert.deepEqual(queue.calls, ["add App/default/web", "add App/default/web"]);
});

test("every event of a Pod is a status change: the Deployment, not its pods, is what appstack repairs", () => {
  const queue = recordingQueue();
  const on = childEvents(queue, true);
  on("add")(pod("1", "Pending"));
  on("update")(pod("2", "Running"));
  on("delete")(pod("3", "Running"));
  assert.deepEqual(queue.calls, ["status App/default/web", "status App/default/web", "status App/default/web"]);
});

test("an object without appstack's owner labels is no one's work", () => {
  const queue = recordingQueue();
  const stray = deployment("1", 1, 0);
  stray.metadata!.labels = { [managedByLabel]: managedBy };
  childEvents(queue, false)("add")(stray);
  assert.deepEqual(queue.calls, []);
});

test("sharded, a child's events are work only for a parent this replica owns", () => {
  const queue = recordingQueue();
  const handler = childEvents(onlyFor(queue, (key) => key === "App/default/web"), false);
  handler("add")(deployment("1", 1, 0));
  handler("add")({ ...deployment("1", 1, 0), metadata: { name: "other", namespace: "default", uid: "d-2", labels: { ...labels, [instanceLabel]: "other" } } });
  assert.deepEqual(queue.calls, ["add App/default/web"]);
});
