// The namespace-scoped install's RoleBinding, held while objects of its namespace have finalizers
// (operator/controller/binding-guard.ts), against a fake API: what is written, and in which order.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { RbacAuthorizationV1Api, V1RoleBinding } from "@kubernetes/client-node";
import type { Workload } from "../../crds/types.ts";
import { createLogger } from "../../operator/base/log.ts";
import { BindingGuard, bindingFinalizer } from "../../operator/controller/binding-guard.ts";
import { finalizerName } from "../../operator/controller/finalizer.ts";
import type { JsonPatch, KubeClients } from "../../operator/kube/clients.ts";

type Op = JsonPatch[number];

/** One namespace's binding and Apps, as the API server would keep them; `log` lists the writes. */
function fakeApi(binding: Pick<V1RoleBinding, "metadata"> | "forbidden" | undefined) {
  const apps: Workload[] = [];
  const log: string[] = [];
  const rbac = {
    readNamespacedRoleBinding: () => {
      if (binding === "forbidden") return Promise.reject(Object.assign(new Error("HTTP 403"), { code: 403 }));
      return binding ? Promise.resolve(structuredClone(binding)) : Promise.reject(Object.assign(new Error("HTTP 404"), { code: 404 }));
    },
    patchNamespacedRoleBinding: ({ body }: { body: Op[] }) => {
      const current = binding as V1RoleBinding;
      const finalizers = current.metadata!.finalizers;
      for (const op of body) {
        if (op.op === "test") assert.deepEqual(op.path === "/metadata/finalizers" ? finalizers : finalizers?.[Number(op.path.split("/").at(-1))], op.value);
        else if (op.op === "add" && op.path === "/metadata/finalizers") current.metadata!.finalizers = op.value as string[];
        else if (op.op === "add") finalizers!.push(op.value as string);
        else if (op.op === "remove") finalizers!.splice(Number(op.path.split("/").at(-1)), 1);
      }
      log.push(`binding: ${JSON.stringify(current.metadata!.finalizers ?? [])}`);
      return Promise.resolve(current);
    },
  } as unknown as RbacAuthorizationV1Api;
  const custom = { listNamespacedCustomObject: ({ plural }: { plural: string }) => Promise.resolve({ items: plural === "apps" ? structuredClone(apps) : [] }) };
  const clients = { custom } as unknown as KubeClients;
  const guard = new BindingGuard(clients, "appstack-operator-x", createLogger({ write: () => undefined }), rbac);
  return { guard, apps, log, custom, binding: () => binding as V1RoleBinding };
}

const app = (name: string, finalizers: string[] = [finalizerName]) => ({ kind: "App", metadata: { name, namespace: "team-a", finalizers } }) as unknown as Workload;

test("the binding takes its finalizer before an object's, and lets it go after the last object's", async () => {
  const api = fakeApi({ metadata: { name: "appstack-operator-x", namespace: "team-a" } });
  await api.guard.guarded("team-a", () => {
    api.log.push("object: finalizer added");
    api.apps.push(app("web"));
    return Promise.resolve();
  });
  await api.guard.guarded("team-a", () => Promise.resolve(api.apps.push(app("api"))));
  assert.deepEqual(api.log, [`binding: ["${bindingFinalizer}"]`, "object: finalizer added"]);
  api.apps.splice(0, 1);
  await api.guard.releaseIfUnused("team-a");
  // An object without the operator's finalizer (being deleted, finalized) holds nothing.
  api.apps.splice(0, 1, app("api", ["someone.else/finalizer"]));
  await api.guard.releaseIfUnused("team-a");
  assert.deepEqual(api.log, [`binding: ["${bindingFinalizer}"]`, "object: finalizer added", "binding: []"]);
});

test("a release waits for an object's finalizer being added meanwhile, and keeps the binding for it", async () => {
  const api = fakeApi({ metadata: { name: "appstack-operator-x", namespace: "team-a", finalizers: ["other/keep", bindingFinalizer] } });
  let finish!: () => void;
  const adding = api.guard.guarded("team-a", () => new Promise<void>((resolve) => (finish = () => {
    api.apps.push(app("late"));
    resolve();
  })));
  const release = api.guard.releaseIfUnused("team-a");
  await new Promise((resolve) => setImmediate(resolve));
  finish();
  await Promise.all([adding, release]);
  assert.deepEqual(api.binding().metadata?.finalizers, ["other/keep", bindingFinalizer]);
  assert.deepEqual(api.log, []);
});

test("nothing is held on a binding being deleted, missing, or no longer the operator's to read", async () => {
  const deleting = fakeApi({ metadata: { name: "appstack-operator-x", namespace: "team-a", deletionTimestamp: new Date() } });
  await deleting.guard.guarded("team-a", () => Promise.resolve());
  assert.deepEqual(deleting.log, []);
  for (const api of [fakeApi(undefined), fakeApi("forbidden")]) {
    let added = false;
    await api.guard.guarded("team-a", () => Promise.resolve((added = true)));
    await api.guard.releaseIfUnused("team-a");
    assert.ok(added);
  }
});

test("a release that fails is owed until one succeeds: a gone object's reconcile retries only an owed one", async () => {
  const api = fakeApi({ metadata: { name: "appstack-operator-x", namespace: "team-a", finalizers: [bindingFinalizer] } });
  assert.equal(api.guard.releaseOwed("team-a"), false);
  const listed = api.custom.listNamespacedCustomObject;
  api.custom.listNamespacedCustomObject = () => Promise.reject(Object.assign(new Error("HTTP 503"), { code: 503 }));
  await assert.rejects(api.guard.releaseIfUnused("team-a"), /503/);
  assert.equal(api.guard.releaseOwed("team-a"), true);
  assert.equal(api.guard.releaseOwed("team-b"), false);
  api.custom.listNamespacedCustomObject = listed;
  await api.guard.releaseIfUnused("team-a");
  assert.equal(api.guard.releaseOwed("team-a"), false);
  assert.deepEqual(api.binding().metadata?.finalizers, []);
});
