// Namespaces an install across the cluster leaves alone (APPSTACK_EXCLUDED_NAMESPACES: kube-system
// and the operator's own by default). With tenant identities the operator may impersonate every
// ServiceAccount of the cluster (docs/security.md), and RBAC cannot grant a cluster-wide right but
// for some namespaces: so the operator itself never acts in these. An object there is Stalled with
// the reason, gets no finalizer and no stack, and nothing is written as any of the namespace's
// ServiceAccounts; one applied before its namespace was excluded is still destroyed when deleted.
import type { Workload } from "../../crds/types.ts";
import type { Phase } from "./conditions.ts";

export const namespaceExcludedReason = "NamespaceExcluded";

/** The phase of `object` when its namespace is excluded, else undefined. */
export function excludedPhase(object: Workload, excluded: ReadonlySet<string> | undefined): Extract<Phase, { kind: "stalled" }> | undefined {
  const { namespace } = object.metadata;
  if (!excluded?.has(namespace)) return undefined;
  return {
    kind: "stalled",
    reason: namespaceExcludedReason,
    message: `namespace ${namespace} is excluded from this operator (APPSTACK_EXCLUDED_NAMESPACES): nothing is applied here, and none of its ServiceAccounts is acted as; create the ${object.kind} in another namespace`,
  };
}
