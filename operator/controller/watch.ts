// Informers on the two kinds and on the Deployments, Services and Pods appstack manages. Handlers only
// enqueue the owning object's key; the reconciler reads everything else from these caches. A child's
// status-only change leaves a key in backoff to its retry (child-events.ts).
import { makeInformer, type Informer, type KubernetesObject, type ObjectCache, type V1Deployment, type V1Pod, type V1Service } from "@kubernetes/client-node";
import { workloadKinds } from "../../components/kinds.ts";
import { managedBy, managedByLabel } from "../../components/metadata.ts";
import { group, plurals, version, type Workload, type WorkloadKind } from "../../crds/types.ts";
import { briefError, keyString, type KubeClients } from "../kube/clients.ts";
import type { Logger } from "../manager/log.ts";
import { childEvents, type ChildEventType, type WorkSink } from "./child-events.ts";

type Cached<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;
type Namespaces = readonly string[] | "all";

const restartDelayMs = 3_000;
const managedSelector = `${managedByLabel}=${managedBy}`;

function path(base: string, resource: string, namespace: string | undefined): string {
  return namespace ? `${base}/namespaces/${namespace}/${resource}` : `${base}/${resource}`;
}

export class Watcher {
  private readonly informers: Cached<KubernetesObject>[] = [];
  private readonly workloads = new Map<WorkloadKind, Cached<Workload>[]>();
  private readonly deployments: Cached<V1Deployment>[] = [];
  private readonly pods: Cached<V1Pod>[] = [];
  private readonly services: Cached<V1Service>[] = [];
  /** One per informer: resolves at its first successful list. */
  private readonly listed: Promise<void>[] = [];
  /** Per object: the parts of the last event that matter to the reconciler. */
  private readonly seen = new Map<string, string>();
  private stopped = false;

  private readonly clients: KubeClients;
  private readonly namespaces: Namespaces;
  private readonly queue: WorkSink;
  private readonly log: Logger;

  constructor(
    clients: KubeClients,
    namespaces: Namespaces,
    queue: WorkSink,
    log: Logger,
  ) {
    this.clients = clients;
    this.namespaces = namespaces;
    this.queue = queue;
    this.log = log;
    const scopes = namespaces === "all" ? [undefined] : namespaces;
    for (const ns of scopes) {
      for (const kind of workloadKinds) {
        const informer = this.workloadInformer(kind, ns);
        this.workloads.set(kind, [...(this.workloads.get(kind) ?? []), informer]);
      }
      this.deployments.push(this.childInformer<V1Deployment>(path("/apis/apps/v1", "deployments", ns), () =>
        ns ? clients.apps.listNamespacedDeployment({ namespace: ns, labelSelector: managedSelector }) : clients.apps.listDeploymentForAllNamespaces({ labelSelector: managedSelector }), false));
      this.services.push(this.childInformer<V1Service>(path("/api/v1", "services", ns), () =>
        ns ? clients.core.listNamespacedService({ namespace: ns, labelSelector: managedSelector }) : clients.core.listServiceForAllNamespaces({ labelSelector: managedSelector }), false));
      this.pods.push(this.childInformer<V1Pod>(path("/api/v1", "pods", ns), () =>
        ns ? clients.core.listNamespacedPod({ namespace: ns, labelSelector: managedSelector }) : clients.core.listPodForAllNamespaces({ labelSelector: managedSelector }), true));
    }
  }

