import { ownershipPolicy, ownershipPolicyBinding } from "./ownership.ts";

export * from "./types.ts";

/** What besides the kinds' CRDs (components/kinds.ts) makes up appstack's API in a cluster: the ownership policy and its binding. */
export const apiPolicies = [ownershipPolicy, ownershipPolicyBinding] as const;
