// The sharder, run by the leader: every period it lists the shard Leases, reads every object from its
// cache (workload-cache.ts), builds the ring of the live replicas, and writes each object's owner or
// drain label as assignment.ts decides. Each write names the resourceVersion read, so a write
// crossing an owner's confirmation fails and waits for the next pass. A write refused otherwise (a
// webhook down, a policy, an invalid object) leaves that object alone, not the pass: it is logged,
// counted, and tried again after a backoff, sooner if it changes. Objects get their owner only
// here (no webhook labels them at creation): an object that arrives, or loses its owner, wakes the
// sharder for a pass at once, so it waits for about one pass rather than one period.
import { CoordinationV1Api, type V1Lease } from "@kubernetes/client-node";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { workloadKinds } from "../../components/kinds.ts";
import type { Workload, WorkloadKind } from "../../crds/types.ts";
import type { Logger } from "../base/log.ts";
import { labelPath } from "../controller/shard-fence.ts";
import { httpStatusOf } from "../controller/namespace-availability.ts";
import { draining, memberName, ringKey, shardDrainLabel, shardOwner, shardOwnerLabel, shardRingLabel } from "../controller/shard-labels.ts";
import { apiClient, briefError, isConflict, isNotFound, keyString, patchWorkload, type JsonPatch, type KubeClients, type ObjectKey } from "../kube/clients.ts";
import { assign } from "./assignment.ts";
import { HashRing } from "./ring.ts";
import type { ShardMetrics } from "./shard-metrics.ts";
import { WorkloadCache } from "./workload-cache.ts";

export interface SharderSettings {
  readonly clients: KubeClients;
  readonly namespaces: readonly string[] | "all";
  /** Where the shard Leases are, and the ring's name (their label's value). */
  readonly leaseNamespace: string;
  readonly ring: string;
  readonly periodMs: number;
  /** Whether this replica holds the leader Lease now, by its own clock: asked before every write (a sharder frozen past it writes nothing). */
  readonly leading: () => boolean;
  readonly log: Logger;
  readonly metrics?: ShardMetrics;
  /** The Lease calls (tests inject fakes); by default CoordinationV1Api's. */
  readonly leases?: LeaseCalls;
  /** A monotonic clock, in ms. */
  readonly now?: () => number;
  /** How long the API server keeps one watch of the objects' cache open. */
  readonly watchTimeoutMs?: number;
  /** Where the objects come from (tests inject fakes); by default a WorkloadCache, its informers started with the sharder. */
  readonly objects?: ObjectSource;
}

export interface ObjectSource {
  /** Every object of `kind` in the sharder's namespaces, each with its kind; undefined while not known in full. */
  objects(kind: WorkloadKind): Workload[] | undefined;
  /** `onChange` is told of every object added or changed, once `objects` holds it. */
  start(onChange: (object: Workload) => void): void;
  stop(): Promise<void>;
}

/** The least time between two passes, however often objects arrive: a burst of new objects is placed in batches. */
const minPassGapMs = 100;

/** How long an object whose label write failed waits to be tried again: doubled at each failure in a row, up to the most. */
const retryBaseMs = 1_000;
const retryMaxMs = 30_000;

/** An object's label write that failed: tried again at `retryAt` (by the sharder's clock), or as soon as the object changes. */
interface Failure {
  readonly attempts: number;
  readonly resourceVersion: string | undefined;
  readonly retryAt: number;
}

export type LeaseCalls = Pick<CoordinationV1Api, "listNamespacedLease" | "deleteNamespacedLease">;

export class Sharder {
  private readonly settings: SharderSettings;
  private readonly leases: LeaseCalls;
  private readonly now: () => number;
  /** Per Lease: its record as last seen, and when (by this clock) it last changed: client-go's expiry rule, as leader.ts. */
  private readonly observed = new Map<string, { record: string; at: number }>();
  /** Per object key: when this sharder set its drain label. */
  private readonly drainsStarted = new Map<string, number>();
  /** Per object key: its last failed write, while it waits for its retry. Made anew each pass, so an object gone from the cache drops out. */
  private failures = new Map<string, Failure>();
  private readonly source: ObjectSource;
  private stopped = false;
  private running: Promise<void> | undefined;
  /** Ends the wait between passes early: something arrived that wants placing. */
  private wake: (() => void) | undefined;
  /** Something wanted placing while no wait was under way (during a pass): the next wait is the shortest. */
  private wakeAsked = false;

