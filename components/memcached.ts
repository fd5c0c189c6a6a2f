// Memcached: a Deployment of memcached pods and a ClusterIP Service in front of them.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { Memcached, MemcachedSpec } from "../crds/types.ts";
import { memcachedAppName, memcachedDeployment, memcachedService } from "./manifests.ts";
import type { Owner } from "./metadata.ts";
import type { WorkloadDescription } from "./workload.ts";

export interface MemcachedWorkloadArgs {
  /** The Memcached object the children belong to. */
  readonly owner: Owner;
  /** Its spec (size and image). */
  readonly spec: MemcachedSpec;
}

export class MemcachedWorkload extends pulumi.ComponentResource {
  public readonly deployment: k8s.apps.v1.Deployment;
  public readonly service: k8s.core.v1.Service;

  constructor(name: string, args: MemcachedWorkloadArgs, opts?: pulumi.ComponentResourceOptions) {
    super("appstack:apps:Memcached", name, {}, opts);
    this.deployment = new k8s.apps.v1.Deployment(name, memcachedDeployment(args.owner, args.spec), { parent: this });
    this.service = new k8s.core.v1.Service(name, memcachedService(args.owner), { parent: this });
    this.registerOutputs({ deployment: this.deployment.metadata.name, service: this.service.metadata.name });
  }
}

export const memcachedKind: WorkloadDescription<Memcached> = {
  kind: "Memcached",
  appName: () => memcachedAppName,
  children: (owner, spec) => [
    { kind: "Deployment", name: owner.name, manifest: memcachedDeployment(owner, spec) },
    { kind: "Service", name: owner.name, manifest: memcachedService(owner) },
  ],
  component: (owner, spec, opts) => new MemcachedWorkload(owner.name, { owner, spec }, opts),
  replicas: (spec) => spec.size,
  // The sorted names of its pods: who serves the cache.
  statusOf: (pods) => ({ nodes: pods.map((pod) => pod.metadata?.name ?? "").filter(Boolean).sort() }),
};
