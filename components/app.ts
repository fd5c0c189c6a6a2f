// App: a Deployment, and a ClusterIP Service when the App has a port.
import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { App, AppSpec } from "../crds/types.ts";
import { appDeployment, appService } from "./manifests.ts";
import type { Owner } from "./metadata.ts";
import { declareChildren, type ChildManifest, type WorkloadDescription } from "./workload.ts";

export interface AppWorkloadArgs {
  /** The App the children belong to. A plain value: it names and labels the children. */
  readonly owner: Owner;
  /** The App's spec. A plain value: whether a Service exists depends on it. */
  readonly spec: AppSpec;
}

/** An App's children: its Deployment, and its Service when it has a port. The component declares exactly these. */
function appChildren(owner: Owner, spec: AppSpec): ChildManifest[] {
  const service = appService(owner, spec);
  const children: ChildManifest[] = [{ kind: "Deployment", name: owner.name, manifest: appDeployment(owner, spec) }];
  return service ? [...children, { kind: "Service", name: owner.name, manifest: service }] : children;
}

export class AppWorkload extends pulumi.ComponentResource {
  public readonly deployment: k8s.apps.v1.Deployment;
  public readonly service?: k8s.core.v1.Service;

  constructor(name: string, args: AppWorkloadArgs, opts?: pulumi.ComponentResourceOptions) {
    super("appstack:apps:App", name, {}, opts);
    const declared = declareChildren(name, appChildren(args.owner, args.spec), this);
    // appChildren always lists the Deployment.
    this.deployment = declared.Deployment!;
    this.service = declared.Service;
    this.registerOutputs({ deployment: this.deployment.metadata.name, service: this.service?.metadata.name });
  }
}

export const appKind: WorkloadDescription<App> = {
  kind: "App",
  appName: (object) => object.metadata.name,
  children: appChildren,
  component: (owner, spec, opts) => new AppWorkload(owner.name, { owner, spec }, opts),
  replicas: (spec) => spec.replicas,
};
