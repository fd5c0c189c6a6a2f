// App: a Deployment, and a ClusterIP Service when the App has a port.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { App, AppSpec } from "../crds/types.ts";
import { appDeployment, appService } from "./manifests.ts";
import type { Owner } from "./metadata.ts";
import type { ChildManifest, WorkloadDescription } from "./workload.ts";

export interface AppWorkloadArgs {
  /** The App the children belong to. A plain value: it names and labels the children. */
  readonly owner: Owner;
  /** The App's spec. A plain value: whether a Service exists depends on it. */
  readonly spec: AppSpec;
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

export const appKind: WorkloadDescription<App> = {
  kind: "App",
  appName: (object) => object.metadata.name,
  children(owner, spec) {
    const service = appService(owner, spec);
    const children: ChildManifest[] = [{ kind: "Deployment", name: owner.name, manifest: appDeployment(owner, spec) }];
    return service ? [...children, { kind: "Service", name: owner.name, manifest: service }] : children;
  },
  component: (owner, spec, opts) => new AppWorkload(owner.name, { owner, spec }, opts),
  replicas: (spec) => spec.replicas,
};
