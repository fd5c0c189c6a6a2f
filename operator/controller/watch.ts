// Informers on the two kinds and on the Deployments, Services and Pods appstack manages. Handlers only
// enqueue the owning object's key; the reconciler reads everything else from these caches. A child's
// status-only change leaves a key in backoff to its retry (child-events.ts). An object's change that
// may end or begin another's wait (spec.dependsOn) queues that other object (dependencies.ts).
import type { KubernetesObject, V1EndpointSlice, V1Pod, V1Service } from "@kubernetes/client-node";
import { childPath, resourcePath } from "../../crds/child-kinds.ts";
import { apiVersionOfKind, childKinds, resourceOf, workloadKinds } from "../../components/kinds.ts";
import { instanceLabel, managedBy, managedByLabel } from "../../components/metadata.ts";
import type { Workload, WorkloadKind } from "../../crds/types.ts";
import { briefError, keyString, parseKey, type KubeClients } from "../kube/clients.ts";
import { RestartingInformer, type Cached, type FailurePhase } from "../kube/restarting-informer.ts";
import { timedOut, withinDeadline } from "../base/deadline.ts";
import type { Logger } from "../base/log.ts";
import { childEvents, onlyFor, type WorkSink } from "./child-events.ts";
import { DependencyIndex } from "./dependencies.ts";
import { InstanceIndex } from "./instance-index.ts";
import { EndpointChanges, serviceNameLabel } from "./service-endpoints.ts";
import { isForbidden, NamespaceAvailability, unreadableRetryMs } from "./namespace-availability.ts";
import { shardDrainLabel, shardOwnerLabel } from "./shard-labels.ts";

type Namespaces = readonly string[] | "all";

/** One informer: whether its cache holds a whole list yet, and why not. */
interface WatchState {
  /** The resource, as logs and the sync deadline's message name it. */
  readonly what: string;
  /** Its namespace, when the operator watches a list of them. */
  readonly namespace: string | undefined;
  readonly source: Pick<RestartingInformer<KubernetesObject>, "start" | "stop">;
  /** Listed, or its namespace found unreadable: the start need not wait for it. */
  settled: boolean;
  /** Resolves once settled. */
  readonly synced: Promise<void>;
  readonly settle: () => void;
  /** Forbidden answers since it last listed or watched: its retry's backoff. */
  deniedAnswers: number;
  lastError?: string;
}

/** An informer's cache, and its state (`settled` once its first list is in the cache). */
interface Informer<T extends KubernetesObject> {
  readonly cache: Cached<T>;
  readonly watch: WatchState;
}

/** Some caches did not sync in time: says which, and the last error of each. */
export class CacheSyncTimeout extends Error {
  constructor(unsynced: readonly WatchState[], deadlineMs: number) {
    const each = unsynced.map((watch) => `${watch.what}${watch.lastError ? ` (${watch.lastError})` : ""}`);
    super(`caches not synced within ${deadlineMs / 1000} s; could not list ${each.join(", ")}`);
    this.name = "CacheSyncTimeout";
  }
}

const restartDelayMs = 3_000;
const managedSelector = `${managedByLabel}=${managedBy}`;

/** `work`, or the signal's reason once it aborts. */
function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

export class Watcher {
  private readonly watches: WatchState[] = [];
  private readonly workloads = new Map<WorkloadKind, Cached<Workload>[]>();
  /** By kind of child (every registered kind's, components/kinds.ts). */
  private readonly children = new Map<string, Cached<KubernetesObject>[]>();
  private readonly pods = new InstanceIndex<V1Pod>();
  /** The EndpointSlices of the children's Services, which carry their labels: Ready waits for them (service-endpoints.ts). */
  private readonly endpointSlices = new InstanceIndex<V1EndpointSlice>();
  /** When each slice last changed which pods it routes to. */
  private readonly endpointChanges = new EndpointChanges();
  /** Per object: the parts of the last event that matter to the reconciler. */
  private readonly seen = new Map<string, string>();
  /** Which objects wait for which (spec.dependsOn): a dependency's change queues its dependants. */
  private readonly dependencies = new DependencyIndex();

