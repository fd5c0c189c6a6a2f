// appstack never takes over an object it did not create. The operator checks before every update,
// but between its check and the engine's write someone may create an object of the same name, and
// the pinned Kubernetes provider turns a create of an existing object into an update ("upsert",
// server-side apply). This policy closes that window in the API server itself: an update may not
// make an existing object of any kind of child (every kind's declared kinds, components/kinds.ts)
// controlled by an appstack object it was not created for.
import { groupVersionOf, type ChildKindInfo } from "./child-kinds.ts";

export const ownershipPolicyName = "appstack.dev-ownership";

/** A reference to an appstack object that the object before the update does not carry too. */
const takesOver =
  "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, r.apiVersion.startsWith('appstack.dev/') && " +
  "!(has(oldObject.metadata.ownerReferences) && oldObject.metadata.ownerReferences.exists(o, o.uid == r.uid)))";

/** The policy over updates of `childKinds`' objects. */
export function ownershipPolicy(childKinds: readonly ChildKindInfo[]) {
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
          expression: `!(${takesOver})`,
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
