import assert from "node:assert/strict";
import { test } from "node:test";
import type { Workload } from "../../crds/types.ts";
import { addFinalizer, finalizerName, removeFinalizer } from "../../operator/controller/finalizer.ts";
import { isConflict, type KubeClients } from "../../operator/kube/clients.ts";

const object = { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: "web", namespace: "default", uid: "u1", finalizers: [finalizerName] }, spec: { image: "nginx", replicas: 1 } } as Workload;
const answering = (code: number) => ({ custom: { patchNamespacedCustomObject: () => Promise.reject(Object.assign(new Error(`HTTP ${code}`), { code })) } }) as unknown as KubeClients;

test("removing the finalizer of an object already gone is done, not a failure; other errors still fail", async () => {
  // Found in the hostile-input test's logs: a reconcile queued before the watch saw the deletion
  // logged "reconcile failed" (NotFound) and tried to record an Event on a gone object.
  await removeFinalizer(answering(404), object);
  await assert.rejects(removeFinalizer(answering(409), object), /HTTP 409/);
});

type Operation = { op: string; path: string; value?: unknown };

/**
 * One object as the API server keeps it, patched as it patches: a `test` that fails answers 422, and
 * a patched resourceVersion other than the stored one answers 409 (the update's precondition).
 */
class LiveObject {
  object: Workload;
  readonly patches: Operation[][] = [];

  constructor(object: Workload) {
    this.object = structuredClone(object);
  }

  readonly clients = {
    custom: {
      patchNamespacedCustomObject: ({ body }: { body: Operation[] }) => {
        this.patches.push(body);
        const patched = structuredClone(this.object);
        for (const { op, path, value } of body) {
          const current = path === "/metadata/resourceVersion" ? patched.metadata.resourceVersion : path === "/metadata/finalizers" ? patched.metadata.finalizers : undefined;
          if (op === "test" && JSON.stringify(current) !== JSON.stringify(value)) return Promise.reject(Object.assign(new Error(`HTTP 422: testing value ${path} failed`), { code: 422 }));
          if (op === "test") continue;
          if (path === "/metadata/resourceVersion") patched.metadata.resourceVersion = value as string;
          else if (path === "/metadata/finalizers") patched.metadata.finalizers = value as string[];
          else if (path === "/metadata/finalizers/-") patched.metadata.finalizers = [...(patched.metadata.finalizers ?? []), value as string];
          else return Promise.reject(new Error(`the fake does not patch ${path}`));
        }
        if (patched.metadata.resourceVersion !== this.object.metadata.resourceVersion) return Promise.reject(Object.assign(new Error("HTTP 409: the object has been modified"), { code: 409 }));
        patched.metadata.resourceVersion = String(Number(this.object.metadata.resourceVersion) + 1);
        this.object = patched;
        return Promise.resolve(structuredClone(patched));
      },
    },
  } as unknown as KubeClients;
}

const withoutFinalizers = { ...object, metadata: { name: "web", namespace: "default", uid: "u1", resourceVersion: "7" } } as Workload;

test("the finalizer patch for an object without finalizers is guarded by the resourceVersion read", async () => {
  const live = new LiveObject(withoutFinalizers);
  const added = await addFinalizer(live.clients, withoutFinalizers);
  assert.deepEqual(added.metadata.finalizers, [finalizerName]);
  const guard = live.patches[0]!.find((operation) => operation.path === "/metadata/resourceVersion");
  assert.ok(guard && ["test", "replace"].includes(guard.op) && guard.value === "7", `unguarded patch: ${JSON.stringify(live.patches[0])}`);
});

test("a finalizer another controller added since the cache read survives: the patch is refused, not applied over it", async () => {
  const live = new LiveObject({ ...withoutFinalizers, metadata: { ...withoutFinalizers.metadata, finalizers: ["other.example/cleanup"], resourceVersion: "8" } });
  // The cache's copy is still the one without finalizers.
  await assert.rejects(addFinalizer(live.clients, withoutFinalizers), (error: { code?: number }) => isConflict(error));
  assert.deepEqual(live.object.metadata.finalizers, ["other.example/cleanup"]);
  // The retry reads the object anew and adds ours beside theirs.
  await addFinalizer(live.clients, live.object);
  assert.deepEqual(live.object.metadata.finalizers, ["other.example/cleanup", finalizerName]);
});
