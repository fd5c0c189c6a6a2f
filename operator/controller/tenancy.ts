// Each tenant's own identity (docs/security.md#tenant-identities): with the install's setting on
// (APPSTACK_DEFAULT_SERVICE_ACCOUNT), everything that writes an object's children acts as a
// ServiceAccount of the object's namespace, through Kubernetes impersonation, as Flux does: the
// engine's Kubernetes provider (pulumi/identities.ts) and the operator's own writes to them (the
// handover and the repair's apply: children.ts). Reads, the object's status, its finalizer and its
// Events stay the operator's own. What the ServiceAccount may not do, the API server refuses.
import type { Workload } from "../../crds/types.ts";

/** The install's setting: tenant identities on, and the ServiceAccount an object that names none acts as. */
export interface Tenancy {
  readonly defaultServiceAccount: string;
}

/** The user Kubernetes authenticates a ServiceAccount's token as, and impersonation names. */
export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/**
 * The user the object's children are written as; undefined when tenant identities are off (the
 * operator's own rights). Always of the object's own namespace: spec.serviceAccountName is a plain
 * name (the CRD's pattern refuses `ns/sa` and `system:serviceaccount:...`).
 */
export function actingUser(object: Workload, tenancy: Tenancy | undefined): string | undefined {
  if (!tenancy) return undefined;
  return serviceAccountUser(object.metadata.namespace, object.spec.serviceAccountName ?? tenancy.defaultServiceAccount);
}

/** Whether a failure's message is the API server refusing a request (RBAC): HTTP 403, "... is forbidden: User ... cannot ...". */
export function isForbidden(message: string): boolean {
  return /\bis forbidden: User "[^"]*" cannot /.test(message) || /\bHTTP 403\b/.test(message);
}
