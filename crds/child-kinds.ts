// The kinds of child an appstack object may have, as each kind's definition declares them
// (components/workload.ts): what the watches, the ownership check and its admission policy, the
// drift check, the RBAC rules and the stack's state key on. Nothing here names a kind of child:
// the registry (components/kinds.ts) takes the union of every registered kind's declarations.

/** A kind of Kubernetes object a kind's objects make, as its definition declares it. */
export interface ChildKindInfo {
  /** `apps/v1`, or `v1` for the core group. */
  readonly apiVersion: string;
  /** `Deployment`: how drift messages, Events and the stack's state name the child. */
  readonly kind: string;
  /** The resource's plural, as REST paths, RBAC rules and admission rules name it. */
  readonly plural: string;
  /**
   * Whether its objects live in a namespace. A child lives in its object's namespace (an
   * ownerReference of a namespaced object cannot name a cluster-scoped one), so the registry
   * refuses a cluster-scoped kind of child.
   */
  readonly namespaced: boolean;
  /** The Pulumi type, as a stack's state and a preview's steps name it: `kubernetes:apps/v1:Deployment`. */
  readonly resourceType: string;
}

/** The API group (empty for the core group) and version of `apiVersion`, as RBAC and admission rules name them. */
export function splitApiVersion(apiVersion: string): { readonly group: string; readonly version: string } {
  const [group, version] = apiVersion.split("/");
  return version === undefined ? { group: "", version: group! } : { group: group!, version };
}

/** The API group and version of a kind of child. */
export function groupVersionOf(kind: ChildKindInfo): { readonly group: string; readonly version: string } {
  return splitApiVersion(kind.apiVersion);
}

/**
 * The Pulumi type the Kubernetes provider gives `kind` of `apiVersion`: `kubernetes:core/v1:Service`
 * for the core group, `kubernetes:<group>/<version>:<Kind>` for every other, built in or custom
 * (`kubernetes:apps/v1:Deployment`, `kubernetes:cert-manager.io/v1:Certificate`).
 */
export function kubernetesResourceType(apiVersion: string, kind: string): string {
  const { group, version } = splitApiVersion(apiVersion);
  return `kubernetes:${group || "core"}/${version}:${kind}`;
}

/** The REST path of the `plural` objects of `apiVersion`, in `namespace` or in all namespaces. */
export function resourcePath(apiVersion: string, plural: string, namespace?: string): string {
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return namespace ? `${base}/namespaces/${namespace}/${plural}` : `${base}/${plural}`;
}

/** The REST path of `kind`'s objects, in `namespace` or in all namespaces. */
export function childPath(kind: ChildKindInfo, namespace?: string): string {
  return resourcePath(kind.apiVersion, kind.plural, namespace);
}

/** What makes two declarations of a kind of child the same one. */
function sameKind(a: ChildKindInfo, b: ChildKindInfo): boolean {
  return a.apiVersion === b.apiVersion && a.plural === b.plural && a.namespaced === b.namespaced && a.resourceType === b.resourceType;
}

/**
 * The union of the kinds of child `declared` (per kind of object, `[its kind, its child kinds]`), in
 * the order first declared. A kind of child is named by its `kind` alone, as drift messages, Events
 * and `RecordedChild` name it (`Deployment web`), so two declarations of one name must be the same
 * kind: one of `apps/v1` and one of `example.com/v1`, or a cluster-scoped one, is refused here,
 * naming both kinds of object, before anything watches or applies.
 */
export function childKindUnion<T extends ChildKindInfo>(declared: readonly (readonly [owner: string, kinds: readonly T[]])[]): T[] {
  const union = new Map<string, { readonly kind: T; readonly owner: string }>();
  for (const [owner, kinds] of declared) {
    for (const kind of kinds) {
      if (!kind.namespaced) throw new Error(`${owner} declares the cluster-scoped child kind ${kind.kind} (${kind.apiVersion}): a child lives in its object's namespace`);
      const first = union.get(kind.kind);
      if (!first) union.set(kind.kind, { kind, owner });
      else if (!sameKind(first.kind, kind)) {
        throw new Error(`the child kind ${kind.kind} is declared as ${describeKind(first.kind)} by ${first.owner} and as ${describeKind(kind)} by ${owner}: a child kind's name names one kind`);
      }
    }
  }
  return [...union.values()].map(({ kind }) => kind);
}

function describeKind(kind: ChildKindInfo): string {
  return `${kind.apiVersion} ${kind.plural} (${kind.resourceType})`;
}
