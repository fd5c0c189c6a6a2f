// A namespace-scoped install lets the operator patch its own RoleBinding in each watched namespace,
// to keep a finalizer on it (operator/controller/binding-guard.ts). RBAC cannot say "finalizers
// only": with patch on the binding, and every rule of the role it grants, the operator could also
// add subjects and so hand its rights in that namespace to others. This policy leaves it the
// finalizers (and labels or annotations) and nothing that grants.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

export const bindingPolicyName = "appstack.dev-operator-binding";

/** Subjects, absent or not, compared as lists (an absent list and an empty one grant the same). */
const sameSubjects = "(has(object.subjects) ? object.subjects : []) == (has(oldObject.subjects) ? oldObject.subjects : [])";

export interface BindingPolicyArgs {
  /** The operator's ServiceAccount, as the API server names its user: system:serviceaccount:NS:NAME. */
  readonly username: pulumi.Input<string>;
  /** The name of the operator's RoleBinding in each watched namespace. */
  readonly binding: string;
  readonly labels: Record<string, string>;
}

/** The policy and its binding, as children of `parent`. */
export function operatorBindingPolicy(name: string, args: BindingPolicyArgs, parent: pulumi.Resource): void {
  const policy = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(`${name}-binding-policy`, {
    metadata: { name: bindingPolicyName, labels: args.labels },
    spec: {
      failurePolicy: "Fail",
      matchConstraints: {
        resourceRules: [{ apiGroups: ["rbac.authorization.k8s.io"], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["rolebindings"], resourceNames: [args.binding] }],
      },
      matchConditions: [{ name: "by-the-operator", expression: pulumi.interpolate`request.userInfo.username == '${args.username}'` }],
      validations: [{ expression: sameSubjects, message: "the appstack operator may change the finalizers of its RoleBinding, not its subjects", reason: "Forbidden" }],
    },
  }, { parent });
  new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(`${name}-binding-policy`, {
    metadata: { name: bindingPolicyName, labels: args.labels },
    spec: { policyName: bindingPolicyName, validationActions: ["Deny"] },
  }, { parent, dependsOn: [policy] });
}
