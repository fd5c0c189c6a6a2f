// When each App of a namespace became Ready at the generation a round wrote, as a watch tells it.
// The bench's clock must not load the API server it measures: a list of every App every 250 ms
// did, for longer in the slower reconciler's round (at 1,000 Apps, four lists of every object a
// second), and it read a time only to the nearest 250 ms.
import { makeInformer, type Informer, type ObjectCache } from "@kubernetes/client-node";
import type { App } from "../../components/app.ts";
import type { KubeClients } from "../../operator/kube/clients.ts";
import { resourceOf } from "../../components/kinds.ts";

export const appsApi = resourceOf("App");

export function isReadyAt(app: App, generation: number): boolean {
  const ready = app.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
  const current = app.status?.observedGeneration === app.metadata.generation;
  return ready && current && (app.metadata.generation ?? 0) >= generation;
}

export class ReadyWatch {
  /** Each awaited App's name, with the generation that must be Ready and when it was written. */
  private readonly awaited = new Map<string, { generation: number; writtenAt: number }>();
  /** When each awaited App was first seen Ready at its generation. */
  readonly readyAt = new Map<string, number>();
  private allReady: (() => void) | undefined;
  private stopped = false;

  private readonly informer: Informer<App> & ObjectCache<App>;
  private readonly namespace: string;

  private constructor(informer: Informer<App> & ObjectCache<App>, namespace: string) {
    this.informer = informer;
    this.namespace = namespace;
    const seen = (app: App) => this.check(app);
    informer.on("add", seen);
    informer.on("update", seen);
    // An informer stops at its first error (a watch the API server ended); it starts again and
    // lists, so nothing is missed.
    informer.on("error", () => setTimeout(() => void (this.stopped ? undefined : informer.start()), 1_000));
  }

  /** Watching `namespace`, its cache filled. */
  static async start(clients: KubeClients, namespace: string): Promise<ReadyWatch> {
    const path = `/apis/${appsApi.group}/${appsApi.version}/namespaces/${namespace}/${appsApi.plural}`;
    const list = () => clients.custom.listNamespacedCustomObject({ ...appsApi, namespace });
    const watch = new ReadyWatch(makeInformer<App>(clients.config, path, list as never), namespace);
    await watch.informer.start();
    return watch;
  }

  /** `name` was written at `writtenAt` and is awaited Ready at `generation` (its cached state counts too). */
  expect(name: string, generation: number, writtenAt: number): void {
    this.awaited.set(name, { generation, writtenAt });
    const cached = this.informer.get(name, this.namespace);
    if (cached) this.check(cached);
  }

  /** Until every awaited App is Ready; throws past `deadlineMs`. */
  async untilAllReady(deadlineMs: number): Promise<void> {
    if (this.readyAt.size === this.awaited.size) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        new Promise<void>((resolve) => (this.allReady = resolve)),
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`only ${this.readyAt.size} of ${this.awaited.size} Ready after ${deadlineMs / 60_000} minutes`)), deadlineMs))),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Seconds from each App's write to its Ready, in order. */
  secondsToReady(): number[] {
    return [...this.readyAt].map(([name, at]) => (at - this.awaited.get(name)!.writtenAt) / 1000).sort((a, b) => a - b);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
  }

  private check(app: App): void {
    const name = app.metadata.name;
    const awaited = this.awaited.get(name);
    if (!awaited || this.readyAt.has(name) || !isReadyAt(app, awaited.generation)) return;
    this.readyAt.set(name, Date.now());
    if (this.readyAt.size === this.awaited.size) this.allReady?.();
  }
}
