// App: a Deployment, and a ClusterIP Service when the App has a port.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { AppSpec } from "../crds/types.ts";
import { childMetadata, selectorLabels, type Owner } from "./metadata.ts";

export interface AppWorkloadArgs {
  /** The App the children belong to. A plain value: it names and labels the children. */
  readonly owner: Owner;
  /** The App's spec. A plain value: whether a Service exists depends on it. */
  readonly spec: AppSpec;
}

const containerName = "app";

export function appDeployment(owner: Owner, spec: AppSpec): k8s.types.input.apps.v1.Deployment {
  const selector = selectorLabels(owner, owner.name);
  const metadata = childMetadata(owner, owner.name);
  return {
    metadata,
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: metadata.labels },
        spec: {
          containers: [
            {
              name: containerName,
              image: spec.image,
              ...(spec.port ? { ports: [{ name: "http", containerPort: spec.port, protocol: "TCP" }] } : {}),
              ...(spec.env?.length ? { env: spec.env.map((e) => ({ name: e.name, value: e.value ?? "" })) } : {}),
              ...(spec.resources ? { resources: spec.resources } : {}),
            },
          ],
        },
      },
    },
  };
}

/** The Service for an App with a port; none without one. */
export function appService(owner: Owner, spec: AppSpec): k8s.types.input.core.v1.Service | undefined {
  if (!spec.port) return undefined;
  return {
    metadata: childMetadata(owner, owner.name),
    spec: {
      type: "ClusterIP",
      selector: selectorLabels(owner, owner.name),
      ports: [{ name: "http", port: spec.port, targetPort: "http", protocol: "TCP" }],
    },
  };
}

export class AppWorkload extends pulumi.ComponentResource {
  public readonly deployment: k8s.apps.v1.Deployment;
  public readonly service?: k8s.core.v1.Service;

  constructor(name: string, args: AppWorkloadArgs, opts?: pulumi.ComponentResourceOptions) {
    super("appstack:apps:App", name, {}, opts);
    this.deployment = new k8s.apps.v1.Deployment(name, appDeployment(args.owner, args.spec), { parent: this });
    const service = appService(args.owner, args.spec);
    if (service) this.service = new k8s.core.v1.Service(name, service, { parent: this });
    this.registerOutputs({ deployment: this.deployment.metadata.name, service: this.service?.metadata.name });
  }
}