  constructor(settings: SharderSettings) {
    this.settings = settings;
    this.leases = settings.leases ?? apiClient(settings.clients.config, CoordinationV1Api);
    this.now = settings.now ?? (() => performance.now());
    this.source = settings.objects ?? new WorkloadCache({
      clients: settings.clients,
      namespaces: settings.namespaces,
      watchTimeoutMs: settings.watchTimeoutMs ?? 60_000,
      log: settings.log,
    });
  }

  start(): void {
    // An object without an owner (new, or drained and let go) is placed at once.
    this.source.start((object) => {
      if (!shardOwner(object)) this.wakeUp();
    });
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp();
    await this.running;
    await this.source.stop();
  }

  private wakeUp(): void {
    this.wakeAsked = true;
    this.wake?.();
  }

  /** The time to the next pass: a period, or less when a failed object's retry is due sooner. */
  private untilNextPass(): number {
    const now = this.now();
    let waitMs = this.settings.periodMs;
    for (const { retryAt } of this.failures.values()) waitMs = Math.min(waitMs, retryAt - now);
    return waitMs;
  }

  /** Until the next pass is due or something wakes the sharder, but at least `minPassGapMs`. */
  private async pause(): Promise<void> {
    const waitMs = this.untilNextPass();
    await sleep(minPassGapMs);
    if (!this.stopped && !this.wakeAsked) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        timer = setTimeout(resolve, Math.max(0, waitMs - minPassGapMs));
      });
      clearTimeout(timer);
      this.wake = undefined;
    }
    this.wakeAsked = false;
  }

  private async loop(): Promise<void> {
    let failing = false;
    while (!this.stopped) {
      try {
        await this.pass();
        if (failing) this.settings.log.info("the sharder's pass succeeds again");
        failing = false;
      } catch (error) {
        if (!failing) this.settings.log.warn("the sharder's pass failed; retrying", { error: briefError(error) });
        failing = true;
      }
      await this.pause();
    }
  }

  /** The members whose shard Lease is held and renewed, and the dead Leases: released, or unchanged for a lease duration by this clock. */
  private alive(leases: readonly V1Lease[]): { members: Set<string>; dead: V1Lease[] } {
    const members = new Set<string>();
    const dead: V1Lease[] = [];
    const now = this.now();
    for (const lease of leases) {
      const spec = lease.spec ?? {};
      const name = lease.metadata?.name ?? "";
      const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseDurationSeconds, lease.metadata?.resourceVersion]);
      const seen = this.observed.get(name);
      if (seen?.record !== record) this.observed.set(name, { record, at: now });
      const expired = now - (this.observed.get(name)?.at ?? now) > (spec.leaseDurationSeconds ?? 0) * 1000;
      if (spec.holderIdentity && !expired) members.add(memberName(spec.holderIdentity));
      else dead.push(lease);
    }
    return { members, dead };
  }

  /**
   * Deletes the Leases of dead members (each restart of a replica is a new member): a missing Lease
   * says dead as well, and its holder, had it lived on unrenewed, has given its lease up by now (its
   * renew deadline is shorter than the lease). The resourceVersion read makes a renewal win.
   */
  private async forget(dead: readonly V1Lease[]): Promise<void> {
    for (const lease of dead) {
      const name = lease.metadata?.name ?? "";
      this.assertLeading();
      try {
        await this.leases.deleteNamespacedLease({ name, namespace: this.settings.leaseNamespace, body: { preconditions: { resourceVersion: lease.metadata?.resourceVersion } } });
        this.settings.log.info("deleted the shard lease of a dead replica", { lease: name, holder: lease.spec?.holderIdentity });
      } catch (error) {
        if (!isConflict(error) && !isNotFound(error)) throw error;
      }
      this.observed.delete(name);
    }
  }

  /** One pass: every object's owner as the ring of live members wants it, drained first where its owner lives. */
  async pass(): Promise<void> {
    const leases = (await this.leases.listNamespacedLease({ namespace: this.settings.leaseNamespace, labelSelector: `${shardRingLabel}=${this.settings.ring}` })).items;
    const { members: alive, dead } = this.alive(leases);
    const ring = new HashRing(alive);
    const sizes = new Map<string, number>();
    const objects = workloadKinds().map((kind) => [kind, this.source.objects(kind)] as const);
    // Until the cache holds every object, shares cannot be counted and nothing is placed.
    if (objects.some(([, known]) => known === undefined)) return;
    const failedBefore = this.failures;
    this.failures = new Map();
    for (const [kind, known] of objects) for (const object of known!) await this.place(kind, object, ring, alive, sizes, failedBefore);
    await this.forget(dead);
    this.settings.metrics?.members.set(alive.size);
    this.settings.metrics?.assigned.reset();
    for (const [shard, count] of sizes) this.settings.metrics?.assigned.set({ shard }, count);
  }

  /** Throws unless this replica leads now: two sharders must not write at once. */
  private assertLeading(): void {
    if (!this.settings.leading()) throw new Error("no longer the leader; the sharder writes nothing");
  }

  /**
   * Assigns or drains one object as the ring wants it; counts it in its owner's share. A failed
   * write fails this object only (`failedBefore`: the failures of the pass before, whose retries may
   * not be due yet); only a sharder that no longer leads stops the pass.
   */
  private async place(kind: WorkloadKind, object: Workload, ring: HashRing, alive: ReadonlySet<string>, sizes: Map<string, number>, failedBefore: ReadonlyMap<string, Failure>): Promise<void> {
    const { namespace = "", name } = object.metadata;
    const decision = assign({ owner: shardOwner(object), draining: draining(object) }, ringKey(kind, namespace, name), ring, alive);
    const owner = decision.action === "assign" ? decision.to : shardOwner(object);
    if (owner) sizes.set(owner, (sizes.get(owner) ?? 0) + 1);
    if (decision.action === "none") return;
    const target = { kind, namespace, name };
    const key = keyString(target);
    const failure = failedBefore.get(key);
    // Waiting for its retry, unless it changed since it failed (the change may be its fix).
    if (failure && failure.resourceVersion === object.metadata.resourceVersion && this.now() < failure.retryAt) {
      this.failures.set(key, failure);
      return;
    }
    this.assertLeading();
    try {
      if (decision.action === "drain") await this.drain(object, target);
      else await this.assignTo(object, target, decision.to, decision.reason);
    } catch (error) {
      this.failed(key, object, decision.action, error, failure);
    }
  }

  /**
   * A write refused: an object deleted since the list (404) is done with, and one changed since
   * (409: its owner confirmed a drain, a person edited it) is seen anew by the next pass. Any other
   * refusal (a webhook down, a policy, 422) is logged and counted, and retried after a backoff.
   */
  private failed(key: string, object: Workload, action: "assign" | "drain", error: unknown, before: Failure | undefined): void {
    const code = httpStatusOf(error);
    if (code === 404 || code === 409) return;
    const attempts = (before?.attempts ?? 0) + 1;
    const retryInMs = Math.min(retryBaseMs * 2 ** (attempts - 1), retryMaxMs);
    this.failures.set(key, { attempts, resourceVersion: object.metadata.resourceVersion, retryAt: this.now() + retryInMs });
    this.settings.metrics?.placementFailures.inc({ code: code === undefined ? "none" : String(code) });
    this.settings.log.warn("could not label an object for its shard; retrying", { object: key, action, attempt: attempts, retryInMs, error: briefError(error) });
  }

  private async drain(object: Workload, target: ObjectKey): Promise<void> {
    const key = keyString(target);
    await patchWorkload(this.settings.clients, target, [
      { op: "replace", path: "/metadata/resourceVersion", value: object.metadata.resourceVersion },
      { op: "add", path: labelPath(shardDrainLabel), value: "true" },
    ]);
    this.drainsStarted.set(key, this.now());
    this.settings.log.info("draining an object from its owner", { object: key, owner: shardOwner(object) });
  }

  private async assignTo(object: Workload, target: ObjectKey, to: string, reason: "new" | "owner-gone"): Promise<void> {
    const key = keyString(target);
    const labels = object.metadata.labels ?? {};
    const patch: JsonPatch = [{ op: "replace", path: "/metadata/resourceVersion", value: object.metadata.resourceVersion }];
    if (!object.metadata.labels) patch.push({ op: "add", path: "/metadata/labels", value: {} });
    patch.push({ op: "add", path: labelPath(shardOwnerLabel), value: to });
    if (labels[shardDrainLabel] !== undefined) patch.push({ op: "remove", path: labelPath(shardDrainLabel) });
    await patchWorkload(this.settings.clients, target, patch);
    const drainedAt = this.drainsStarted.get(key);
    this.drainsStarted.delete(key);
    const why = drainedAt !== undefined && reason === "new" ? "drained" : reason;
    if (why === "drained") this.settings.metrics?.drainSeconds.observe((this.now() - drainedAt!) / 1000);
    this.settings.metrics?.moves.inc({ reason: why });
    this.settings.log.info("assigned an object", { object: key, to, from: shardOwner(object), why });
  }
}
