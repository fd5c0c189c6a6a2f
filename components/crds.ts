// The appstack CRDs as Pulumi resources, from the same definitions as crds/yaml/.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { customResourceDefinitions } from "./kinds.ts";

export interface AppstackCrdsArgs {
  /** Extra labels for the CRDs, beside app.kubernetes.io/part-of. */
  readonly labels?: Record<string, string>;
}

export class AppstackCrds extends pulumi.ComponentResource {
  /** Names of the CRDs, once the API server has them. */
  public readonly names: pulumi.Output<string>[];

  constructor(name: string, args: AppstackCrdsArgs = {}, opts?: pulumi.ComponentResourceOptions) {
    super("appstack:install:Crds", name, {}, opts);
    this.names = customResourceDefinitions().map((crd) => {
      // The schemas are plain JSON (one source for the YAML and for Pulumi), not the SDK's input types.
      const definition = { ...crd, metadata: { ...crd.metadata, labels: { ...crd.metadata.labels, ...args.labels } } } as unknown as k8s.apiextensions.v1.CustomResourceDefinitionArgs;
      return new k8s.apiextensions.v1.CustomResourceDefinition(`${name}-${crd.metadata.name}`, definition, { parent: this }).metadata.name;
    });
    this.registerOutputs({ names: this.names });
  }
}
