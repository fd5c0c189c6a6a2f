// An object's children as they are in the cluster: from the watch cache where that is fresh
// enough, from the API server where the answer must name what `up` has just made.
import type { V1Deployment } from "@kubernetes/client-node";
import { hasService } from "../components/manifests.ts";
import type { Workload } from "../crds/types.ts";
import { encodeApplied, programVersion, type LiveChildren } from "./drift.ts";
import { orUndefined, type KubeClients } from "./kube.ts";
import type { Watcher } from "./watch.ts";

export class Children {
  constructor(
    private readonly clients: KubeClients,
    private readonly watcher: Watcher,
  ) {}

  /** The cache may not have a Deployment that was created a moment ago: ask the API server. */
  async deployment(object: Workload): Promise<V1Deployment | undefined> {
    return this.watcher.deployment(object.metadata.namespace, object.metadata.name) ?? this.readDeployment(object);
  }

  async readDeployment(object: Workload): Promise<V1Deployment | undefined> {
    return orUndefined(() => this.clients.apps.readNamespacedDeployment({ name: object.metadata.name, namespace: object.metadata.namespace }));
  }

  /** The identities drift decisions compare: the Deployment's uid and generation, the Service's uid. */
  identities(object: Workload, deployment: V1Deployment | undefined): LiveChildren {
    const uid = deployment?.metadata?.uid;
    return {
      deployment: uid ? { uid, generation: deployment.metadata?.generation ?? 0 } : undefined,
      serviceUid: this.watcher.service(object.metadata.namespace, object.metadata.name)?.metadata?.uid,
    };
  }

  /** The record of what an `up` just applied, read from the API server; undefined without a Deployment. */
  async applied(object: Workload, deployment: V1Deployment | undefined): Promise<string | undefined> {
    if (!deployment?.metadata?.uid) return undefined;
    const service = hasService(object)
      ? await orUndefined(() => this.clients.core.readNamespacedService({ name: object.metadata.name, namespace: object.metadata.namespace }))
      : undefined;
    return encodeApplied({
      programVersion,
      generation: object.metadata.generation ?? 0,
      deploymentUid: deployment.metadata.uid,
      deploymentGeneration: deployment.metadata.generation ?? 0,
      serviceUid: service?.metadata?.uid ?? "",
    });
  }
}
