// A kind of child as a kind's definition declares it (components/workload.ts): what the operator
// needs to watch, read, own and repair it (crds/child-kinds.ts), and how a component declares it
// as a Pulumi resource. Deployment, Service and NetworkPolicy, which App and Memcached make, are
// declared here; any other Kubernetes kind, built in or another operator's, is one `childKind(...)`.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { kubernetesResourceType, type ChildKindInfo } from "../crds/child-kinds.ts";

/** Declares one child of this kind as a Pulumi resource, its manifest as the resource's inputs. */
export type DeclareChild<M, R extends pulumi.CustomResource> = (name: string, manifest: M, opts: pulumi.CustomResourceOptions) => R;

/** A kind of child: named `K`, applied from manifests `M` as Pulumi resources `R`. */
export interface ChildKind<K extends string = string, M = object, R extends pulumi.CustomResource = pulumi.CustomResource> extends ChildKindInfo {
  readonly kind: K;
  // A method, so that a kind of child of any manifest type is a ChildKind (its parameter is bivariant).
  /** Declares one child of this kind as a Pulumi resource, its manifest as the resource's inputs. */
  declare(name: string, manifest: M, opts: pulumi.CustomResourceOptions): R;
}

/** What a kind of child is, beside its Pulumi resource: `resourceType` defaults to the Kubernetes provider's type of it. */
export type ChildKindFields<K extends string> = Omit<ChildKindInfo, "kind" | "resourceType"> & { readonly kind: K; readonly resourceType?: string };

/** A Kubernetes object of any kind, as the provider's resource of its type (pulumi.CustomResource is abstract). */
class KubernetesChild extends pulumi.CustomResource {
  constructor(resourceType: string, name: string, inputs: pulumi.Inputs, opts: pulumi.CustomResourceOptions) {
    super(resourceType, name, inputs, opts);
  }
}

/**
 * A kind of Kubernetes child. Without `declare`, a child is the provider's resource of
 * `resourceType` with the manifest, its apiVersion and kind added, as inputs: what the provider's
 * typed class of a built-in kind sends, and what it takes for a custom resource.
 */
export function childKind<const K extends string, M extends object = object, R extends pulumi.CustomResource = pulumi.CustomResource>(fields: ChildKindFields<K>, declare?: DeclareChild<M, R>): ChildKind<K, M, R> {
  const resourceType = fields.resourceType ?? kubernetesResourceType(fields.apiVersion, fields.kind);
  const generic: DeclareChild<M, pulumi.CustomResource> = (name, manifest, opts) => new KubernetesChild(resourceType, name, { ...manifest, apiVersion: fields.apiVersion, kind: fields.kind }, opts);
  return { ...fields, resourceType, declare: (declare ?? generic) as DeclareChild<M, R> };
}

/** Deployments, declared through the provider's typed class (its type and aliases, as stacks made before recorded them). */
export const deploymentChild = childKind({ apiVersion: "apps/v1", kind: "Deployment", plural: "deployments", namespaced: true }, (name, manifest: k8s.types.input.apps.v1.Deployment, opts) => new k8s.apps.v1.Deployment(name, manifest, opts));

/** Services, declared through the provider's typed class. */
export const serviceChild = childKind({ apiVersion: "v1", kind: "Service", plural: "services", namespaced: true }, (name, manifest: k8s.types.input.core.v1.Service, opts) => new k8s.core.v1.Service(name, manifest, opts));

/** NetworkPolicies (an object's spec.networkPolicy), declared through the provider's typed class. */
export const networkPolicyChild = childKind({ apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", plural: "networkpolicies", namespaced: true }, (name, manifest: k8s.types.input.networking.v1.NetworkPolicy, opts) => new k8s.networking.v1.NetworkPolicy(name, manifest, opts));
