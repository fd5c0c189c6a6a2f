// A kind that exists only in the tests, whose children have no rule of appstack's own: a Stash
// keeps its data in a PersistentVolumeClaim and runs one pod that mounts it, as a StatefulSet.
// kstatus reads both (the claim Current once Bound, the StatefulSet once its pod is ready), and so
// does the operator. The claim asks for no StorageClass: only a PersistentVolume a test makes binds
// it, so the test decides when it becomes current. Importing this module registers the kind, as
// test/helpers/greeter-kind.ts does; written in erasable TypeScript only.
import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { childKind } from "../../components/child-kind.ts";
import { registerKind } from "../../components/kinds.ts";
import { childMetadata, selectorLabels, type Owner } from "../../components/metadata.ts";
import { declareChildren, defineKind, type ChildManifest, type ObjectOf } from "../../components/workload.ts";
import { imageSchema } from "../../crds/fields.ts";

/** This module, as `node --import` takes it. */
export const stashKindModule = import.meta.url;

const stashFields = { image: imageSchema() };

export type Stash = ObjectOf<typeof stashFields>;
type StashSpec = Stash["spec"];

/** What the claim asks for, which a test's PersistentVolume offers. */
export const stashClaim = { storage: "1Mi", accessModes: ["ReadWriteOnce"], storageClassName: "" } as const;

const claimChild = childKind<"PersistentVolumeClaim", k8s.types.input.core.v1.PersistentVolumeClaim>({ apiVersion: "v1", kind: "PersistentVolumeClaim", plural: "persistentvolumeclaims", namespaced: true });
const statefulSetChild = childKind<"StatefulSet", k8s.types.input.apps.v1.StatefulSet>({ apiVersion: "apps/v1", kind: "StatefulSet", plural: "statefulsets", namespaced: true });
const stashChildKinds = [claimChild, statefulSetChild] as const;

function stashChildren(owner: Owner, spec: StashSpec): ChildManifest[] {
  const metadata = childMetadata(owner, owner.name);
  const claim: k8s.types.input.core.v1.PersistentVolumeClaim = {
    metadata,
    spec: { accessModes: [...stashClaim.accessModes], storageClassName: stashClaim.storageClassName, resources: { requests: { storage: stashClaim.storage } } },
  };
  const statefulSet: k8s.types.input.apps.v1.StatefulSet = {
    metadata,
    spec: {
      replicas: 1,
      serviceName: owner.name,
      selector: { matchLabels: selectorLabels(owner, owner.name) },
      template: {
        metadata: { labels: metadata.labels },
        spec: {
          containers: [{ name: "stash", image: spec.image, volumeMounts: [{ name: "data", mountPath: "/data" }] }],
          volumes: [{ name: "data", persistentVolumeClaim: { claimName: owner.name } }],
        },
      },
    },
  };
  // The claim first: while it is not Bound, its words are the object's.
  return [
    { kind: "PersistentVolumeClaim", name: owner.name, manifest: claim },
    { kind: "StatefulSet", name: owner.name, manifest: statefulSet },
  ];
}

class StashWorkload extends pulumi.ComponentResource {
  constructor(owner: Owner, spec: StashSpec, opts: pulumi.ComponentResourceOptions) {
    super("appstack:test:Stash", owner.name, {}, opts);
    declareChildren(owner.name, stashChildren(owner, spec), stashChildKinds, this);
    this.registerOutputs({});
  }
}

export const stashKind = defineKind({
  api: {
    kind: "Stash",
    plural: "stashes",
    description: "A Stash keeps its data in a PersistentVolumeClaim that one pod of a StatefulSet mounts (a kind of the tests only).",
    spec: { description: "The image of its pod.", fields: stashFields },
    printerColumns: [],
  },
  appName: (object) => object.metadata.name,
  childKinds: stashChildKinds,
  children: stashChildren,
  component: (owner, spec, opts) => new StashWorkload(owner, spec, opts),
  replicas: () => 1,
});

registerKind(stashKind);
