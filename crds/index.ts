import { appCrd } from "./app.ts";
import { memcachedCrd } from "./memcached.ts";
import { ownershipPolicy, ownershipPolicyBinding } from "./ownership.ts";
import type { CustomResourceDefinition } from "./schema.ts";

export * from "./types.ts";

export const customResourceDefinitions: readonly CustomResourceDefinition[] = [appCrd, memcachedCrd];

/** What besides the CRDs makes up appstack's API in a cluster: the ownership policy and its binding. */
export const apiPolicies = [ownershipPolicy, ownershipPolicyBinding] as const;
