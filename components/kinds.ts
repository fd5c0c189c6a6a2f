// Every kind of appstack object, by name: the one list the operator consults. A kind is one
// definition (defineKind, workload.ts); its CRD, its resource name and its place in the policies
// and the command line are derived from it here.
import { group, type Workload, type WorkloadKind } from "../crds/types.ts";
import { customResourceDefinition, type CustomResourceDefinition } from "../crds/crd.ts";
import { appKind } from "./app.ts";
import { memcachedKind } from "./memcached.ts";
import { ownerOf, selectorLabels } from "./metadata.ts";
import type { ChildManifest, WorkloadDescription } from "./workload.ts";

const definitions: readonly WorkloadDescription<Workload>[] = [appKind, memcachedKind] as readonly WorkloadDescription<never>[];

const byKind = new Map(definitions.map((definition) => [definition.api.kind, definition]));

/** Every kind's name, in the order the kinds are listed. */
export const workloadKinds: readonly WorkloadKind[] = definitions.map((definition) => definition.api.kind);

/** Every kind's resource (plural), in the same order. */
export const kindPlurals: readonly string[] = definitions.map((definition) => definition.api.plural);

export function isWorkloadKind(kind: unknown): kind is WorkloadKind {
  return typeof kind === "string" && byKind.has(kind);
}

/** The definition of `kind`; an unknown kind is a programming error. */
export function kindDefinition(kind: WorkloadKind): WorkloadDescription<Workload> {
  const definition = byKind.get(kind);
  if (!definition) throw new Error(`no kind ${kind}: the kinds are ${workloadKinds.join(", ")}`);
  return definition;
}

/** Every name kubectl takes for a kind's objects, lower case: the kind, its plural, its short names, each also with the group (app, apps, asapp, apps.appstack.dev). */
const byName = new Map(definitions.flatMap((definition) => {
  const { kind, plural, shortNames = [] } = definition.api;
  return [kind.toLowerCase(), plural, ...shortNames].flatMap((name) => [name, `${name}.${group}`]).map((name): [string, WorkloadKind] => [name, kind]);
}));

/** The kind a person names as kubectl takes it (`app`, `apps`, `asapp`, `apps.appstack.dev`, any case); undefined for none. */
export function kindNamed(name: string): WorkloadKind | undefined {
  return byName.get(name.toLowerCase());
}

/** The resource (plural) of `kind`: apps. */
export function pluralOf(kind: WorkloadKind): string {
  return kindDefinition(kind).api.plural;
}

/** Each kind's CRD, derived from its definition. */
export const customResourceDefinitions: readonly CustomResourceDefinition[] = definitions.map((definition) => customResourceDefinition(definition.api, workloadKinds));

/** The description of `object`'s kind. */
export function describe<W extends Workload>(object: W): WorkloadDescription<W> {
  return kindDefinition(object.kind) as unknown as WorkloadDescription<W>;
}

/** The labels that select exactly the pods of `object`. */
export function podSelector(object: Workload): Record<string, string> {
  return selectorLabels(ownerOf(object), describe(object).appName(object));
}

/** Every child `object` has, with the manifests its component applies. */
export function childManifests(object: Workload): ChildManifest[] {
  return describe(object).children(ownerOf(object), object.spec);
}
