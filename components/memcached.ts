// Memcached: a Deployment of memcached pods and a ClusterIP Service in front of them.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { MemcachedSpec } from "../crds/types.ts";
import { memcachedDeployment, memcachedService } from "./manifests.ts";
import type { Owner } from "./metadata.ts";

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
