// A kind is one definition (defineKind): its CRD is derived from it, with appstack's common spec
// fields after the kind's own, the status every kind reports with the kind's own fields, and the
// columns every kind shows after its own; the command line names it as kubectl does.
import assert from "node:assert/strict";
import { test } from "node:test";
import { customResourceDefinition } from "../../crds/crd.ts";
import { Type } from "../../crds/schema-kit.ts";
import { defineKind } from "../../components/workload.ts";
import { kindNamed, pluralOf, workloadKinds } from "../../components/kinds.ts";

interface Version {
  subresources: { scale: { specReplicasPath: string } };
  additionalPrinterColumns: { name: string }[];
  schema: { openAPIV3Schema: { properties: { spec: { required?: string[]; properties: Record<string, { default?: unknown; enum?: string[]; items?: { properties: { kind: { enum: string[] } } } }> }; status: { properties: Record<string, unknown> } } } };
}

// A kind that exists nowhere else: a queue of workers.
const queueKind = defineKind({
  api: {
    kind: "WorkQueue",
    plural: "workqueues",
    shortNames: ["wq"],
    description: "A queue and its workers.",
    spec: {
      description: "How many workers, and how deep the queue may grow.",
      fields: {
        workers: Type.Integer({ minimum: 1, default: 2, description: "Worker pods." }),
        depth: Type.Optional(Type.Integer({ minimum: 1, description: "The most messages held." })),
      },
    },
    status: { backlog: { type: "integer", description: "Messages waiting." } },
    printerColumns: [{ name: "Workers", type: "integer", jsonPath: ".spec.workers" }],
    replicasPath: ".spec.workers",
  },
  appName: (object) => object.metadata.name,
  childKinds: [],
  children: () => [],
  component: () => {
    throw new Error("not run here");
  },
  replicas: (spec) => spec.workers,
});

test("a kind's CRD is derived from its definition: its own fields, then the common ones; its status fields beside every kind's; its columns, then Status, Plan and Age", () => {
  const crd = customResourceDefinition(queueKind.api, ["WorkQueue", "App"]);
  assert.equal(crd.metadata.name, "workqueues.appstack.dev");
  const names = crd.spec["names"] as { kind: string; plural: string; singular: string; shortNames: string[] };
  assert.deepEqual([names.kind, names.plural, names.singular, names.shortNames], ["WorkQueue", "workqueues", "workqueue", ["wq"]]);
  const [version] = crd.spec["versions"] as Version[];
  const spec = version!.schema.openAPIV3Schema.properties.spec;
  assert.deepEqual(Object.keys(spec.properties), ["workers", "depth", "updatePolicy", "suspend", "deletionPolicy", "dependsOn", "serviceAccountName"]);
  assert.equal(spec.required, undefined, "a defaulted field is not required of the client");
  assert.deepEqual(spec.properties["dependsOn"]?.items?.properties.kind.enum, ["WorkQueue", "App"], "dependsOn names the kinds given");
  assert.ok(version!.schema.openAPIV3Schema.properties.status.properties["backlog"]);
  assert.ok(version!.schema.openAPIV3Schema.properties.status.properties["conditions"]);
  assert.deepEqual(version!.additionalPrinterColumns.map((column) => column.name), ["Workers", "Status", "Plan", "Age"]);
  assert.equal(version!.subresources.scale.specReplicasPath, ".spec.workers");
  // The spec's type comes from the same schema: workers is a number, present after defaulting.
  assert.equal(queueKind.replicas({ workers: 3 }), 3);
});

test("the command line names a kind as kubectl does: kind, plural or short name, with or without the group, any case", () => {
  assert.deepEqual(workloadKinds(), ["App", "Memcached"]);
  for (const name of ["app", "apps", "asapp", "App", "apps.appstack.dev", "ASAPP.appstack.dev"]) assert.equal(kindNamed(name), "App", name);
  for (const name of ["memcached", "memcacheds", "memcacheds.appstack.dev"]) assert.equal(kindNamed(name), "Memcached", name);
  for (const name of ["deployment", "app.example.com", ""]) assert.equal(kindNamed(name), undefined, name);
  assert.equal(pluralOf("Memcached"), "memcacheds");
  assert.throws(() => pluralOf("WorkQueue"), /no kind WorkQueue: the kinds are App, Memcached/);
});
