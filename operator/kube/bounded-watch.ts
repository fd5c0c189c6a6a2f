// A watch that cannot outlive its connection. client-node's Watch sets no deadline (it replaces its
// own timeout signal with its abort signal) and asks the API server for none, so a connection left
// half-open (a peer gone without a reset, a NAT that forgot it) keeps an informer waiting for
// ever while its cache goes stale. This one asks the API server to end each watch after
// `timeoutMs` (`timeoutSeconds`, as client-go's reflector does; the informer then resumes from its
// last resource version, which bookmarks keep recent, or lists again if that is too old), and
// when that end has not come `graceMs` later, takes the connection for dead: it closes it and
// ends the watch with an error, which the informer's owner logs before it restarts the watch.
//
// `close()` ends every watch, open or still connecting, for good: client-node's informer cannot
// abort a watch whose request has not been answered yet (nor one it starts after a list that was
// under way when it was stopped), and such a connection would keep a stopping process alive.
import type { Agent } from "node:http";
import { Watch, type KubeConfig } from "@kubernetes/client-node";

type QueryParams = Record<string, string | number | boolean | undefined>;
type Callback = (phase: string, apiObj: unknown, watchObj?: unknown) => void;

export class WatchExpired extends Error {
  constructor(path: string, waitedMs: number) {
    super(`the watch of ${path} has not ended ${waitedMs / 1000} s after it began, though the API server was asked to end it sooner: its connection is taken for dead`);
    this.name = "WatchExpired";
  }
}

export interface WatchBounds {
  /** How long the API server keeps a watch open. */
  readonly timeoutMs: number;
  /** How long past that a watch may go on before its connection is taken for dead. */
  readonly graceMs: number;
}

export class BoundedWatch extends Watch {
  private readonly bounds: WatchBounds;
  /** Ends each open watch: its `done` is told, its connection closed. */
  private readonly open = new Set<(error: Error) => void>();
  private closed = false;
  private readonly onOpen: (() => void) | undefined;

  /** `onOpen`: told of each watch the API server accepted (answered 200), as proof that the path is readable. */
  constructor(config: KubeConfig, bounds: WatchBounds, onOpen?: () => void) {
    super(config);
    this.bounds = bounds;
    this.onOpen = onOpen;
  }

  /** Ends every watch and opens none from now on. */
  close(): void {
    this.closed = true;
    for (const end of this.open) end(new Error("the watch was closed"));
  }

  override async watch(path: string, queryParams: QueryParams, callback: Callback, done: (err: unknown) => void): Promise<AbortController> {
    if (this.closed) return new AbortController();
    let agent: Agent | undefined;
    let ended = false;
    const end = (error: unknown) => {
      if (ended) return;
      ended = true;
      clearTimeout(watchdog);
      this.open.delete(endAndClose);
      done(error);
    };
    const endAndClose = (error: Error) => {
      end(error);
      agent?.destroy();
    };
    // The Watch asks the config for its connection options once per watch, and the agent it gets
    // (a new one each time) carries only this watch's connection: destroying it closes that one.
    const config = this.config;
    const perWatch = {
      getCurrentCluster: () => config.getCurrentCluster(),
      applyToFetchOptions: async (options: object) => {
        const fetchOptions = await config.applyToFetchOptions(options);
        // Ended while the options were being made: no connection at all.
        if (ended) throw new Error("the watch ended before it connected");
        agent = fetchOptions.agent as Agent | undefined;
        return fetchOptions;
      },
    } as unknown as KubeConfig;
    const waitMs = this.bounds.timeoutMs + this.bounds.graceMs;
    const watchdog = setTimeout(() => endAndClose(new WatchExpired(path, waitMs)), waitMs);
    // A watchdog alone must not keep a stopping process alive.
    watchdog.unref();
    this.open.add(endAndClose);
    const bounded = { ...queryParams, timeoutSeconds: Math.max(1, Math.round(this.bounds.timeoutMs / 1000)), allowWatchBookmarks: true };
    try {
      const controller = await new Watch(perWatch).watch(path, bounded, (phase, object, raw) => {
        if (!ended) callback(phase, object, raw);
      }, end);
      // Not ended by then: the API server answered 200 and the stream is open.
      if (!ended) this.onOpen?.();
      return controller;
    } catch (error) {
      // The config's options failed (a credential plugin, a token file): no connection was opened.
      end(error);
      return new AbortController();
    }
  }
}
