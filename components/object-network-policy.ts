// The NetworkPolicy an object asks for with spec.networkPolicy (crds/spec-fields.ts): it selects
// the object's pods, as its Service does, and lets in only TCP to their ports from the pods the
// field names. Ingress only: the pods' own connections are the user's to limit.
import type * as k8s from "@pulumi/kubernetes";
import type { NetworkPolicySpec } from "../crds/spec-fields.ts";
import { childMetadata, selectorLabels, type Owner } from "./metadata.ts";

/** Whose pods are let in: the policy's namespace's (an empty pod selector), or every namespace's (an empty namespace selector). */
function peer(policy: NetworkPolicySpec): k8s.types.input.networking.v1.NetworkPolicyPeer {
  return policy.from === "AllNamespaces" ? { namespaceSelector: {} } : { podSelector: {} };
}

/**
 * The NetworkPolicy of `owner`'s pods (those of `appName`), letting in TCP to `ports`. With no port
 * it has no rule, and so lets nothing in: an App without a port serves nothing.
 */
export function objectNetworkPolicy(owner: Owner, appName: string, ports: readonly number[], policy: NetworkPolicySpec): k8s.types.input.networking.v1.NetworkPolicy {
  return {
    metadata: childMetadata(owner, appName),
    spec: {
      podSelector: { matchLabels: selectorLabels(owner, appName) },
      policyTypes: ["Ingress"],
      ingress: ports.length === 0 ? [] : [{ ports: ports.map((port) => ({ protocol: "TCP", port })), from: [peer(policy)] }],
    },
  };
}
