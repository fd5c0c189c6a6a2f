// Labels and ownership that every child of an appstack object carries. Selectors are always
// explicit: two objects with the same image in one namespace must never select each other's pods.
import { apiVersionOf, defaultGroup, type Workload, type WorkloadKind } from "../crds/types.ts";

export const managedByLabel = "app.kubernetes.io/managed-by";
export const instanceLabel = "app.kubernetes.io/instance";
export const nameLabel = "app.kubernetes.io/name";
export const kindLabel = "appstack.dev/kind";
export const managedBy = "appstack";
/** The server-side apply field manager of every child, set through the provider's annotation. */
export const fieldManager = "appstack";
const fieldManagerAnnotation = "pulumi.com/patchFieldManager";

/** The provider's annotations every child carries (childMetadata), which an orphaned child loses. */
export const pulumiAnnotations = {
  "pulumi.com/skipAwait": "true",
  "pulumi.com/patchForce": "true",
  [fieldManagerAnnotation]: fieldManager,
} as const;

/** The object a stack belongs to: enough to label, select and own its children. */
export interface Owner {
  /** Its apiVersion, which the children's ownerReference names; absent: appstack.dev/v1alpha1 (App, Memcached). The operator always sets it (components/kinds.ts, kindOwner). */
  readonly apiVersion?: string;
  readonly kind: WorkloadKind;
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
}

export function ownerOf(object: Workload): Owner {
  return { kind: object.kind, name: object.metadata.name, namespace: object.metadata.namespace, uid: object.metadata.uid };
}

/** Identifies the pods of exactly one object (kind, name; the namespace scopes the selector). */
export function selectorLabels(owner: Owner, appName: string): Record<string, string> {
  return { [nameLabel]: appName, [instanceLabel]: owner.name, [kindLabel]: owner.kind };
}

export function childLabels(owner: Owner, appName: string): Record<string, string> {
  return { ...selectorLabels(owner, appName), [managedByLabel]: managedBy };
}

export function childMetadata(owner: Owner, appName: string) {
  return {
    name: owner.name,
    namespace: owner.namespace,
    labels: childLabels(owner, appName),
    // Rollout progress is watched by the operator, not awaited inside `pulumi up`: one slow
    // rollout must not hold a worker for the engine's ten-minute await timeout.
    // Server-side apply with force, as Kubernetes advises for controllers: an out-of-band edit of
    // a field appstack owns is drift to undo, not a conflict to report.
    // A named field manager (the provider's default is random per resource): managedFields say
    // which fields appstack owns, and an imperative edit of them can be handed back to it.
    annotations: { ...pulumiAnnotations },
    // A backstop: if the finalizer is ever removed by hand, the garbage collector still cleans up.
    ownerReferences: [{ apiVersion: owner.apiVersion ?? apiVersionOf(defaultGroup), kind: owner.kind, name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true }],
  };
}

export function selectorString(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([key, value]) => `${key}=${value}`)
    .join(",");
}
