// What differs between the kinds of appstack object, in one description per kind, kept beside its
// component (components/app.ts, components/memcached.ts): the operator's watch, programs, drift
// check and status read only this. A new kind is its definition, registered with the registry
// (components/kinds.ts), which derives its CRD, the watches and RBAC of its kinds of child and
// their place in the ownership policy.
import type * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import type { V1Pod } from "@kubernetes/client-node";
import type { KindObject, Workload, WorkloadStatus } from "../crds/types.ts";
import type { KindApi } from "../crds/crd.ts";
import type { Static, TObject, TProperties } from "../crds/schema-kit.ts";
import type { ChildKind } from "./child-kind.ts";
import type { Owner } from "./metadata.ts";

/**
 * A child of an appstack object as its component declares it: the kind (one of the kinds of child
 * its definition declares), its name and the manifest applied.
 */
export interface ChildManifest {
  readonly kind: string;
  readonly name: string;
  readonly manifest: object;
}

/** The resources a component declared, by kind of child: `declared.Deployment`. */
export type DeclaredChildren<Ks extends readonly ChildKind[]> = { -readonly [C in Ks[number] as C["kind"]]?: ReturnType<C["declare"]> };

/** A child of a kind its object's definition does not declare: the operator stalls the object with the reason of the same name. */
export class UndeclaredChildKind extends Error {
  override readonly name = "UndeclaredChildKind";
  /** The kind to declare. */
  readonly kind: string;

  constructor(owner: string, kind: string, declared: readonly string[]) {
    super(`${owner} makes a child of kind ${kind}, which its definition does not declare: add it to its childKinds (declared: ${declared.join(", ") || "none"})`);
    this.kind = kind;
  }
}

/** The kind of child named `name` among `kinds`; a child of a kind its definition does not declare is refused, naming the kind to declare. */
export function declaredKind<Ks extends readonly ChildKind[]>(kinds: Ks, owner: string, name: string): Ks[number] {
  const kind = kinds.find((candidate) => candidate.kind === name);
  if (!kind) throw new UndeclaredChildKind(owner, name, kinds.map((k) => k.kind));
  return kind;
}

/**
 * `definition`'s children for `owner` with `spec`: what its component applies. A child of a kind
 * the definition does not declare is refused here, before anything is applied, naming the kind.
 */
export function declaredChildren<W extends Workload>(definition: WorkloadDescription<W>, owner: Owner, spec: W["spec"]): ChildManifest[] {
  const children = definition.children(owner, spec);
  for (const child of children) declaredKind(definition.childKinds, `${owner.kind} ${owner.namespace}/${owner.name}`, child.kind);
  return children;
}

/**
 * Declares `children` (a kind's description lists them: the one list of what it has, which the
 * ownership check reads too) as Pulumi resources named `name` under `parent`, in their order, each
 * as its kind among `kinds` (the definition's childKinds) declares it.
 */
export function declareChildren<const Ks extends readonly ChildKind[]>(name: string, children: readonly ChildManifest[], kinds: Ks, parent: pulumi.Resource): DeclaredChildren<Ks> {
  const declared: Record<string, pulumi.CustomResource> = {};
  for (const child of children) declared[child.kind] = declaredKind(kinds, name, child.kind).declare(name, child.manifest, { parent });
  return declared as DeclaredChildren<Ks>;
}

/** A kind's component: the Deployment it owns, if its kind makes one (the child whose rollout status follows). */
export interface WorkloadComponent extends pulumi.ComponentResource {
  readonly deployment?: k8s.apps.v1.Deployment;
}

/** The status fields of `W`'s kind beyond those every kind reports (WorkloadStatus). */
export type KindStatus<W extends Workload> = Omit<NonNullable<W["status"]>, keyof WorkloadStatus>;

/** A kind, whole: its API (from which its CRD is derived) and what its objects make. */
export interface WorkloadDescription<W extends Workload> {
  readonly api: KindApi;
  /** The app.kubernetes.io/name of its children (with the instance and the kind, it selects the pods). */
  appName(object: W): string;
  /**
   * The kinds of child its objects make: the watches, the RBAC rules, the ownership policy and the
   * drift check cover exactly the union of every registered kind's (components/kinds.ts).
   */
  readonly childKinds: readonly ChildKind[];
  /** Every child and its manifest: exactly what the component applies, each of a kind in `childKinds`. */
  children(owner: Owner, spec: W["spec"]): ChildManifest[];
  /** The component of the object's inline program. */
  component(owner: Owner, spec: W["spec"], opts: pulumi.ComponentResourceOptions): WorkloadComponent;
  /** The replicas the spec asks for (of its Deployment; 0 for a kind without one). */
  replicas(spec: W["spec"]): number;
  /** Status fields only this kind reports, from its pods. */
  statusOf?(pods: readonly V1Pod[]): KindStatus<W>;
  /**
   * Bumped by the kind's author when its children change for an unchanged spec through something
   * outside its kind file (a helper it imports), so that every object of the kind is applied anew.
   * A change to the kind file itself needs none: the operator compares the file's source.
   */
  readonly programVersion?: string;
}

/** An object of the kind whose own spec fields are `F`, reporting the status fields `S` besides every kind's. */
export type ObjectOf<F extends TProperties, S extends WorkloadStatus = WorkloadStatus> = KindObject<Static<TObject<F>>, S>;

/**
 * Whether `group` may be a kind's API group: the API server's own rule for a CRD's group (a DNS
 * subdomain with at least one dot), said before the CRD's apply, naming the kind.
 */
export function isApiGroup(group: string): boolean {
  return group.length <= 253 && group.includes(".") && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(group);
}

/** What is wrong with a group that is not one. */
export const notApiGroup = "is not an API group: a DNS subdomain with at least one dot (batch.example.com)";

/**
 * A kind, in one definition: its API (kind, plural, its own spec fields as a TypeBox schema, its
 * columns) and what an object of it makes (the component and the children it declares). Every
 * other part of the operator (watches, CRD, policies, the command line) reads the kind from this.
 */
export function defineKind<F extends TProperties, S extends WorkloadStatus = WorkloadStatus>(definition: WorkloadDescription<ObjectOf<F, S>> & { readonly api: KindApi<F> }): WorkloadDescription<ObjectOf<F, S>> {
  const { group } = definition.api;
  if (group !== undefined && !isApiGroup(group)) throw new Error(`${definition.api.kind}: api.group ${JSON.stringify(group)} ${notApiGroup}`);
  const names = definition.childKinds.map((kind) => kind.kind);
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice) throw new Error(`${definition.api.kind} declares the child kind ${twice} twice`);
  return Object.defineProperty(definition, definedKind, { value: true });
}

/**
 * The mark defineKind puts on what it returns: how a kind file's default export is told from
 * anything else. A registered symbol, not a set of this module's, so that it holds should a loader
 * ever give a kind file a copy of this module of its own.
 */
const definedKind = Symbol.for("appstack.dev/kind");

/** Whether `value` is a kind's definition, as defineKind returned it. */
export function isDefinedKind(value: unknown): value is WorkloadDescription<Workload> {
  return typeof value === "object" && value !== null && definedKind in value;
}
