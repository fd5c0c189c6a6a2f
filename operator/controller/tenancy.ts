// Each tenant's own identity (docs/security.md#tenant-identities): with the install's setting on
// (APPSTACK_DEFAULT_SERVICE_ACCOUNT), everything that writes an object's children acts as a
// ServiceAccount of the object's namespace, through Kubernetes impersonation, as Flux does: the
// engine's Kubernetes provider (pulumi/identities.ts) and the operator's own writes to them (the
// handover and the repair's apply: children.ts). Reads, the object's status, its finalizer and its
// Events stay the operator's own. What the ServiceAccount may not do, the API server refuses.
import { AuthenticationV1Api } from "@kubernetes/client-node";
import type { Workload } from "../../crds/types.ts";
import { apiClient, briefError, type KubeClients } from "../kube/clients.ts";

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

/**
 * An engine that may not act as its user at all (the operator may not impersonate it) says only
 * that the cluster is unreachable ("unable to load schema information from the API server:
 * unknown"): the API server's refusal is asked for again with one request as that user (a
 * SelfSubjectReview, which any user may make), so that the object names it. The failure's message
 * as it was otherwise.
 */
export async function explainedFailure(clients: KubeClients, object: Workload, tenancy: Tenancy | undefined, message: string): Promise<string> {
  const user = actingUser(object, tenancy);
  if (!user || !/cluster is unreachable/.test(message)) return message;
  try {
    const api = apiClient(clients.config, AuthenticationV1Api, undefined, undefined, user);
    await api.createSelfSubjectReview({ body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } });
    return message;
  } catch (error) {
    if ((error as { code?: number }).code !== 403) return message;
    return `the operator may not act as ${user}: ${briefError(error).replace(/^HTTP 403: /, "")} (the engine: ${message})`;
  }
}
