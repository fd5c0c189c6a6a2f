// Every App and Memcached of the watched namespaces, whichever replica owns them, held by informers
// for the sharder. Each pass reads this cache rather than listing every object: at 1,000 objects
// a list every second cost the leader 13 CPU s a minute when nothing changed, and the API server
// its share too. The informers also say when an object arrives, so the sharder can place it at
// once instead of at its next period. An informer that fails starts again after a pause and
// lists anew, as the reconciler's do (kube/restarting-informer.ts).
import { workloadKinds } from "../../components/kinds.ts";
import { apiVersion, group, plurals, version, type Workload, type WorkloadKind } from "../../crds/types.ts";
import type { Logger } from "../base/log.ts";
import { resourcePath } from "../../crds/child-kinds.ts";
import { briefError, type KubeClients } from "../kube/clients.ts";
import { RestartingInformer } from "../kube/restarting-informer.ts";

const restartDelayMs = 3_000;

interface KindWatch {
  readonly kind: WorkloadKind;
  readonly source: RestartingInformer<Workload>;
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
    for (const namespace of scopes) for (const kind of workloadKinds) this.watches.push(this.kindWatch(kind, namespace));
  }

  private kindWatch(kind: WorkloadKind, namespace: string | undefined): KindWatch {
    const { clients, watchTimeoutMs, log } = this.settings;
    const plural = plurals[kind];
    const list = async () => {
      const result = (namespace
        ? await clients.custom.listNamespacedCustomObject({ group, version, namespace, plural })
        : await clients.custom.listClusterCustomObject({ group, version, plural })) as { items: Workload[] };
      // List items carry no kind; the sharder's keys want it.
      for (const item of result.items) Object.assign(item, { kind });
      return result;
    };
    const source = new RestartingInformer<Workload>({
      config: clients.config,
      path: resourcePath(apiVersion, plural, namespace),
      list,
      watchTimeoutMs,
      onFailure: (error, phase) => {
        const message = phase === "watch" ? "the sharder's watch failed; restarting" : "the sharder's watch could not start; retrying";
        log.warn(message, { kind, namespace, error: briefError(error), retryInMs: restartDelayMs });
        return restartDelayMs;
      },
    });
    const changed = (object: Workload) => this.onChange({ ...object, kind } as Workload);
    source.cache.on("add", changed);
    source.cache.on("update", changed);
    return { kind, source };
  }

  /** Starts the informers; `onChange` is told of every object added or changed, once the cache holds it. */
  start(onChange: (object: Workload) => void): void {
    this.onChange = onChange;
    for (const watch of this.watches) watch.source.start();
  }

  /**
   * Every object of `kind`, each with its kind; undefined until every informer has listed once
   * (a cache short of objects that exist would count shares wrong, and a placement must not wait
   * on one namespace's cache while another's is complete).
   */
  objects(kind: WorkloadKind): Workload[] | undefined {
    if (!this.watches.every((watch) => watch.source.listed)) return undefined;
    return this.watches.filter((watch) => watch.kind === kind).flatMap((watch) => watch.source.cache.list().map((object) => ({ ...object, kind }) as Workload));
  }

  async stop(): Promise<void> {
    await Promise.all(this.watches.map((watch) => watch.source.stop()));
  }
}
