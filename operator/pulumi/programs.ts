// One Pulumi program per object: a Kubernetes provider and the object's component.
import * as k8s from "@pulumi/kubernetes";
import type { PulumiFn } from "@pulumi/pulumi/automation/index.js";
import { describe, kindOwner } from "../../components/kinds.ts";
import type { Workload } from "../../crds/types.ts";

/** The provider's identity of "the cluster this operator serves": it never changes. */
export const clusterIdentifier = "appstack-object-cluster";

export function programFor(object: Workload): PulumiFn {
  const owner = kindOwner(object);
  // A snapshot: the program must describe the spec this reconcile decided on, not a later one.
  const snapshot = JSON.parse(JSON.stringify(object)) as Workload;
  return () => {
    // No kubeconfig among the provider's inputs: the provider reads KUBECONFIG (or the in-cluster
    // identity) from the engine's environment; an empty string is its "ambient", and keeps the
    // SDK from recording this process's KUBECONFIG path instead. So the inputs are the same on
    // every replica, whatever kubeconfig each has, and a plan one replica previewed is applied by
    // another (a path among them violated the plan). A recorded path (stacks from before) is an
    // in-place update: when the server a kubeconfig names differs (another replica reaching the
    // API server by another address, a local cluster's new port) the provider would otherwise be
    // replaced, and every child with it, deleted through the old address, which may answer no
    // more. The children always live in the cluster of their object, so one identifier holds.
    const provider = new k8s.Provider("cluster", { enableServerSideApply: true, clusterIdentifier, kubeconfig: "" });
    const component = describe(snapshot).component(owner, snapshot.spec, { provider });
    return Promise.resolve(component.deployment ? { deployment: component.deployment.metadata.name } : {});
  };
}