  private readonly clients: KubeClients;
  private readonly namespaces: Namespaces;
  private readonly queue: WorkSink;
  private readonly log: Logger;
  private readonly watchTimeoutMs: number;
  /** With a list of namespaces: which of them answer 403 (deleted, or their RoleBinding gone). */
  private readonly availability: NamespaceAvailability | undefined;
  /** Sharded: the selector of this replica's objects (its owner label); children's events count only for those. */
  private readonly shardSelector: string | undefined;

  /**
   * `watchTimeoutMs`: how long the API server keeps one watch open (see kube/bounded-watch.ts).
   * `shardMember`: sharded, this replica's name: only the objects labelled for it are watched.
   */
  constructor(
    clients: KubeClients,
    namespaces: Namespaces,
    queue: WorkSink,
    log: Logger,
    watchTimeoutMs: number,
    shardMember?: string,
  ) {
    this.shardSelector = shardMember === undefined ? undefined : `${shardOwnerLabel}=${shardMember}`;
    this.clients = clients;
    this.namespaces = namespaces;
    this.queue = queue;
    this.log = log;
    this.watchTimeoutMs = watchTimeoutMs;
    this.availability = namespaces === "all" ? undefined : new NamespaceAvailability(namespaces);
    const scopes = namespaces === "all" ? [undefined] : namespaces;
    for (const ns of scopes) {
      for (const kind of workloadKinds()) {
        const informer = this.workloadInformer(kind, ns);
        this.workloads.set(kind, [...(this.workloads.get(kind) ?? []), informer]);
      }
      for (const kind of childKinds()) {
        const { cache: informer } = this.childInformer<KubernetesObject>(childPath(kind, ns), () => clients.objects.listChildren(kind, ns, managedSelector), ns, false);
        this.children.set(kind.kind, [...(this.children.get(kind.kind) ?? []), informer]);
      }
      this.pods.follow(this.childInformer<V1Pod>(resourcePath("v1", "pods", ns), () =>
        ns ? clients.core.listNamespacedPod({ namespace: ns, labelSelector: managedSelector }) : clients.core.listPodForAllNamespaces({ labelSelector: managedSelector }), ns, true).cache);
      const slices = { group: "discovery.k8s.io", version: "v1", plural: "endpointslices", labelSelector: managedSelector };
      const { cache: sliceCache, watch: sliceWatch } = this.childInformer<V1EndpointSlice>(resourcePath(`${slices.group}/${slices.version}`, slices.plural, ns), () =>
        ns ? clients.custom.listNamespacedCustomObject({ ...slices, namespace: ns }) : clients.custom.listClusterCustomObject(slices), ns, true);
      this.endpointSlices.follow(sliceCache);
      for (const type of ["add", "update"] as const) sliceCache.on(type, (slice: V1EndpointSlice) => this.endpointChanges.seen(slice, !sliceWatch.settled));
      sliceCache.on("delete", (slice: V1EndpointSlice) => this.endpointChanges.gone(slice));
    }
  }

