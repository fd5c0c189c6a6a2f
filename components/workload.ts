// What differs between the kinds of appstack object, in one description per kind, kept beside its
// component (components/app.ts, components/memcached.ts): the operator's watch, programs, drift
// check and status read only this. A new kind is its API (crds/) and its component with its
// description, listed in components/kinds.ts.
import type * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import type { V1Pod } from "@kubernetes/client-node";
import type { MemcachedStatus, Workload } from "../crds/types.ts";
import type { Owner } from "./metadata.ts";

/** A child of an appstack object as its component declares it: the kind and the manifest applied. */
export interface ChildManifest {
  readonly kind: "Deployment" | "Service";
  readonly name: string;
  readonly manifest: k8s.types.input.apps.v1.Deployment | k8s.types.input.core.v1.Service;
}

/** The Pulumi type of each kind of child, as a stack's state and a preview's steps name it. */
export const childResourceTypes = { Deployment: "kubernetes:apps/v1:Deployment", Service: "kubernetes:core/v1:Service" } as const satisfies Record<ChildManifest["kind"], string>;

/** A component that owns a Deployment (the children's first, and the one status follows). */
export interface WorkloadComponent extends pulumi.ComponentResource {
  readonly deployment: k8s.apps.v1.Deployment;
}

export interface WorkloadDescription<W extends Workload> {
  readonly kind: W["kind"];
  /** The app.kubernetes.io/name of its children (with the instance and the kind, it selects the pods). */
  appName(object: W): string;
  /** Every child and its manifest: exactly what the component applies. */
  children(owner: Owner, spec: W["spec"]): ChildManifest[];
  /** The component of the object's inline program. */
  component(owner: Owner, spec: W["spec"], opts: pulumi.ComponentResourceOptions): WorkloadComponent;
  /** The replicas the spec asks for. */
  replicas(spec: W["spec"]): number;
  /** Status fields only this kind reports, from its pods. */
  statusOf?(pods: readonly V1Pod[]): Partial<MemcachedStatus>;
}
