// What differs between the kinds of appstack object, in one description per kind, kept beside its
// component (components/app.ts, components/memcached.ts): the operator's watch, programs, drift
// check and status read only this. A new kind is its API (crds/) and its component with its
// description, listed in components/kinds.ts.
import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import type { V1Pod } from "@kubernetes/client-node";
import type { KindObject, Workload, WorkloadStatus } from "../crds/types.ts";
import type { KindApi } from "../crds/crd.ts";
import type { Static, TObject, TProperties } from "../crds/schema-kit.ts";
import type { ChildKind } from "../crds/child-kinds.ts";
import type { Owner } from "./metadata.ts";

/** The manifest a component applies, by kind of child (crds/child-kinds.ts). */
export interface ManifestOf {
  readonly Deployment: k8s.types.input.apps.v1.Deployment;
  readonly Service: k8s.types.input.core.v1.Service;
}

/** A child of an appstack object as its component declares it: the kind, its name and the manifest applied. */
export type ChildManifest<K extends ChildKind = ChildKind> = { readonly [C in K]: { readonly kind: C; readonly name: string; readonly manifest: ManifestOf[C] } }[K];

/** The Pulumi resource of each kind of child. */
export interface ResourceOf {
  readonly Deployment: k8s.apps.v1.Deployment;
  readonly Service: k8s.core.v1.Service;
}

type Declaration<K extends ChildKind> = (name: string, manifest: ManifestOf[K], opts: pulumi.CustomResourceOptions) => ResourceOf[K];

const declarations: { readonly [K in ChildKind]: Declaration<K> } = {
  Deployment: (name, manifest, opts) => new k8s.apps.v1.Deployment(name, manifest, opts),
  Service: (name, manifest, opts) => new k8s.core.v1.Service(name, manifest, opts),
};

/** The resources a component declared, by kind of child. */
export type DeclaredChildren = { -readonly [K in ChildKind]?: ResourceOf[K] };

/**
 * Declares `children` (a kind's description lists them: the one list of what it has, which the
 * ownership check reads too) as Pulumi resources named `name` under `parent`, in their order.
 */
export function declareChildren(name: string, children: readonly ChildManifest[], parent: pulumi.Resource): DeclaredChildren {
  const declared: DeclaredChildren = {};
  for (const child of children) declare(declared, name, child, { parent });
  return declared;
}

function declare<K extends ChildKind>(declared: DeclaredChildren, name: string, child: ChildManifest<K>, opts: pulumi.CustomResourceOptions): void {
  const declaration: Declaration<K> = declarations[child.kind];
  declared[child.kind] = declaration(name, child.manifest, opts);
}

/** A component that owns a Deployment (the children's first, and the one status follows). */
export interface WorkloadComponent extends pulumi.ComponentResource {
  readonly deployment: k8s.apps.v1.Deployment;
}

/** The status fields of `W`'s kind beyond those every kind reports (WorkloadStatus). */
export type KindStatus<W extends Workload> = Omit<NonNullable<W["status"]>, keyof WorkloadStatus>;

/** A kind, whole: its API (from which its CRD is derived) and what its objects make. */
export interface WorkloadDescription<W extends Workload> {
  readonly api: KindApi;
  /** The app.kubernetes.io/name of its children (with the instance and the kind, it selects the pods). */
  appName(object: W): string;
  /** Every child and its manifest: exactly what the component applies. */
  children(owner: Owner, spec: W["spec"]): ChildManifest[];
  /** The component of the object's inline program. */
  component(owner: Owner, spec: W["spec"], opts: pulumi.ComponentResourceOptions): WorkloadComponent;
  /** The replicas the spec asks for. */
  replicas(spec: W["spec"]): number;
  /** Status fields only this kind reports, from its pods. */
  statusOf?(pods: readonly V1Pod[]): KindStatus<W>;
}

/** An object of the kind whose own spec fields are `F`, reporting the status fields `S` besides every kind's. */
export type ObjectOf<F extends TProperties, S extends WorkloadStatus = WorkloadStatus> = KindObject<Static<TObject<F>>, S>;

/**
 * A kind, in one definition: its API (kind, plural, its own spec fields as a TypeBox schema, its
 * columns) and what an object of it makes (the component and the children it declares). Every
 * other part of the operator (watches, CRD, policies, the command line) reads the kind from this.
 */
export function defineKind<F extends TProperties, S extends WorkloadStatus = WorkloadStatus>(definition: WorkloadDescription<ObjectOf<F, S>> & { readonly api: KindApi<F> }): WorkloadDescription<ObjectOf<F, S>> {
  return definition;
}
