// Memcached: a Deployment of memcached pods and a ClusterIP Service in front of them.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { MemcachedSpec } from "../crds/types.ts";
import { childMetadata, selectorLabels, type Owner } from "./metadata.ts";

export interface MemcachedWorkloadArgs {
  /** The Memcached object the children belong to. */
  readonly owner: Owner;
  /** Its spec (size and image). */
  readonly spec: MemcachedSpec;
}

export const memcachedPort = 11211;
const appName = "memcached";

export function memcachedDeployment(owner: Owner, spec: MemcachedSpec): k8s.types.input.apps.v1.Deployment {
  const metadata = childMetadata(owner, appName);
  return {
    metadata,
    spec: {
      replicas: spec.size,
      selector: { matchLabels: selectorLabels(owner, appName) },
      template: {
        metadata: { labels: metadata.labels },
        spec: {
          containers: [
            {
              name: "memcached",
              image: spec.image,
              args: ["-m=64", "-o", "modern", "-v"],
              ports: [{ name: "memcached", containerPort: memcachedPort, protocol: "TCP" }],
              resources: { requests: { cpu: "100m", memory: "128Mi" } },
              livenessProbe: { tcpSocket: { port: memcachedPort }, initialDelaySeconds: 30, periodSeconds: 10 },
            },
          ],
        },
      },
    },
  };
}

export function memcachedService(owner: Owner): k8s.types.input.core.v1.Service {
  return {
    metadata: childMetadata(owner, appName),
    spec: {
      type: "ClusterIP",
      selector: selectorLabels(owner, appName),
      ports: [{ name: "memcached", port: memcachedPort, targetPort: "memcached", protocol: "TCP" }],
    },
  };
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
