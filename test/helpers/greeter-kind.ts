// A kind that exists only in the tests: a Greeter runs one image as a Deployment and keeps its
// greeting in a ConfigMap, a kind of child neither App nor Memcached makes. Importing this module
// registers the kind (components/kinds.ts), so a test imports it before anything reads the kinds
// (its first import) and starts the operator with it loaded first (`preload`, operator.ts).
// Written in erasable TypeScript only: the operator's Node.js runs it without tsx.
import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { childKind, deploymentChild } from "../../components/child-kind.ts";
import { registerKind } from "../../components/kinds.ts";
import { childMetadata, selectorLabels, type Owner } from "../../components/metadata.ts";
import { declareChildren, defineKind, type ChildManifest, type ObjectOf } from "../../components/workload.ts";
import { imageSchema } from "../../crds/fields.ts";
import { Type } from "../../crds/schema-kit.ts";

/** This module, as `node --import` takes it. */
export const greeterKindModule = import.meta.url;

const greeterFields = {
  image: imageSchema(),
  replicas: Type.Integer({ format: "int32", default: 1, minimum: 0, maximum: 10, description: "Number of pods." }),
  greeting: Type.String({ minLength: 1, maxLength: 200, description: "What the ConfigMap holds under `greeting`." }),
};

export type Greeter = ObjectOf<typeof greeterFields>;
type GreeterSpec = Greeter["spec"];

/** ConfigMaps, declared as any Kubernetes kind is: the provider's resource of their type, no typed class. */
export const configMapChild = childKind<"ConfigMap", k8s.types.input.core.v1.ConfigMap>({ apiVersion: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true });

const greeterChildKinds = [deploymentChild, configMapChild] as const;

function greeterChildren(owner: Owner, spec: GreeterSpec): ChildManifest[] {
  const metadata = childMetadata(owner, owner.name);
  const deployment: k8s.types.input.apps.v1.Deployment = {
    metadata,
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: selectorLabels(owner, owner.name) },
      template: { metadata: { labels: metadata.labels }, spec: { containers: [{ name: "greeter", image: spec.image }] } },
    },
  };
  const configMap: k8s.types.input.core.v1.ConfigMap = { metadata, data: { greeting: spec.greeting } };
  return [
    { kind: "Deployment", name: owner.name, manifest: deployment },
    { kind: "ConfigMap", name: owner.name, manifest: configMap },
  ];
}

class GreeterWorkload extends pulumi.ComponentResource {
  readonly deployment: k8s.apps.v1.Deployment;

  constructor(owner: Owner, spec: GreeterSpec, opts: pulumi.ComponentResourceOptions) {
    super("appstack:test:Greeter", owner.name, {}, opts);
    const declared = declareChildren(owner.name, greeterChildren(owner, spec), greeterChildKinds, this);
    // greeterChildren always lists the Deployment.
    this.deployment = declared.Deployment!;
    this.registerOutputs({ deployment: this.deployment.metadata.name });
  }
}

export const greeterKind = defineKind({
  api: {
    kind: "Greeter",
    plural: "greeters",
    description: "A Greeter runs one image as a Deployment and keeps its greeting in a ConfigMap (a kind of the tests only).",
    spec: { description: "The image, its pods and the greeting.", fields: greeterFields },
    printerColumns: [{ name: "Greeting", type: "string", jsonPath: ".spec.greeting" }],
    replicasPath: ".spec.replicas",
  },
  appName: (object) => object.metadata.name,
  childKinds: greeterChildKinds,
  children: greeterChildren,
  component: (owner, spec, opts) => new GreeterWorkload(owner, spec, opts),
  replicas: (spec) => spec.replicas,
});

registerKind(greeterKind);
