// Every kind of appstack object, by name: the one list the operator consults. A kind is one
// definition (defineKind, workload.ts); its CRD, its resource name, its kinds of child and its place
// in the policies and the command line are derived from it here.
//
// App and Memcached are registered when this module loads. Another kind (a test's own) is
// registered with `registerKind` before anything reads the kinds: by a module loaded first
// (`node --import`, as a test starts the operator with it) or by a test file's first import. The
// first read closes the registry, and every value derived from it (the CRDs, the union of the kinds
// of child that the watches, the RBAC rules and the ownership policy cover) is computed then, once.
// So the kinds never change under a running operator, and a kind registered too late is an error
// that names it, not a kind that some parts see and others (a watch, a rule, a CRD) do not.
import { createHash } from "node:crypto";
import { apiVersionOf, version, type Workload, type WorkloadKind } from "../crds/types.ts";
import { customResourceDefinition, groupOf, type CustomResourceDefinition } from "../crds/crd.ts";
import { childKindUnion } from "../crds/child-kinds.ts";
import { ownershipPolicy, ownershipPolicyBinding } from "../crds/ownership.ts";
import { appKind } from "./app.ts";
import type { ChildKind } from "./child-kind.ts";
import { memcachedKind } from "./memcached.ts";
import { ownerOf, selectorLabels, type Owner } from "./metadata.ts";
import { declaredChildren, type ChildManifest, type WorkloadDescription } from "./workload.ts";

/** What the registry derives from the kinds, once, at its first read. */
interface Registry {
  readonly definitions: readonly WorkloadDescription<Workload>[];
  readonly byKind: ReadonlyMap<WorkloadKind, WorkloadDescription<Workload>>;
  /** Every name kubectl takes for a kind's objects, lower case: the kind, its plural, its short names, each also with the group (app, apps, asapp, apps.appstack.dev). */
  readonly byName: ReadonlyMap<string, WorkloadKind>;
  readonly childKinds: readonly ChildKind[];
  readonly crds: readonly CustomResourceDefinition[];
  readonly groups: readonly KindGroup[];
}

/** The kinds of one API group, in the order registered: what a rule of RBAC or of an admission policy names. */
export interface KindGroup {
  readonly group: string;
  readonly kinds: readonly WorkloadKind[];
  readonly plurals: readonly string[];
}

const registered: WorkloadDescription<Workload>[] = [];
let closed: Registry | undefined;
/** A kind file's source digest, by the definition it exported (kind-files.ts). */
const sources = new WeakMap<WorkloadDescription<Workload>, string>();

/**
 * Adds `definition` to the kinds. Only before the kinds are first read (see above). A kind's name,
 * plural and short names are unique across all kinds, whatever their groups: stacks, labels,
 * spec.dependsOn and the command line name an object by its kind alone. One another kind has is
 * refused, as is a kind of child declared otherwise by another kind (crds/child-kinds.ts), when
 * the registry closes. `sourceDigest`: of the kind file it was loaded from, if any (kindProgramVersion).
 */
export function registerKind<W extends Workload>(definition: WorkloadDescription<W>, sourceDigest?: string): void {
  const { kind } = definition.api;
  if (closed) throw new Error(`kind ${kind} registered after the kinds were read (${closed.definitions.map((d) => d.api.kind).join(", ")}): register a kind before anything reads them, from a module loaded first`);
  const names = (api: WorkloadDescription<Workload>["api"]) => [api.kind.toLowerCase(), api.plural, ...(api.shortNames ?? [])];
  const taken = registered.find((other) => names(other.api).some((name) => names(definition.api).includes(name)));
  if (taken) {
    throw new Error(`kind ${kind} (${groupOf(definition.api)}): its kind, plural or a short name is ${taken.api.kind}'s (${groupOf(taken.api)}) already; kind names, plurals and short names are unique across all kinds, whatever their API groups`);
  }
  registered.push(definition);
  if (sourceDigest !== undefined) sources.set(definition, sourceDigest);
}

registerKind(appKind);
registerKind(memcachedKind);

function registry(): Registry {
  closed ??= derive(registered);
  return closed;
}

function derive(definitions: readonly WorkloadDescription<Workload>[]): Registry {
  const kinds = definitions.map((definition) => definition.api.kind);
  const byName = new Map(definitions.flatMap((definition) => {
    const { kind, plural, shortNames = [] } = definition.api;
    const group = groupOf(definition.api);
    return [kind.toLowerCase(), plural, ...shortNames].flatMap((name) => [name, `${name}.${group}`]).map((name): [string, WorkloadKind] => [name, kind]);
  }));
  const groups = new Map<string, { kinds: WorkloadKind[]; plurals: string[] }>();
  for (const { api } of definitions) {
    const group = groups.get(groupOf(api)) ?? { kinds: [], plurals: [] };
    group.kinds.push(api.kind);
    group.plurals.push(api.plural);
    groups.set(groupOf(api), group);
  }
  return {
    definitions,
    byKind: new Map(definitions.map((definition) => [definition.api.kind, definition])),
    byName,
    childKinds: childKindUnion(definitions.map((definition) => [definition.api.kind, definition.childKinds] as const)),
    crds: definitions.map((definition) => customResourceDefinition(definition.api, kinds)),
    groups: [...groups].map(([group, { kinds, plurals }]) => ({ group, kinds, plurals })),
  };
}

