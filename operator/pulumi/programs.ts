// One Pulumi program per object: a Kubernetes provider and the object's component.
import * as k8s from "@pulumi/kubernetes";
import type { PulumiFn } from "@pulumi/pulumi/automation/index.js";
import { describe } from "../../components/kinds.ts";
import { ownerOf } from "../../components/metadata.ts";
import type { Workload } from "../../crds/types.ts";

/** The provider's identity of "the cluster this operator serves": it never changes. */
export const clusterIdentifier = "appstack-object-cluster";

export function programFor(object: Workload): PulumiFn {
  const owner = ownerOf(object);
  // A snapshot: the program must describe the spec this reconcile decided on, not a later one.
  const snapshot = JSON.parse(JSON.stringify(object)) as Workload;
  return () => {
    // No kubeconfig here: the provider reads KUBECONFIG (or the in-cluster identity) from the
    // engine's environment. The SDK still records the KUBECONFIG path among the provider's
    // inputs, and when the server it names differs (another replica reaching the API server by
    // another address, a local cluster's new port) the provider would be replaced, and every
    // child with it: deleted through the old address, which may answer no more. The children
    // always live in the cluster of their object, so one identifier holds for every replica and
    // a changed kubeconfig is an in-place update of the provider.
    const provider = new k8s.Provider("cluster", { enableServerSideApply: true, clusterIdentifier });
    const component = describe(snapshot).component(owner, snapshot.spec, { provider });
    return Promise.resolve({ deployment: component.deployment.metadata.name });
  };
}
