// Memcached, the classic operator example, as one kind definition: a Deployment of memcached pods
// and a ClusterIP Service in front of them on port 11211.
import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { imageSchema } from "../crds/fields.ts";
import { Type } from "../crds/schema-kit.ts";
import { networkPolicyField, podSecurityField } from "../crds/spec-fields.ts";
import type { WorkloadStatus } from "../crds/types.ts";
import { defaultMemcachedImage, defaultMemcachedUser, memcachedAppName, memcachedDeployment, memcachedPort, memcachedService } from "./manifests.ts";
import type { Owner } from "./metadata.ts";
import { deploymentChild, networkPolicyChild, serviceChild } from "./child-kind.ts";
import { objectNetworkPolicy } from "./object-network-policy.ts";
import { declareChildren, defineKind, type ChildManifest, type ObjectOf } from "./workload.ts";

const memcachedFields = {
  size: Type.Integer({ format: "int32", minimum: 0, maximum: 100, description: "Number of memcached pods." }),
  image: imageSchema({ default: defaultMemcachedImage, description: `The memcached image (default ${defaultMemcachedImage}).` }),
  // Restricted, as user 11211: memcached needs no root.
  podSecurity: podSecurityField("Restricted", defaultMemcachedUser),
  networkPolicy: networkPolicyField(`port ${memcachedPort}`),
};

export interface MemcachedStatus extends WorkloadStatus {
  /** Sorted names of the memcached pods. */
  nodes?: string[];
}

export type Memcached = ObjectOf<typeof memcachedFields, MemcachedStatus>;
export type MemcachedSpec = Memcached["spec"];

export interface MemcachedWorkloadArgs {
  /** The Memcached object the children belong to. */
  readonly owner: Owner;
  /** Its spec (size and image). */
  readonly spec: MemcachedSpec;
}

/** The kinds of child a Memcached makes. */
const memcachedChildKinds = [deploymentChild, serviceChild, networkPolicyChild] as const;

/**
 * A Memcached's children: its Deployment and its Service, and its NetworkPolicy when
 * spec.networkPolicy asks for one. The component declares exactly these.
 */
function memcachedChildren(owner: Owner, spec: MemcachedSpec): ChildManifest[] {
  const children: ChildManifest[] = [
    { kind: "Deployment", name: owner.name, manifest: memcachedDeployment(owner, spec) },
    { kind: "Service", name: owner.name, manifest: memcachedService(owner) },
  ];
  if (spec.networkPolicy) children.push({ kind: "NetworkPolicy", name: owner.name, manifest: objectNetworkPolicy(owner, memcachedAppName, [memcachedPort], spec.networkPolicy) });
  return children;
}

export class MemcachedWorkload extends pulumi.ComponentResource {
  public readonly deployment: k8s.apps.v1.Deployment;
  public readonly service: k8s.core.v1.Service;
  public readonly networkPolicy?: k8s.networking.v1.NetworkPolicy;

  constructor(name: string, args: MemcachedWorkloadArgs, opts?: pulumi.ComponentResourceOptions) {
    super("appstack:apps:Memcached", name, {}, opts);
    const declared = declareChildren(name, memcachedChildren(args.owner, args.spec), memcachedChildKinds, this);
    // memcachedChildren always lists both.
    this.deployment = declared.Deployment!;
    this.service = declared.Service!;
    this.networkPolicy = declared.NetworkPolicy;
    this.registerOutputs({ deployment: this.deployment.metadata.name, service: this.service.metadata.name, networkPolicy: this.networkPolicy?.metadata.name });
  }
}

export const memcachedKind = defineKind<typeof memcachedFields, MemcachedStatus>({
  api: {
    kind: "Memcached",
    plural: "memcacheds",
    description: "A Memcached runs memcached pods as a Deployment with a ClusterIP Service on port 11211; appstack reconciles it through a Pulumi stack of its own.",
    spec: { description: "The memcached cluster: how many pods, which image.", fields: memcachedFields },
    status: { nodes: { type: "array", items: { type: "string" }, description: "Sorted names of the memcached pods." } },
    printerColumns: [
      { name: "Size", type: "integer", jsonPath: ".spec.size" },
      { name: "Ready", type: "integer", jsonPath: ".status.readyReplicas" },
    ],
    replicasPath: ".spec.size",
  },
  appName: () => memcachedAppName,
  childKinds: memcachedChildKinds,
  children: memcachedChildren,
  component: (owner, spec, opts) => new MemcachedWorkload(owner.name, { owner, spec }, opts),
  replicas: (spec) => spec.size,
  // The sorted names of its pods: who serves the cache.
  statusOf: (pods) => ({ nodes: pods.map((pod) => pod.metadata?.name ?? "").filter(Boolean).sort() }),
});