  private workloadInformer(kind: WorkloadKind, ns: string | undefined): Cached<Workload> {
    const resource = resourceOf(kind);
    const { plural } = resource;
    const apiVersion = apiVersionOfKind(kind);
    const list = async () => {
      const labelSelector = this.shardSelector;
      const result: unknown = ns
        ? await this.clients.custom.listNamespacedCustomObject({ ...resource, namespace: ns, ...(labelSelector ? { labelSelector } : {}) })
        : await this.clients.custom.listClusterCustomObject({ ...resource, ...(labelSelector ? { labelSelector } : {}) });
      const typed = result as { items: Workload[]; metadata?: { resourceVersion?: string } };
      // List items carry no kind; the cache and the reconciler (Events, ownerReferences) want it and the apiVersion.
      for (const item of typed.items) Object.assign(item, { apiVersion, kind });
      return typed;
    };
    // Sharded, an object that leaves the selection (moved to another replica) is a deletion to the
    // informer: its key is queued, and the reconciler's shard fence forgets it (shard-fence.ts).
    const { cache: informer } = this.informer<Workload>(`${plural}${ns ? ` in ${ns}` : ""}`, resourcePath(apiVersion, plural, ns), list, ns, this.shardSelector);
    const keyOfEvent = (object: Workload) => keyString({ kind, namespace: object.metadata.namespace, name: object.metadata.name });
    // A dependency's status is work for its dependants (its own status writes are not its own work):
    // queued when it appears, goes, or becomes Ready or not for a generation.
    const onDependency = (dependants: readonly string[]) => {
      for (const dependant of dependants) this.queue.add(dependant);
    };
    informer.on("add", (object: Workload) => onDependency(this.dependencies.seen(keyOfEvent(object), object)));
    informer.on("update", (object: Workload) => onDependency(this.dependencies.seen(keyOfEvent(object), object)));
    informer.on("delete", (object: Workload) => onDependency(this.dependencies.gone(keyOfEvent(object))));
    const onEvent = (object: Workload) => {
      // Our own status writes come back as updates: reacting to them would turn every retry
      // backoff into a hot loop. Only what the user (or the API server) changes is work.
      // A drain asked for by the sharder is work too: the owner lets the object go (shard-fence.ts).
      const fingerprint = JSON.stringify([object.metadata.generation, object.metadata.deletionTimestamp, object.metadata.finalizers, object.metadata.annotations, object.metadata.labels?.[shardDrainLabel]]);
      if (this.seen.get(object.metadata.uid) === fingerprint) return;
      this.seen.set(object.metadata.uid, fingerprint);
      this.queue.add(keyOfEvent(object));
    };
    informer.on("add", onEvent);
    informer.on("update", onEvent);
    informer.on("delete", onEvent);
    informer.on("delete", (object: Workload) => this.seen.delete(object.metadata.uid));
    return informer;
  }

  /** `statusOnly`: a kind read only for the status, whose events never cut a backoff short. */
  private childInformer<T extends KubernetesObject>(resourcePath: string, list: () => Promise<unknown>, ns: string | undefined, statusOnly: boolean): Informer<T> {
    const informer = this.informer<T>(resourcePath, resourcePath, list, ns, managedSelector);
    // Sharded, a child's events are work only for a parent of this replica's.
    const handler = childEvents(this.shardSelector === undefined ? this.queue : onlyFor(this.queue, (key) => this.owns(key)), statusOnly);
    for (const type of ["add", "update", "delete"] as const) informer.cache.on(type, handler(type));
    return informer;
  }

  /** An informer on `resourcePath`, restarted whenever it fails, whose first list `start` waits for. */
  private informer<T extends KubernetesObject>(what: string, resourcePath: string, list: () => Promise<unknown>, namespace: string | undefined, labelSelector?: string): Informer<T> {
    let markSynced!: () => void;
    const synced = new Promise<void>((resolve) => (markSynced = resolve));
    const source = new RestartingInformer<T>({
      config: this.clients.config,
      path: resourcePath,
      list,
      ...(labelSelector === undefined ? {} : { labelSelector }),
      watchTimeoutMs: this.watchTimeoutMs,
      onListed: () => {
        this.readable(watch);
        watch.settle();
      },
      // A restarted informer that has listed before only watches: its watch opening is what says its namespace is readable again.
      onWatchOpened: () => this.readable(watch),
      onFailure: (error, phase) => this.failed(watch, error, phase),
    });
    const settle = () => {
      watch.settled = true;
      markSynced();
    };
    const watch: WatchState = { what, namespace, source, settled: false, synced, settle, deniedAnswers: 0 };
    this.watches.push(watch);
    return { cache: source.cache, watch };
  }

  /** How long `watch` waits before it starts again after `error`, said in the log. */
  private failed(watch: WatchState, error: unknown, phase: FailurePhase): number {
    watch.lastError = briefError(error);
    if (phase === "watch" && this.denied(watch, error)) return unreadableRetryMs(watch.deniedAnswers);
    const message = phase === "watch" ? "watch failed; restarting" : "watch could not start; retrying";
    this.log.warn(message, { watch: watch.what, error: watch.lastError, retryInMs: restartDelayMs });
    return restartDelayMs;
  }

