// Memcached: a Deployment of memcached pods and a ClusterIP Service in front of them.
import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { Memcached, MemcachedSpec } from "../crds/types.ts";
import { memcachedAppName, memcachedDeployment, memcachedService } from "./manifests.ts";
import type { Owner } from "./metadata.ts";
import { declareChildren, type ChildManifest, type WorkloadDescription } from "./workload.ts";

export interface MemcachedWorkloadArgs {
  /** The Memcached object the children belong to. */
  readonly owner: Owner;
  /** Its spec (size and image). */
  readonly spec: MemcachedSpec;
}

/** A Memcached's children: its Deployment and its Service. The component declares exactly these. */
function memcachedChildren(owner: Owner, spec: MemcachedSpec): ChildManifest[] {
  return [
    { kind: "Deployment", name: owner.name, manifest: memcachedDeployment(owner, spec) },
    { kind: "Service", name: owner.name, manifest: memcachedService(owner) },
  ];
}

export class MemcachedWorkload extends pulumi.ComponentResource {
  public readonly deployment: k8s.apps.v1.Deployment;
  public readonly service: k8s.core.v1.Service;

  constructor(name: string, args: MemcachedWorkloadArgs, opts?: pulumi.ComponentResourceOptions) {
    super("appstack:apps:Memcached", name, {}, opts);
    const declared = declareChildren(name, memcachedChildren(args.owner, args.spec), this);
    // memcachedChildren always lists both.
    this.deployment = declared.Deployment!;
    this.service = declared.Service!;
    this.registerOutputs({ deployment: this.deployment.metadata.name, service: this.service.metadata.name });
  }
}

export const memcachedKind: WorkloadDescription<Memcached> = {
  kind: "Memcached",
  appName: () => memcachedAppName,
  children: memcachedChildren,
  component: (owner, spec, opts) => new MemcachedWorkload(owner.name, { owner, spec }, opts),
  replicas: (spec) => spec.size,
  // The sorted names of its pods: who serves the cache.
  statusOf: (pods) => ({ nodes: pods.map((pod) => pod.metadata?.name ?? "").filter(Boolean).sort() }),
};
