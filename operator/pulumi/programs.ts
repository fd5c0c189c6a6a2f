// One Pulumi program per object: a Kubernetes provider and the object's component.
import * as k8s from "@pulumi/kubernetes";
import type { PulumiFn } from "@pulumi/pulumi/automation/index.js";
import { describe } from "../../components/kinds.ts";
import { ownerOf } from "../../components/metadata.ts";
import type { Workload } from "../../crds/types.ts";

export function programFor(object: Workload): PulumiFn {
  const owner = ownerOf(object);
  // A snapshot: the program must describe the spec this reconcile decided on, not a later one.
  const snapshot = JSON.parse(JSON.stringify(object)) as Workload;
  return () => {
    // No kubeconfig here: the provider reads KUBECONFIG (or the in-cluster identity) from the
    // engine's environment, so a rotated credential never shows up as a provider diff.
    const provider = new k8s.Provider("cluster", { enableServerSideApply: true });
    const component = describe(snapshot).component(owner, snapshot.spec, { provider });
    return Promise.resolve({ deployment: component.deployment.metadata.name });
  };
}
