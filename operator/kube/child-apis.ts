// How the operator reads, lists and patches a child of any kind (crds/child-kinds.ts): one generic
// client, by REST path, that every kind of child shares. It is client-node's KubernetesObjectApi
// with the kind's resource answered from the declaration rather than by a discovery request, and a
// patch of its own: the library's takes its path from the body, which a JSON patch has not. Its
// requests go through the same configuration as the typed clients' (clients.ts: connection pool,
// deadline, write fence, impersonation); its answers are the API server's JSON, as a watch's events are.
import { HttpMethod, KubernetesObjectApi, type KubernetesListObject, type KubernetesObject, type PatchStrategy, type ResponseContext, type V1APIResource } from "@kubernetes/client-node";
import { childPath, type ChildKindInfo } from "../../crds/child-kinds.ts";

/** A patch of one child: a JSON patch, or a manifest to apply server-side as `fieldManager`. */
export interface ChildPatch {
  readonly name: string;
  readonly namespace: string;
  readonly body: unknown;
  readonly fieldManager?: string;
  readonly force?: boolean;
}

export class ChildObjectApi extends KubernetesObjectApi {
  /** The children's kinds never need discovery: their declaration says where they are. */
  private readonly declared = new Map<string, ChildKindInfo>();

  protected override resource(apiVersion: string, kind: string): Promise<V1APIResource | undefined> {
    const declared = this.declared.get(`${apiVersion} ${kind}`);
    if (declared) return Promise.resolve({ kind, name: declared.plural, namespaced: declared.namespaced, singularName: "", verbs: [] });
    return super.resource(apiVersion, kind);
  }

  /**
   * A child as the API server sends it, as a watch event carries it: the library's typed models
   * rename fields that are words of JavaScript (a NetworkPolicy's `from` is their `_from`), which
   * the drift check would read as a field missing.
   */
  protected override async processResponse<T extends KubernetesObject>(response: ResponseContext, type?: string): Promise<T> {
    if (response.httpStatusCode < 200 || response.httpStatusCode > 299) return super.processResponse<T>(response, type);
    return JSON.parse(await response.body.text()) as T;
  }

  private known(kind: ChildKindInfo): void {
    this.declared.set(`${kind.apiVersion} ${kind.kind}`, kind);
  }

  /** The child `name` of `kind` in `namespace`. */
  readChild(kind: ChildKindInfo, namespace: string, name: string): Promise<KubernetesObject> {
    this.known(kind);
    return this.read({ apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name, namespace } });
  }

  /** The children of `kind` that `labelSelector` selects, in `namespace` or in all namespaces. */
  listChildren(kind: ChildKindInfo, namespace: string | undefined, labelSelector: string): Promise<KubernetesListObject<KubernetesObject>> {
    this.known(kind);
    return this.list(kind.apiVersion, kind.kind, namespace, undefined, undefined, undefined, undefined, labelSelector);
  }

  /** `patch` of one child of `kind`, its body sent as `strategy` says (a JSON patch, a server-side apply). */
  patchChild(kind: ChildKindInfo, patch: ChildPatch, strategy: PatchStrategy): Promise<KubernetesObject> {
    const context = this.configuration.baseServer.makeRequestContext(`${childPath(kind, patch.namespace)}/${encodeURIComponent(patch.name)}`, HttpMethod.PATCH);
    context.setHeaderParam("Accept", "application/json");
    context.setHeaderParam("Content-Type", strategy);
    if (patch.fieldManager !== undefined) context.setQueryParam("fieldManager", patch.fieldManager);
    if (patch.force !== undefined) context.setQueryParam("force", String(patch.force));
    context.setBody(JSON.stringify(patch.body));
    return this.requestPromise(context);
  }
}
