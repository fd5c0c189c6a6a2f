// The kinds of child an appstack object has, in one table: what the watches, the ownership check
// and its admission policy, the drift check, the RBAC rules and the stack's state all key on. A new
// kind of child is a row here, its manifest and Pulumi resource (components/workload.ts) and its
// typed client calls (operator/kube/child-apis.ts); the compiler names each place a row is missing.

export interface ChildKindInfo {
  readonly apiVersion: string;
  /** The resource's plural, as REST paths, RBAC rules and admission rules name it. */
  readonly plural: string;
  /** The Pulumi type, as a stack's state and a preview's steps name it. */
  readonly resourceType: string;
}

export const childKinds = {
  Deployment: { apiVersion: "apps/v1", plural: "deployments", resourceType: "kubernetes:apps/v1:Deployment" },
  Service: { apiVersion: "v1", plural: "services", resourceType: "kubernetes:core/v1:Service" },
} as const satisfies Record<string, ChildKindInfo>;

export type ChildKind = keyof typeof childKinds;

/** Every kind of child, in the order the components declare them. */
export const childKindNames = Object.keys(childKinds) as ChildKind[];

/** The kind of child whose Pulumi type is `resourceType`; undefined for any other resource. */
export function childKindOf(resourceType: string): ChildKind | undefined {
  return childKindNames.find((kind) => childKinds[kind].resourceType === resourceType);
}

/** The API group (empty for the core group) and version of `kind`, as RBAC and admission rules name them. */
export function groupVersionOf(kind: ChildKind): { readonly group: string; readonly version: string } {
  const [group, version] = childKinds[kind].apiVersion.split("/");
  return version === undefined ? { group: "", version: group! } : { group: group!, version };
}

/** The REST path of the `plural` objects of `apiVersion`, in `namespace` or in all namespaces. */
export function resourcePath(apiVersion: string, plural: string, namespace?: string): string {
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return namespace ? `${base}/namespaces/${namespace}/${plural}` : `${base}/${plural}`;
}

/** The REST path of `kind`'s objects, in `namespace` or in all namespaces. */
export function childPath(kind: ChildKind, namespace?: string): string {
  return resourcePath(childKinds[kind].apiVersion, childKinds[kind].plural, namespace);
}
