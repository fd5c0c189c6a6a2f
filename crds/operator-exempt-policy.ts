// The shape of the admission policies that guard what only the operator may write on the objects
// themselves (shard-labels.ts, approval.ts): one ValidatingAdmissionPolicy on creates and updates
// of every kind (a rule per API group), skipped for the operator's own users, with its binding. Each policy brings its
// variables and its validations.

/** A CEL variable of a ValidatingAdmissionPolicy. */
export interface PolicyVariable {
  readonly name: string;
  readonly expression: string;
}

/** A validation of a ValidatingAdmissionPolicy. */
export interface PolicyValidation {
  readonly expression: string;
  readonly message: string;
  readonly messageExpression: string;
  readonly reason: string;
}

/** The resources (plurals) of the kinds of one API group. */
export interface GroupResources {
  readonly group: string;
  readonly plurals: readonly string[];
}

/**
 * The policy `name` and its binding over `resources`' objects. `operatorUsers`: the operator's users as the API server names
 * them (the install's ServiceAccount, system:serviceaccount:NS:NAME; under `npm start`, the
 * kubeconfig's user).
 */
export function operatorExemptPolicy(name: string, operatorUsers: readonly string[], resources: readonly GroupResources[], variables: readonly PolicyVariable[], validations: readonly PolicyValidation[]) {
  const meta = { name, labels: { "app.kubernetes.io/part-of": "appstack" } };
  const policy = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicy",
    metadata: meta,
    spec: {
      failurePolicy: "Fail",
      matchConstraints: {
        resourceRules: resources.map(({ group, plurals }) => ({ apiGroups: [group], apiVersions: ["*"], operations: ["CREATE", "UPDATE"], resources: [...plurals] })),
      },
      // A JSON array of strings is a CEL list of strings: each name quoted and escaped.
      matchConditions: [{ name: "not-the-operator", expression: `!(request.userInfo.username in ${JSON.stringify(operatorUsers)})` }],
      variables,
      validations,
    },
  } as const;
  const binding = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicyBinding",
    metadata: meta,
    spec: { policyName: name, validationActions: ["Deny"] },
  } as const;
  return [policy, binding] as const;
}
