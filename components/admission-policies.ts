// The admission policies of appstack's API that the install makes (crds/): what RBAC cannot say.
// The ownership policy (over every kind of child of every kind) holds for everyone; the shard labels' and the approval's leave the operator's
// own user out, so they are made for it.
import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import { approvalPolicy } from "../crds/approval.ts";
import { shardLabelsPolicy } from "../crds/shard-labels.ts";
import { apiPolicies, kindGroups } from "./kinds.ts";

type Pair = readonly [policy: object, binding: object];

/** Each policy and its binding, as children of `parent`, named `NAME-<suffix>`. */
export function admissionPolicies(name: string, operatorUser: string, parent: pulumi.Resource): void {
  const pairs: Record<string, Pair> = {
    // The API server's own guard against taking over an object appstack did not create.
    ownership: apiPolicies(),
    // Only the operator's ServiceAccount sets, changes or removes the shard labels of the objects.
    "shard-labels": shardLabelsPolicy([operatorUser], kindGroups()),
    // Approving a plan needs the RBAC verb approve, not only patch.
    approve: approvalPolicy([operatorUser], kindGroups()),
  };
  for (const [suffix, [policy, binding]] of Object.entries(pairs)) {
    // Plain JSON, one source for `npm start`'s install (operator/kube/apply.ts) and this one.
    const made = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(`${name}-${suffix}`, policy, { parent });
    new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(`${name}-${suffix}`, binding, { parent, dependsOn: [made] });
  }
}
