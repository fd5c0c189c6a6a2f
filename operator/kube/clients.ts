// The Kubernetes API as the operator uses it: typed clients, object keys, and JSON patches.
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  createConfiguration,
  KubeConfig,
  PatchStrategy,
  ServerConfiguration,
  setHeaderOptions,
  type Configuration,
} from "@kubernetes/client-node";
import { isWorkloadKind, resourceOf } from "../../components/kinds.ts";
import { ChildObjectApi } from "./child-apis.ts";
import { connectionPoolOf, type ConnectionPool } from "./connection-pool.ts";
import { fencedSignal, WriteFenced, writeFenceOf } from "./write-fence.ts";
import type { Workload, WorkloadKind } from "../../crds/types.ts";

export interface KubeClients {
  readonly config: KubeConfig;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly custom: CustomObjectsApi;
  /** Children of any declared kind, by path (child-apis.ts). */
  readonly objects: ChildObjectApi;
}

const readMethods = new Set(["GET", "HEAD", "OPTIONS"]);

/** How long one API request may take: a hung API server (or a proxy in front of it) must never hold a worker. */
export const apiRequestTimeoutMs = 30_000;

/**
 * An API client whose every request is aborted after `timeoutMs`, on a connection kept open for
 * the next one. client-node sets no deadline of its own (its request context takes an abort
 * signal, which a middleware sets per request) and makes a new agent, so a new TLS connection,
 * for every request (the pool's HTTP library swaps it: connection-pool.ts). Every client of one
 * `config` shares its pool. Watches do not come this way: each has its own connection (bounded-watch.ts).
 */
export function apiClient<T>(config: KubeConfig, api: new (configuration: Configuration) => T, timeoutMs = apiRequestTimeoutMs, pool: ConnectionPool = connectionPoolOf(config), impersonate?: string): T {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig names no current cluster");
  return new api(createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: config },
    httpApi: pool.httpLibrary(),
    promiseMiddleware: [{
      pre: (context) => {
        const method = String(context.getHttpMethod());
        const fence = readMethods.has(method) ? undefined : writeFenceOf(config);
        const fenced = fence?.fenced();
        if (fenced) return Promise.reject(new WriteFenced(method, fenced));
        // Kubernetes impersonation: the API server authorizes the request as that user (a
        // ServiceAccount's, whose groups it adds itself), once it allowed this identity to impersonate it.
        if (impersonate) context.setHeaderParam("Impersonate-User", impersonate);
        const deadline = AbortSignal.timeout(timeoutMs);
        context.setSignal(fence ? fencedSignal(fence, method, deadline) : deadline);
        return Promise.resolve(context);
      },
      post: (response) => Promise.resolve(response),
    }],
  }));
}

/** From a kubeconfig file, or the default rules (KUBECONFIG, ~/.kube/config, in-cluster). */
export function kubeClients(kubeconfigPath?: string, timeoutMs = apiRequestTimeoutMs): KubeClients {
  const config = new KubeConfig();
  if (kubeconfigPath) config.loadFromFile(kubeconfigPath);
  else config.loadFromDefault();
  return { config, core: apiClient(config, CoreV1Api, timeoutMs), apps: apiClient(config, AppsV1Api, timeoutMs), custom: apiClient(config, CustomObjectsApi, timeoutMs), objects: apiClient(config, ChildObjectApi, timeoutMs) };
}

/** Per client set, its clients acting as each user (actingAs). */
const impersonated = new WeakMap<KubeClients, Map<string, KubeClients>>();

/**
 * The same clients, every request made as `user` (Kubernetes impersonation), on the same
 * connections and behind the same write fence: what the operator writes to an object's children
 * when the install gives each tenant its own identity (controller/tenancy.ts).
 */
export function actingAs(clients: KubeClients, user: string): KubeClients {
  let users = impersonated.get(clients);
  if (!users) impersonated.set(clients, (users = new Map<string, KubeClients>()));
  let acting = users.get(user);
  if (!acting) {
    const { config } = clients;
    const pool = connectionPoolOf(config);
    const client = <T>(api: new (configuration: Configuration) => T) => apiClient(config, api, apiRequestTimeoutMs, pool, user);
    acting = { config, core: client(CoreV1Api), apps: client(AppsV1Api), custom: client(CustomObjectsApi), objects: client(ChildObjectApi) };
    users.set(user, acting);
  }
  return acting;
}

export interface ObjectKey {
  readonly kind: WorkloadKind;
  readonly namespace: string;
  readonly name: string;
}

export function keyString(key: ObjectKey): string {
  return `${key.kind}/${key.namespace}/${key.name}`;
}

export function parseKey(key: string): ObjectKey {
  const [kind, namespace, name] = key.split("/");
  if (!isWorkloadKind(kind) || !namespace || !name) throw new Error(`malformed work key ${key}`);
  return { kind, namespace, name };
}

export function keyOf(object: Workload): ObjectKey {
  return { kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name };
}

export type JsonPatch = ({ op: "add" | "replace" | "test"; path: string; value: unknown } | { op: "remove"; path: string })[];

/** Request options that send the body as a JSON patch, a JSON merge patch, or a server-side apply. */
export const jsonPatch = setHeaderOptions("Content-Type", PatchStrategy.JsonPatch);
export const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
export const serverSideApply = setHeaderOptions("Content-Type", PatchStrategy.ServerSideApply);

/** The object as the API server has it now (not a cache), or undefined when it does not exist. */
export async function readWorkload(clients: KubeClients, key: ObjectKey): Promise<Workload | undefined> {
  const found: unknown = await orUndefined(() => clients.custom.getNamespacedCustomObject({ ...resourceOf(key.kind), namespace: key.namespace, name: key.name }));
  return found as Workload | undefined;
}

export async function patchWorkload(clients: KubeClients, key: ObjectKey, patch: JsonPatch, subresource?: "status"): Promise<Workload> {
  const target = { ...resourceOf(key.kind), namespace: key.namespace, name: key.name, body: patch };
  const result: unknown = subresource === "status"
    ? await clients.custom.patchNamespacedCustomObjectStatus(target, jsonPatch)
    : await clients.custom.patchNamespacedCustomObject(target, jsonPatch);
  return result as Workload;
}

export function isNotFound(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: number }).code === 404;
}

/** What `read` returns, or undefined when the API server answers 404. */
export async function orUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export function isConflict(error: unknown): boolean {
  const code = typeof error === "object" && error !== null ? (error as { code?: number }).code : undefined;
  // 409 for resourceVersion conflicts, 422 for a failed JSON patch `test` operation.
  return code === 409 || code === 422;
}

/** The message of the Status the API server answered with (a Forbidden one quotes the user, which the patterns below cut short). */
function statusMessage(error: unknown): string | undefined {
  const body = typeof error === "object" && error !== null ? (error as { body?: unknown }).body : undefined;
  let status: unknown = body;
  if (typeof body === "string") {
    try {
      status = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const message = typeof status === "object" && status !== null ? (status as { message?: unknown }).message : undefined;
  return typeof message === "string" && message ? message : undefined;
}

/** client-node errors carry the whole HTTP exchange; the status line and the server's reason suffice. */
export function briefError(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const code = /HTTP-Code: (\d+)/.exec(text)?.[1];
  const reason = statusMessage(error) ?? /\\"message\\":\\"([^\\]*)\\"/.exec(text)?.[1] ?? /"message":"([^"]*)"/.exec(text)?.[1];
  return code ? `HTTP ${code}${reason ? `: ${reason}` : ""}` : text.split("\n")[0]!;
}
