// How the operator reads, lists and patches each kind of child (crds/child-kinds.ts) through
// the typed clients: the one place that picks the client call by kind.
import type { AppsV1Api, KubernetesListObject, KubernetesObject } from "@kubernetes/client-node";
import type { ChildKind } from "../../crds/child-kinds.ts";
import type { KubeClients } from "./clients.ts";

/** A patch of one child: a JSON patch, or a manifest to apply server-side as `fieldManager`. */
export interface ChildPatch {
  readonly name: string;
  readonly namespace: string;
  readonly body: unknown;
  readonly fieldManager?: string;
  readonly force?: boolean;
}

/** The request options (the patch's content type), as every typed client takes them. */
export type RequestOptions = Parameters<AppsV1Api["patchNamespacedDeployment"]>[1];

export interface ChildApi {
  read(clients: KubeClients, namespace: string, name: string): Promise<KubernetesObject>;
  /** In `namespace`, or in all namespaces. */
  list(clients: KubeClients, namespace: string | undefined, labelSelector: string): Promise<KubernetesListObject<KubernetesObject>>;
  patch(clients: KubeClients, patch: ChildPatch, options: RequestOptions): Promise<KubernetesObject>;
}

export const childApis: { readonly [K in ChildKind]: ChildApi } = {
  Deployment: {
    read: (clients, namespace, name) => clients.apps.readNamespacedDeployment({ name, namespace }),
    list: (clients, namespace, labelSelector) => namespace ? clients.apps.listNamespacedDeployment({ namespace, labelSelector }) : clients.apps.listDeploymentForAllNamespaces({ labelSelector }),
    patch: (clients, patch, options) => clients.apps.patchNamespacedDeployment(patch, options),
  },
  Service: {
    read: (clients, namespace, name) => clients.core.readNamespacedService({ name, namespace }),
    list: (clients, namespace, labelSelector) => namespace ? clients.core.listNamespacedService({ namespace, labelSelector }) : clients.core.listServiceForAllNamespaces({ labelSelector }),
    patch: (clients, patch, options) => clients.core.patchNamespacedService(patch, options),
  },
};
