// Every App and Memcached of the watched namespaces, whichever replica owns them, held by informers
// for the sharder. Each pass reads this cache rather than listing every object: at 1,000 objects
// a list every second cost the leader 13 CPU s a minute when nothing changed, and the API server
// its share too. The informers also say when an object arrives, so the sharder can place it at
// once instead of at its next period. An informer that fails starts again after a pause and
// lists anew, as the reconciler's do (kube/restarting-informer.ts). A watched namespace that
// answers 403 (deleted, or its RoleBinding gone) does not hold up the others: its objects, which
// no replica can reconcile, are left out until it is readable again, and it is retried with the
// reconciler's backoff (controller/namespace-availability.ts).
import { apiVersionOfKind, resourceOf, workloadKinds } from "../../components/kinds.ts";
import type { Workload, WorkloadKind } from "../../crds/types.ts";
import type { Logger } from "../base/log.ts";
import { resourcePath } from "../../crds/child-kinds.ts";
import { briefError, type KubeClients } from "../kube/clients.ts";
import { isForbidden, unreadableRetryMs } from "../controller/namespace-availability.ts";
import { RestartingInformer } from "../kube/restarting-informer.ts";

const restartDelayMs = 3_000;

interface KindWatch {
  readonly kind: WorkloadKind;
  readonly source: RestartingInformer<Workload>;
  /** Answered 403 since it last listed or watched: its namespace is left out meanwhile. */
  deniedAnswers: number;
}

export interface WorkloadCacheSettings {
  readonly clients: KubeClients;
  readonly namespaces: readonly string[] | "all";
  /** How long the API server keeps one watch open (kube/bounded-watch.ts). */
  readonly watchTimeoutMs: number;
  readonly log: Logger;
}

export class WorkloadCache {
  private readonly settings: WorkloadCacheSettings;
  private readonly watches: KindWatch[] = [];
  private onChange: (object: Workload) => void = () => undefined;

  constructor(settings: WorkloadCacheSettings) {
    this.settings = settings;
    const scopes = settings.namespaces === "all" ? [undefined] : settings.namespaces;
    for (const namespace of scopes) for (const kind of workloadKinds()) this.watches.push(this.kindWatch(kind, namespace));
  }

  private kindWatch(kind: WorkloadKind, namespace: string | undefined): KindWatch {
    const { clients, watchTimeoutMs, log } = this.settings;
    const resource = resourceOf(kind);
    const list = async () => {
      const result = (namespace
        ? await clients.custom.listNamespacedCustomObject({ ...resource, namespace })
        : await clients.custom.listClusterCustomObject(resource)) as { items: Workload[] };
      // List items carry no kind; the sharder's keys want it.
      for (const item of result.items) Object.assign(item, { kind });
      return result;
    };
    const readable = () => (watch.deniedAnswers = 0);
    const source = new RestartingInformer<Workload>({
      config: clients.config,
      path: resourcePath(apiVersionOfKind(kind), resource.plural, namespace),
      list,
      watchTimeoutMs,
      onListed: readable,
      onWatchOpened: readable,
      onFailure: (error, phase) => {
        if (phase === "watch" && namespace !== undefined && isForbidden(error)) {
          watch.deniedAnswers += 1;
          if (watch.deniedAnswers === 1) log.warn("the sharder cannot read a watched namespace (deleted, or its RoleBinding gone); it places the other namespaces' objects meanwhile", { kind, namespace, error: briefError(error) });
          return unreadableRetryMs(watch.deniedAnswers);
        }
        const message = phase === "watch" ? "the sharder's watch failed; restarting" : "the sharder's watch could not start; retrying";
        log.warn(message, { kind, namespace, error: briefError(error), retryInMs: restartDelayMs });
        return restartDelayMs;
      },
    });
    const watch: KindWatch = { kind, source, deniedAnswers: 0 };
    const changed = (object: Workload) => this.onChange({ ...object, kind });
    source.cache.on("add", changed);
    source.cache.on("update", changed);
    return watch;
  }

  /** Starts the informers; `onChange` is told of every object added or changed, once the cache holds it. */
  start(onChange: (object: Workload) => void): void {
    this.onChange = onChange;
    for (const watch of this.watches) watch.source.start();
  }

  /**
   * Every object of `kind`, each with its kind; undefined until every informer has listed once or
   * found its namespace unreadable (a cache short of objects that exist would count shares wrong,
   * and a placement must not wait on one namespace's cache while another's is complete). An
   * unreadable namespace's objects are left out: no replica can read or label them.
   */
  objects(kind: WorkloadKind): Workload[] | undefined {
    const unreadable = (watch: KindWatch) => watch.deniedAnswers > 0;
    if (!this.watches.every((watch) => watch.source.listed || unreadable(watch))) return undefined;
    return this.watches.filter((watch) => watch.kind === kind && !unreadable(watch)).flatMap((watch) => watch.source.cache.list().map((object) => ({ ...object, kind })));
  }

  async stop(): Promise<void> {
    await Promise.all(this.watches.map((watch) => watch.source.stop()));
  }
}
