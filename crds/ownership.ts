// appstack never takes over an object it did not create. The operator checks before every update,
// but between its check and the engine's write someone may create an object of the same name, and
// the pinned Kubernetes provider turns a create of an existing object into an update ("upsert",
// server-side apply). This policy closes that window in the API server itself: an update may not
// make an existing object of any kind of child (every kind's declared kinds, components/kinds.ts)
// controlled by an appstack object it was not created for.
import { groupVersionOf, type ChildKindInfo } from "./child-kinds.ts";
import { defaultGroup } from "./types.ts";

export const ownershipPolicyName = "appstack.dev-ownership";

/** The kinds of appstack object of one API group. */
export interface GroupKinds {
  readonly group: string;
  readonly kinds: readonly string[];
}

/**
 * Whether the ownerReference `r` names an appstack object: any kind of appstack.dev (the operator's
 * own group), and in another group only the kinds registered in it (a group an author chose may
 * hold other operators' kinds too).
 */
function namesAppstackObject(owners: readonly GroupKinds[]): string {
  const terms = owners.map(({ group, kinds }) =>
    group === defaultGroup ? `r.apiVersion.startsWith('${group}/')` : `(r.apiVersion.startsWith('${group}/') && r.kind in ${JSON.stringify(kinds)})`);
  return terms.length === 1 ? terms[0]! : `(${terms.join(" || ")})`;
}

/** A reference to an appstack object that the object before the update does not carry too. */
const takesOver = (owners: readonly GroupKinds[]) =>
  `has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, ${namesAppstackObject(owners)} && ` +
  "!(has(oldObject.metadata.ownerReferences) && oldObject.metadata.ownerReferences.exists(o, o.uid == r.uid)))";

/** The policy over updates of `childKinds`' objects, owned by the kinds of `owners` (App and Memcached: appstack.dev). */
export function ownershipPolicy(childKinds: readonly ChildKindInfo[], owners: readonly GroupKinds[] = [{ group: defaultGroup, kinds: [] }]) {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicy",
    metadata: { name: ownershipPolicyName, labels: { "app.kubernetes.io/part-of": "appstack" } },
    spec: {
      failurePolicy: "Fail",
      matchConstraints: {
        resourceRules: childKinds.map((kind) => {
          const { group, version } = groupVersionOf(kind);
          return { apiGroups: [group], apiVersions: [version], operations: ["UPDATE"], resources: [kind.plural] };
        }),
      },
      validations: [
        {
          expression: `!(${takesOver(owners)})`,
          message: "appstack does not take over an existing object: it was not created for the appstack object that now claims it (ResourceConflict)",
          reason: "Forbidden",
        },
      ],
    },
  } as const;
}

export const ownershipPolicyBinding = {
  apiVersion: "admissionregistration.k8s.io/v1",
  kind: "ValidatingAdmissionPolicyBinding",
  metadata: { name: ownershipPolicyName, labels: { "app.kubernetes.io/part-of": "appstack" } },
  spec: { policyName: ownershipPolicyName, validationActions: ["Deny"] },
} as const;
