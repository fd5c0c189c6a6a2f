// The operator's RBAC rules: exactly the resources and verbs it uses, derived from the registered
// kinds (components/kinds.ts): their objects, each API group once, and every kind of child they
// declare. Nothing here names a kind.
import type * as k8s from "@pulumi/kubernetes";
import { groupVersionOf } from "../crds/child-kinds.ts";
import { childKinds, kindGroups } from "./kinds.ts";

/** One rule per API group of the kinds, over the resources `suffix` names (`apps/status` for "/status"). */
function perGroup(suffix: string, verbs: readonly string[]): k8s.types.input.rbac.v1.PolicyRule[] {
  return kindGroups().map(({ group, plurals }) => ({ apiGroups: [group], resources: plurals.map((plural) => `${plural}${suffix}`), verbs: [...verbs] }));
}

/**
 * Exactly the verbs the operator uses, per resource. With `tenantIdentities`, the children are
 * written as each object's ServiceAccount (impersonated), never with the operator's own rights: it
 * reads them, and may impersonate ServiceAccounts (of the watched namespaces, where the rules are
 * bound per namespace).
 */
export function operatorRules(rbacBinding?: string, tenantIdentities = false): k8s.types.input.rbac.v1.PolicyRule[] {
  const observe = ["get", "list", "watch"];
  // A namespace-scoped install: its own RoleBinding only, to add and remove rbacInUseFinalizer (the
  // API server's escalation check lets a change of finalizers alone through).
  const binding = rbacBinding ? [{ apiGroups: ["rbac.authorization.k8s.io"], resources: ["rolebindings"], resourceNames: [rbacBinding], verbs: ["get", "patch"] }] : [];
  return [
    ...binding,
    ...perGroup("", [...observe, "patch"]),
    ...perGroup("/status", ["get", "patch"]),
    // Children carry ownerReferences with blockOwnerDeletion, which needs update on finalizers (of whoever writes them).
    ...(tenantIdentities ? [] : perGroup("/finalizers", ["update"])),
    // Every kind of child of every kind (components/kinds.ts), and no other.
    ...childKinds().map((kind) => ({ apiGroups: [groupVersionOf(kind).group], resources: [kind.plural], verbs: tenantIdentities ? observe : [...observe, "create", "update", "patch", "delete"] })),
    ...(tenantIdentities ? [{ apiGroups: [""], resources: ["serviceaccounts"], verbs: ["impersonate"] }] : []),
    { apiGroups: [""], resources: ["pods"], verbs: observe },
    // Ready waits until the children's Services route to every ready pod (operator/controller/service-endpoints.ts).
    { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: observe },
    { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
    // Only to tell whether an object's namespace is terminating.
    { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
  ];
}
