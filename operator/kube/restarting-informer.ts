// One informer that starts again whenever it fails. client-node's ListWatch stops for good on any
// error but 410 Gone (which it relists by itself), and its start can fail outright (no list, no
// watch); its owner has to restart it, after a pause the owner chooses (a forbidden namespace backs
// off longer than a dropped connection). The reconciler's caches (controller/watch.ts) and the
// sharder's (manager/workload-cache.ts) are both made of these.
import { ListWatch, type Informer, type KubeConfig, type KubernetesListObject, type KubernetesObject, type ObjectCache } from "@kubernetes/client-node";
import { BoundedWatch } from "./bounded-watch.ts";

/** How long past the watch's timeout its end may take to arrive before the connection is taken for dead. */
const maxWatchGraceMs = 15_000;

export type Cached<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

/** Where a failure came from: the running informer's error event, or a start that failed outright. */
export type FailurePhase = "watch" | "start";

export interface RestartingInformerSettings {
  readonly config: KubeConfig;
  /** The resource's path, as the watch requests it. */
  readonly path: string;
  /** Lists the resource; the informer fills its cache from the result. */
  readonly list: () => Promise<unknown>;
  readonly labelSelector?: string;
  /** How long the API server keeps one watch open (kube/bounded-watch.ts). */
  readonly watchTimeoutMs: number;
  /** Told each time the cache holds a whole new list. */
  readonly onListed?: () => void;
  /** Told of each watch the API server accepts: a restarted informer that has listed before only watches. */
  readonly onWatchOpened?: () => void;
  /** Told of each failure while running; returns how long to wait before the restart. */
  readonly onFailure: (error: unknown, phase: FailurePhase) => number;
}

export class RestartingInformer<T extends KubernetesObject> {
  /** The informer's cache and events: handlers are added here. */
  readonly cache: Cached<T>;
  /** Whether the cache has held a whole list at least once. */
  listed = false;
  private readonly connection: BoundedWatch;
  private readonly onFailure: RestartingInformerSettings["onFailure"];
  private restart?: NodeJS.Timeout;
  private stopped = false;

  constructor(settings: RestartingInformerSettings) {
    const { config, path, list, labelSelector, watchTimeoutMs, onListed, onWatchOpened } = settings;
    this.onFailure = settings.onFailure;
    const tracked = async () => {
      const result = await list();
      // The informer fills its cache from the result once this returns: count it as listed after
      // that, not before.
      setImmediate(() => {
        this.listed = true;
        onListed?.();
      });
      return result as KubernetesListObject<T>;
    };
    const bounds = { timeoutMs: watchTimeoutMs, graceMs: Math.min(maxWatchGraceMs, watchTimeoutMs) };
    this.connection = new BoundedWatch(config, bounds, onWatchOpened);
    this.cache = new ListWatch<T>(path, this.connection, tracked, false, labelSelector);
    this.cache.on("error", (error: unknown) => this.failed(error, "watch"));
  }

  /** Starts the informer; it runs, restarting after each failure, until `stop`. */
  start(): void {
    this.cache.start().catch((error: unknown) => this.failed(error, "start"));
  }

  private failed(error: unknown, phase: FailurePhase): void {
    if (this.stopped) return;
    const delayMs = this.onFailure(error, phase);
    clearTimeout(this.restart);
    this.restart = setTimeout(() => {
      if (!this.stopped) this.start();
    }, delayMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restart);
    await this.cache.stop();
    // Including a watch still connecting, which the informer cannot abort.
    this.connection.close();
  }
}
