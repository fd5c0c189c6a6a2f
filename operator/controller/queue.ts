// The work queue, after client-go's workqueue: one item per key however many events arrive, never
// two workers on one key, at most `concurrency` keys at once, and failed keys retried after a
// capped exponential backoff. A change to the object or to its children's spec runs a key in backoff
// at once, as in client-go; a change only the status reports (a pod getting ready, or crashing
// again) and the periodic resync wait for the retry, or a failing object would retry on every one.
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface QueueOptions {
  readonly concurrency: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly clock?: Clock;
  /** Collect keys but run none until `start()`: the caches the handler reads are not synced yet. */
  readonly paused?: boolean;
}

export interface Backoff {
  /** The attempt a failure now would count as (1 for the first failure). */
  readonly attempt: number;
  readonly delayMs: number;
}

/**
 * What a run of the handler that did not fail came to, when it is not simply done: to be run again
 * shortly (`requeued`: another object of its name is reconciling, the cache is behind the API
 * server, an applied approval is still to be removed), waiting on another engine's stack
 * lock (`locked`); a stack forgotten instead of destroyed (`forgotten`); an operation stopped for
 * the handover (`interrupted`: the next leader carries on); an object another replica
 * owns, or that this one has just drained (`moved`: sharding); a status that time alone changes
 * (`recheck`: pods that cannot start turn the object Stalled once they have waited out the bound).
 */
export type Outcome = "requeued" | "locked" | "forgotten" | "interrupted" | "moved" | "recheck";

/** Result of one run of the handler: nothing (done), or what it came to, and when to run the key again. */
export type HandlerResult = void | { readonly outcome: Outcome; readonly requeueAfterMs?: number };
export type Handler = (key: string) => Promise<HandlerResult>;

export class WorkQueue {
  private readonly clock: Clock;
  private readonly ready: string[] = [];
  private readonly queued = new Set<string>();
  private readonly running = new Set<string>();
  /**
   * Keys whose events arrived while they were running: they run again afterwards, at once for a
   * change (`add`), unless a retry is due by then for a status change (`addUnlessWaiting`).
   */
  private readonly dirty = new Map<string, "change" | "status">();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, unknown>();
  private idleWaiters: (() => void)[] = [];
  private stopped = false;
  private paused: boolean;

  private readonly handler: Handler;
  private readonly options: QueueOptions;

  constructor(
    handler: Handler,
    options: QueueOptions,
  ) {
    this.handler = handler;
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.paused = options.paused ?? false;
  }

  /** Starts running the keys collected while paused. */
  start(): void {
    this.paused = false;
    this.pump();
  }

  get depth(): number {
    return this.ready.length;
  }

  get active(): number {
    return this.running.size;
  }

  /** A change to act on: runs `key` soon, cutting short any backoff (the change may be its fix). */
  add(key: string): void {
    if (this.stopped) return;
    if (this.running.has(key)) {
      this.dirty.set(key, "change");
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.ready.push(key);
    this.pump();
  }

  /**
   * Something worth a run that does not change what a retry would do (a child's status): runs
   * `key` unless it waits for a retry, which then sees the change too.
   */
  addUnlessWaiting(key: string): void {
    if (this.stopped) return;
    if (this.running.has(key)) {
      if (!this.dirty.has(key)) this.dirty.set(key, "status");
      return;
    }
    if (!this.timers.has(key)) this.add(key);
  }

  /**
   * The periodic resync: adds every key but those waiting for a retry. An event cuts a backoff
   * short (something changed); a timer must not, or a failing object would retry every period.
   */
  resync(keys: Iterable<string>): void {
    for (const key of keys) this.addUnlessWaiting(key);
  }

  /** Adds `key` once `ms` have passed; an earlier add of the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    this.cancelTimer(key);
    this.timers.set(key, this.clock.setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms));
  }

  peekBackoff(key: string): Backoff {
    const attempt = (this.failures.get(key) ?? 0) + 1;
    const delayMs = Math.min(this.options.baseDelayMs * 2 ** (attempt - 1), this.options.maxDelayMs);
    return { attempt, delayMs };
  }

  attempts(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Stops taking work; resolves when the running handlers have finished. */
  async shutdown(): Promise<void> {
    this.stopped = true;
    for (const handle of this.timers.values()) this.clock.clearTimeout(handle);
    this.timers.clear();
    this.ready.length = 0;
    this.queued.clear();
    await this.idle();
  }

  /** Resolves once nothing runs and nothing is ready to run (timers may still be pending). */
  idle(): Promise<void> {
    if (this.running.size === 0 && this.ready.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (!this.stopped && !this.paused && this.running.size < this.options.concurrency && this.ready.length > 0) {
      const key = this.ready.shift()!;
      this.queued.delete(key);
      // This run does what a pending retry would: the retry goes, and the run's end sets the next.
      this.cancelTimer(key);
      this.running.add(key);
      void this.process(key);
    }
    if (this.running.size === 0 && this.ready.length === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  private async process(key: string): Promise<void> {
    try {
      const result = await this.handler(key);
      this.failures.delete(key);
      if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
    } catch {
      const { attempt, delayMs } = this.peekBackoff(key);
      this.failures.set(key, attempt);
      this.addAfter(key, delayMs);
    } finally {
      this.running.delete(key);
      const dirty = this.dirty.get(key);
      this.dirty.delete(key);
      if (dirty === "change") this.add(key);
      else if (dirty === "status") this.addUnlessWaiting(key);
      this.pump();
    }
  }

  private cancelTimer(key: string): void {
    const handle = this.timers.get(key);
    if (handle === undefined) return;
    this.clock.clearTimeout(handle);
    this.timers.delete(key);
  }
}
