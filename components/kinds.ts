// Every kind of appstack object, by name: the one list the operator consults.
import type { Workload, WorkloadKind } from "../crds/types.ts";
import { appKind } from "./app.ts";
import { memcachedKind } from "./memcached.ts";
import { ownerOf, selectorLabels } from "./metadata.ts";
import type { ChildManifest, WorkloadDescription } from "./workload.ts";

const kinds: { readonly [K in WorkloadKind]: WorkloadDescription<Extract<Workload, { kind: K }>> } = { App: appKind, Memcached: memcachedKind };

export const workloadKinds = Object.keys(kinds) as WorkloadKind[];

export function isWorkloadKind(kind: unknown): kind is WorkloadKind {
  return typeof kind === "string" && Object.hasOwn(kinds, kind);
}

/** The description of `object`'s kind. */
export function describe<W extends Workload>(object: W): WorkloadDescription<W> {
  return kinds[object.kind] as unknown as WorkloadDescription<W>;
}

/** The labels that select exactly the pods of `object`. */
export function podSelector(object: Workload): Record<string, string> {
  return selectorLabels(ownerOf(object), describe(object).appName(object));
}

/** Every child `object` has, with the manifests its component applies. */
export function childManifests(object: Workload): ChildManifest[] {
  return describe(object).children(ownerOf(object), object.spec);
}
