// The write fence of a sharded replica (docs/sharding.md): once it no longer holds its shard lease
// by its own clock, no write of any client made from its KubeConfig is sent, and a write still in
// flight is aborted (clients.ts sends every request through it).
import type { KubeConfig } from "@kubernetes/client-node";

/**
 * A write refused before it was sent, or aborted while in flight: the KubeConfig's writes are
 * fenced (fenceWrites), as a sharded replica's are once it no longer holds its shard lease by its
 * own clock.
 */
export class WriteFenced extends Error {
  constructor(method: string, reason: string, inFlight = false) {
    super(`${method} ${inFlight ? "aborted in flight" : "not sent"}: ${reason}`);
    this.name = "WriteFenced";
  }
}

/**
 * A KubeConfig's write fence: why its writes may not be sent now (undefined while they may), and,
 * optionally, how long they may still be sent from now (the shard lease's time left by this
 * replica's clock). A write still in flight when that time is up, and the lease not renewed by
 * then, is aborted: a request sent in time but stuck on a stalled connection would otherwise land
 * after another replica may act on the object.
 */
export interface WriteFence {
  readonly fenced: () => string | undefined;
  readonly remainingMs?: () => number;
}

/** Per KubeConfig: its write fence. */
const writeFences = new WeakMap<KubeConfig, WriteFence>();

/** The write fence of `config`, if it has one. */
export function writeFenceOf(config: KubeConfig): WriteFence | undefined {
  return writeFences.get(config);
}

/**
 * Every request but a read of every client made from `config`, now and later, is checked against
 * `fence` right before it is sent, and refused with WriteFenced while it names a reason. One
 * fence for every write path (status, children's server-side apply, finalizers, Events, RBAC
 * bindings): a process frozen between a check and its write, once it resumes, sends none. With
 * `remainingMs`, a write in flight when the time is up is aborted with WriteFenced.
 */
export function fenceWrites(config: KubeConfig, fence: WriteFence | (() => string | undefined)): void {
  writeFences.set(config, typeof fence === "function" ? { fenced: fence } : fence);
}

/**
 * The signal a fenced write is sent with: aborted at the request's deadline, or when the fence's
 * time is up and the fence then names a reason. Checked again at each expiry while the fence is
 * renewed; the checks end with the request's deadline at the latest.
 */
export function fencedSignal(fence: WriteFence, method: string, deadline: AbortSignal): AbortSignal {
  const { remainingMs } = fence;
  if (!remainingMs) return deadline;
  const lapsed = new AbortController();
  const check = () => {
    if (deadline.aborted) return;
    const reason = fence.fenced();
    if (reason) return lapsed.abort(new WriteFenced(method, reason, true));
    setTimeout(check, Math.max(1, remainingMs())).unref();
  };
  setTimeout(check, Math.max(1, remainingMs())).unref();
  return AbortSignal.any([deadline, lapsed.signal]);
}