  private workloadInformer(kind: WorkloadKind, ns: string | undefined): Cached<Workload> {
    const plural = plurals[kind];
    const list = async () => {
      const result: unknown = ns
        ? await this.clients.custom.listNamespacedCustomObject({ group, version, namespace: ns, plural })
        : await this.clients.custom.listClusterCustomObject({ group, version, plural });
      const typed = result as { items: Workload[]; metadata?: { resourceVersion?: string } };
      // List items carry no kind; the cache and the reconciler want it.
      for (const item of typed.items) Object.assign(item, { kind });
      return typed;
    };
    const informer = makeInformer<Workload>(this.clients.config, path(`/apis/${group}/${version}`, plural, ns), this.tracked(list));
    const onEvent = (object: Workload) => {
      // Our own status writes come back as updates: reacting to them would turn every retry
      // backoff into a hot loop. Only what the user (or the API server) changes is work.
      const fingerprint = JSON.stringify([object.metadata.generation, object.metadata.deletionTimestamp, object.metadata.finalizers, object.metadata.annotations]);
      if (this.seen.get(object.metadata.uid) === fingerprint) return;
      this.seen.set(object.metadata.uid, fingerprint);
      this.queue.add(keyString({ kind, namespace: object.metadata.namespace, name: object.metadata.name }));
    };
    this.register(informer, () => onEvent, `${plural}${ns ? ` in ${ns}` : ""}`);
    informer.on("delete", (object: Workload) => this.seen.delete(object.metadata.uid));
    return informer;
  }

  /** `statusOnly`: a kind read only for the status, whose events never cut a backoff short. */
  private childInformer<T extends KubernetesObject>(resourcePath: string, list: () => Promise<unknown>, statusOnly: boolean): Cached<T> {
    const informer = makeInformer<T>(this.clients.config, resourcePath, this.tracked(list) as never, managedSelector);
    return this.register(informer, childEvents(this.queue, statusOnly), resourcePath);
  }

  private register<T extends KubernetesObject>(informer: Cached<T>, handler: (type: ChildEventType) => (object: T) => void, what: string): Cached<T> {
    informer.on("add", handler("add"));
    informer.on("update", handler("update"));
    informer.on("delete", handler("delete"));
    // The informer stops on any error other than 410 Gone (which it relists by itself): restart it.
    informer.on("error", (error: unknown) => {
      if (this.stopped) return;
      this.log.warn("watch failed; restarting", { watch: what, error: briefError(error), retryInMs: restartDelayMs });
      setTimeout(() => void informer.start().catch(() => undefined), restartDelayMs);
    });
    this.informers.push(informer);
    return informer;
  }

  /** `list`, noting its first success: from then on the informer's cache holds the whole list. */
  private tracked<L>(list: () => Promise<L>): () => Promise<L> {
    let markListed!: () => void;
    this.listed.push(new Promise((resolve) => (markListed = resolve)));
    return async () => {
      const result = await list();
      // The informer fills its cache from the result once this returns: count it as listed after
      // that, not before.
      setImmediate(markListed);
      return result;
    };
  }

  /**
   * Starts every informer; resolves once each has listed (the caches are synced). An informer
   * whose list fails is restarted by its error handler, so this waits for it rather than letting
   * the reconciler read a cache that lacks objects which exist.
   */
  async start(): Promise<void> {
    await Promise.all(this.informers.map((informer) => informer.start()));
    await Promise.all(this.listed);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }

  workload(kind: WorkloadKind, namespace: string, name: string): Workload | undefined {
    for (const informer of this.workloads.get(kind) ?? []) {
      const found = informer.get(name, namespace);
      if (found) return { ...found, kind } as Workload;
    }
    return undefined;
  }

  /** The key of every App and Memcached in the caches. */
  keys(): string[] {
    return [...this.workloads].flatMap(([kind, informers]) => informers.flatMap((informer) => informer.list().map((object) => keyString({ kind, namespace: object.metadata.namespace, name: object.metadata.name }))));
  }

  deployment(namespace: string, name: string): V1Deployment | undefined {
    return this.deployments.map((informer) => informer.get(name, namespace)).find(Boolean);
  }

  service(namespace: string, name: string): V1Service | undefined {
    return this.services.map((informer) => informer.get(name, namespace)).find(Boolean);
  }

  podsOf(namespace: string, selector: Record<string, string>): V1Pod[] {
    const matches = (pod: V1Pod) => Object.entries(selector).every(([k, v]) => pod.metadata?.labels?.[k] === v);
    return this.pods.flatMap((informer) => informer.list(namespace)).filter(matches);
  }
}
