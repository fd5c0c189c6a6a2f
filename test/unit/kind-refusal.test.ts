// Before anything is applied, an object's kind makes its children from the spec: a child of a kind
// its definition does not declare stalls the object (UndeclaredChildKind, naming the kind to
// declare), and a kind whose code throws stalls its own objects with the error (KindError); an App
// goes on. Two kinds of the tests only, registered here before anything reads the kinds.
import assert from "node:assert/strict";
import { test } from "node:test";
import { childKind } from "../../components/child-kind.ts";
import { registerKind } from "../../components/kinds.ts";
import { defineKind } from "../../components/workload.ts";
import { Type } from "../../crds/schema-kit.ts";
import type { Workload } from "../../crds/types.ts";
import { kindRefusal } from "../../operator/controller/kind-refusal.ts";

const configMapChild = childKind({ apiVersion: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true });

const kind = (name: string, children: () => { kind: string; name: string; manifest: object }[]) => defineKind({
  api: { group: "tests.example.com", kind: name, plural: `${name.toLowerCase()}s`, description: "A kind of the tests.", spec: { description: "Nothing.", fields: { note: Type.Optional(Type.String({ description: "A note." })) } }, printerColumns: [] },
  appName: (object) => object.metadata.name,
  childKinds: [configMapChild],
  children,
  component: () => {
    throw new Error("not run here");
  },
  replicas: () => 0,
});

registerKind(kind("Misfit", () => [{ kind: "Secret", name: "x", manifest: {} }]));
registerKind(kind("Faulty", () => {
  throw new TypeError("Cannot read properties of undefined (reading 'size')");
}));

const object = (kindName: string, spec: object = {}) => ({ apiVersion: "tests.example.com/v1alpha1", kind: kindName, metadata: { name: "one", namespace: "team-a", uid: "u-1" }, spec }) as Workload;

test("a child of a kind the definition does not declare: Stalled, UndeclaredChildKind, the message naming the kind to declare", () => {
  assert.deepEqual(kindRefusal(object("Misfit")), {
    kind: "stalled",
    reason: "UndeclaredChildKind",
    message: "Misfit team-a/one makes a child of kind Secret, which its definition does not declare: add it to its childKinds (declared: ConfigMap)",
  });
});

test("a kind whose children throw: Stalled, KindError, with the error; an App's children are made", () => {
  assert.deepEqual(kindRefusal(object("Faulty")), {
    kind: "stalled",
    reason: "KindError",
    message: "kind Faulty failed to make the children of team-a/one: Cannot read properties of undefined (reading 'size')",
  });
  const app = { ...object("App", { image: "nginx", replicas: 1 }), apiVersion: "appstack.dev/v1alpha1" } as Workload;
  assert.equal(kindRefusal(app), undefined);
});