/** The kinds registered so far, without reading them (which closes the registry): what `appstack new kind` keeps a new kind's names apart from. */
export function registeredKinds(): readonly WorkloadDescription<Workload>[] {
  return [...registered];
}

/** Every kind's name, in the order the kinds are registered. */
export function workloadKinds(): readonly WorkloadKind[] {
  return registry().definitions.map((definition) => definition.api.kind);
}

/** Every kind's resource (plural), in the same order. */
export function kindPlurals(): readonly string[] {
  return registry().definitions.map((definition) => definition.api.plural);
}

export function isWorkloadKind(kind: unknown): kind is WorkloadKind {
  return typeof kind === "string" && registry().byKind.has(kind);
}

/** The definition of `kind`; an unknown kind is a programming error. */
export function kindDefinition(kind: WorkloadKind): WorkloadDescription<Workload> {
  const definition = registry().byKind.get(kind);
  if (!definition) throw new Error(`no kind ${kind}: the kinds are ${workloadKinds().join(", ")}`);
  return definition;
}

/**
 * The version of `kind`'s own program, beside appstack's: a digest of its kind file's source (when
 * it was loaded from one, `sourceDigest` of registerKind) and of its `programVersion`. Undefined
 * for a kind with neither, as App and Memcached, whose version is appstack's alone.
 */
export function kindProgramVersion(kind: WorkloadKind): string | undefined {
  const definition = kindDefinition(kind);
  const source = sources.get(definition);
  if (source === undefined && definition.programVersion === undefined) return undefined;
  return createHash("sha256").update(JSON.stringify([source ?? null, definition.programVersion ?? null])).digest("hex").slice(0, 12);
}

/** The kind a person names as kubectl takes it (`app`, `apps`, `asapp`, `apps.appstack.dev`, `app.appstack.dev`, any case; another kind's with its own group); undefined for none. */
export function kindNamed(name: string): WorkloadKind | undefined {
  return registry().byName.get(name.toLowerCase());
}

/** The resource (plural) of `kind`: apps. */
export function pluralOf(kind: WorkloadKind): string {
  return kindDefinition(kind).api.plural;
}

/** The API group of `kind`'s objects: appstack.dev unless its definition names another. */
export function groupOfKind(kind: WorkloadKind): string {
  return groupOf(kindDefinition(kind).api);
}

/** The apiVersion of `kind`'s objects: appstack.dev/v1alpha1. */
export function apiVersionOfKind(kind: WorkloadKind): string {
  return apiVersionOf(groupOfKind(kind));
}

/** Where `kind`'s objects are, as the custom objects client takes it: `{ group, version, plural }`. */
export function resourceOf(kind: WorkloadKind): { readonly group: string; readonly version: string; readonly plural: string } {
  return { group: groupOfKind(kind), version, plural: pluralOf(kind) };
}

/** The kinds by API group, each group once, in the order first registered: what RBAC and the admission policies name. */
export function kindGroups(): readonly KindGroup[] {
  return registry().groups;
}

/** Each kind's CRD, derived from its definition. */
export function customResourceDefinitions(): readonly CustomResourceDefinition[] {
  return registry().crds;
}

/** Every kind of child of every kind, each once, in the order first declared: what the watches, the RBAC rules and the ownership policy cover. */
export function childKinds(): readonly ChildKind[] {
  return registry().childKinds;
}

/** The kind of child named `kind` (`Deployment`); a name no kind declares is a programming error. */
export function childKindNamed(kind: string): ChildKind {
  const found = registry().childKinds.find((candidate) => candidate.kind === kind);
  if (!found) throw new Error(`no kind declares the child kind ${kind}: the child kinds are ${registry().childKinds.map((k) => k.kind).join(", ")}`);
  return found;
}

/** The kind of child whose Pulumi type is `resourceType`; undefined for any other resource (the provider, a component). */
export function childKindOfType(resourceType: string): ChildKind | undefined {
  return registry().childKinds.find((kind) => kind.resourceType === resourceType);
}

/** What besides the kinds' CRDs makes up appstack's API in a cluster: the ownership policy over every kind of child, and its binding. */
export function apiPolicies(): readonly [ReturnType<typeof ownershipPolicy>, typeof ownershipPolicyBinding] {
  return [ownershipPolicy(childKinds(), kindGroups()), ownershipPolicyBinding];
}

/** The description of `object`'s kind. */
export function describe<W extends Workload>(object: W): WorkloadDescription<W> {
  return kindDefinition(object.kind) as unknown as WorkloadDescription<W>;
}

/** The object its children are owned by: their ownerReference names its kind's apiVersion. */
export function kindOwner(object: Workload): Owner {
  return { ...ownerOf(object), apiVersion: apiVersionOfKind(object.kind) };
}

/** The labels that select exactly the pods of `object`. */
export function podSelector(object: Workload): Record<string, string> {
  return selectorLabels(ownerOf(object), describe(object).appName(object));
}

/**
 * Every child `object` has, with the manifests its component applies. A child of a kind its
 * definition does not declare is refused here, before anything is applied, naming the kind.
 */
export function childManifests(object: Workload): ChildManifest[] {
  return declaredChildren(describe(object), kindOwner(object), object.spec);
}