  /**
   * Whether `error` is a 403 in a watched namespace: then the namespace is unreadable (deleted, or
   * its RoleBinding gone). It is said once, the start does not wait for it (its cache stays as it
   * is: empty at a start), and the informer is retried with backoff until the namespace is readable
   * (`failed`).
   */
  private denied(watch: WatchState, error: unknown): boolean {
    if (!this.availability || watch.namespace === undefined || !isForbidden(error)) return false;
    watch.deniedAnswers += 1;
    if (this.availability.denied(watch.namespace, watch.what) === "unreadable") {
      this.log.warn("watched namespace does not exist or is not readable (its RoleBinding gone); its objects are not reconciled until it is, while the other namespaces' are", { namespace: watch.namespace, error: watch.lastError });
    }
    watch.settle();
    return true;
  }

  /** `watch` listed, or its watch opened: its namespace is readable as far as it goes. */
  private readable(watch: WatchState): void {
    watch.deniedAnswers = 0;
    if (!this.availability || watch.namespace === undefined) return;
    if (this.availability.read(watch.namespace, watch.what) === "readable") {
      this.log.info("watched namespace is readable again; its objects are reconciled", { namespace: watch.namespace });
      // Those its caches held all along have had no event since: reconcile them now.
      for (const key of this.keys()) if (parseKey(key).namespace === watch.namespace) this.queue.add(key);
    }
  }

  /** Whether `namespace` is watched and answers 403: its objects wait (reconcile.ts). */
  unreadable(namespace: string): boolean {
    return this.availability?.unreadable(namespace) ?? false;
  }

  /**
   * Starts every informer; resolves once each has listed (the caches are synced). An informer
   * whose list fails is restarted by its error handler, so this waits for it rather than letting
   * the reconciler read a cache that lacks objects which exist; but no longer than `deadlineMs`
   * (a cluster-wide list forbidden, a missing CRD never ends), then fails naming what did not
   * list. The informers of a watched namespace answered 403 are not waited for (see `denied`). `signal`
   * (a SIGTERM) ends the wait at once. Either way the caller stops the watcher.
   */
  async start(deadlineMs: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    for (const watch of this.watches) watch.source.start();
    const synced = Promise.all(this.watches.map((watch) => watch.synced));
    if ((await withinDeadline(abortable(synced, signal), deadlineMs)) === timedOut) {
      throw new CacheSyncTimeout(this.watches.filter((watch) => !watch.settled), deadlineMs);
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.watches.map((watch) => watch.source.stop()));
  }

  /** Every watched namespace (none when watching all) and whether it is unreadable now. */
  namespaceStates(): ReadonlyMap<string, boolean> {
    return this.availability?.states() ?? new Map();
  }

  workload(kind: WorkloadKind, namespace: string, name: string): Workload | undefined {
    for (const informer of this.workloads.get(kind) ?? []) {
      const found = informer.get(name, namespace);
      if (found) return { ...found, kind };
    }
    return undefined;
  }

  /** Whether the caches hold the object of `key`: sharded, whether it is this replica's. */
  private owns(key: string): boolean {
    const { kind, namespace, name } = parseKey(key);
    return this.workload(kind, namespace, name) !== undefined;
  }

  /** The key of every App and Memcached in the caches. */
  keys(): string[] {
    return [...this.workloads].flatMap(([kind, informers]) => informers.flatMap((informer) => informer.list().map((object) => keyString({ kind, namespace: object.metadata.namespace, name: object.metadata.name }))));
  }

  /** The child of kind `kind` named `name`, as the cache has it. */
  child(kind: string, namespace: string, name: string): KubernetesObject | undefined {
    return (this.children.get(kind) ?? []).map((informer) => informer.get(name, namespace)).find(Boolean);
  }

  /** The managed pods of `namespace` that `selector` selects (instance-index.ts). */
  podsOf(namespace: string, selector: Record<string, string>): V1Pod[] {
    return this.pods.select(namespace, selector);
  }

  /** When any of `slices` last changed which pods it routes to (service-endpoints.ts). */
  endpointsChangedAt(slices: readonly V1EndpointSlice[]): number {
    return this.endpointChanges.lastChange(slices);
  }

  /** The EndpointSlices of one of appstack's Services (instance-index.ts). */
  endpointSlicesOf(service: V1Service): V1EndpointSlice[] {
    const { namespace = "", name = "", labels = {} } = service.metadata ?? {};
    return this.endpointSlices.select(namespace, { [instanceLabel]: labels[instanceLabel] ?? "", [serviceNameLabel]: name });
  }
}
