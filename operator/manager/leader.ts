// Leader election on a coordination.k8s.io Lease, as client-go's leaderelection does it: acquire
// when the lease is free or expired, renew every retry period, and give up leadership (the
// process stops reconciling) when renewing has failed for longer than the renew deadline.
// A lease counts as expired only when this replica has seen its record unchanged for a whole
// lease duration by its own clock, never by comparing the holder's renewTime with this clock
// (client-go's rule: safe whatever the clocks of the two machines say). That clock is monotonic:
// a step of the wall clock (NTP, a person) would expire a live holder's lease, or end a leader's.
// The renew deadline counts from when the last successful write was sent: the API server applied
// it at that moment or later, so a standby's lease duration began no earlier.
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from "@kubernetes/client-node";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { apiClient, briefError, isConflict, isNotFound } from "../kube/clients.ts";
import { withinDeadline } from "../base/deadline.ts";
import type { Logger } from "../base/log.ts";

export interface LeaseSettings {
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationSeconds: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** Labels the Lease is created with (a shard Lease names its ring). */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * Give the lease up, without renewing it, when the renewal loop wakes past the renew deadline (the
   * process was frozen). Set when sharded (docs/sharding.md), where others act on a lapsed lease.
   */
  readonly giveUpWhenLapsed?: boolean;
}

export const defaultLeaseTiming = { leaseDurationSeconds: 15, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

export type LeadershipState = "unknown" | "leading" | "following";

/** The Lease calls the elector makes (CoordinationV1Api's), so tests can inject faults. */
export type LeaseApi = Pick<CoordinationV1Api, "readNamespacedLease" | "createNamespacedLease" | "replaceNamespacedLease">;

/** The API of `config`, each call bounded: a lease call must end well within the renew deadline. */
export function leaseApi(config: KubeConfig, settings: Pick<LeaseSettings, "renewDeadlineMs" | "retryPeriodMs">): LeaseApi {
  return apiClient(config, CoordinationV1Api, Math.max(settings.retryPeriodMs, settings.renewDeadlineMs / 2));
}

export class LeaderElector {
  /** Renewing has ended (released or stopped): no more writes to the lease. */
  private stopped = false;
  /** This replica still wants the lease; a leader that stops no longer does, but keeps renewing the lease it holds until it releases it. */
  private contending = true;
  /** The renewal under way, which a release must wait for: it could write the lease back. */
  private renewing: Promise<number | undefined> | undefined;
  /** When (by this replica's clock) the write that won the lease was sent. */
  private acquiredAt: number | undefined;
  /** When (by this replica's clock) the last write that won or renewed the lease was sent. */
  private renewedAt: number | undefined;
  /** The lease record as last seen, and when (by this replica's clock) it last changed. */
  private observed: { record: string; at: number } | undefined;
  state: LeadershipState = "unknown";
  /** Who holds the lease, as last seen. */
  holder: string | undefined;
  /** The last lease call failed: this replica cannot tell who leads (readiness says so). */
  lastError: string | undefined;

  private readonly api: LeaseApi;
  private readonly settings: LeaseSettings;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly observeCall: (result: "success" | "error") => void;

  constructor(
    api: LeaseApi,
    settings: LeaseSettings,
    log: Logger,
    /** A monotonic clock, in ms. */
    now: () => number = () => performance.now(),
    /** Told of every lease call's result: failures are logged only once until the API answers again. */
    observeCall: (result: "success" | "error") => void = () => undefined,
  ) {
    this.api = api;
    this.settings = settings;
    this.log = log;
    this.now = now;
    this.observeCall = observeCall;
  }

  /** Resolves once this process holds the lease (or rejects when stopped first). Errors never end the contest. */
  async acquire(): Promise<void> {
    for (;;) {
      if (this.stopped || !this.contending) throw new Error("leader election stopped before the lease was acquired");
      const sentAt = await this.attempt();
      if (sentAt !== undefined) {
        this.acquiredAt = sentAt;
        this.renewedAt = sentAt;
        this.state = "leading";
        this.log.info("became the leader", { lease: `${this.settings.namespace}/${this.settings.name}`, identity: this.settings.identity });
        return;
      }
      if (this.state !== "following" && !this.lastError) this.log.info("waiting for the lease", { holder: this.holder });
      this.state = "following";
      await sleep(this.settings.retryPeriodMs);
    }
  }

  /** Renews until stopped; calls `onLost` once renewing has failed past the renew deadline. */
  async keepRenewing(onLost: () => void): Promise<void> {
    let lastRenew = this.acquiredAt ?? this.now();
    while (!this.stopped) {
      await sleep(this.settings.retryPeriodMs);
      if (this.stopped) return;
      // Woken past the renew deadline (the process was frozen: SIGSTOP, a paused VM): the lease
      // may have expired for every other replica meanwhile, and what they did since is unknown
      // here. Renewing now would carry on as if nothing happened; client-go's renew context has
      // run out in the same case.
      if (this.settings.giveUpWhenLapsed && this.now() - lastRenew >= this.settings.renewDeadlineMs) {
        this.state = "following";
        this.log.error("the lease lapsed while this process did not run; giving it up", { lapsedMs: Math.round(this.now() - lastRenew) });
        onLost();
        return;
      }
      // A call that hangs must not outlast the deadline it is meant to meet.
      const left = Math.max(1, this.settings.renewDeadlineMs - (this.now() - lastRenew));
      this.renewing = withinDeadline(this.attempt(), left).then((sentAt) => (typeof sentAt === "number" ? sentAt : undefined), () => undefined);
      const renewedAt = await this.renewing;
      // Released meanwhile: nothing of this replica runs any more.
      if (this.stopped) return;
      if (renewedAt !== undefined) {
        lastRenew = renewedAt;
        this.renewedAt = renewedAt;
        continue;
      }
      if (this.now() - lastRenew >= this.settings.renewDeadlineMs) {
        this.state = "following";
        this.log.error("lost the lease", { holder: this.holder, error: this.lastError });
        onLost();
        return;
      }
    }
  }

  /** Hands the lease over at once (on graceful shutdown), so a standby need not wait it out. */
  async release(): Promise<void> {
    this.stopped = true;
    await this.renewing;
    if (this.state !== "leading") return;
    for (let attempt = 1; ; attempt++) {
      try {
        const lease = await this.api.readNamespacedLease({ name: this.settings.name, namespace: this.settings.namespace });
        if (lease.spec?.holderIdentity !== this.settings.identity) break;
        lease.spec = { ...lease.spec, holderIdentity: undefined, leaseDurationSeconds: 1, renewTime: new V1MicroTime() };
        await this.api.replaceNamespacedLease({ name: this.settings.name, namespace: this.settings.namespace, body: lease });
        this.log.info("released the lease");
        break;
      } catch (error) {
        // A conflict means someone wrote the lease between our read and write: read it again.
        if (isConflict(error) && attempt < 3) continue;
        this.log.warn("could not release the lease; it expires by itself", { error: briefError(error) });
        break;
      }
    }
    this.state = "following";
  }

  /**
   * Whether this replica holds the lease now, by its own monotonic clock: renewed within the renew
   * deadline, which ends before the lease can expire for anyone else. Checked before every write
   * that only the holder may make; false from the moment renewing falls behind, frozen or not.
   */
  holdsNow(): boolean {
    return this.state === "leading" && !this.stopped && this.renewedAt !== undefined && this.now() - this.renewedAt < this.settings.renewDeadlineMs;
  }

  /** How long, by this clock, the lease is held from now unless renewed meanwhile; 0 when it is not. */
  remainingMs(): number {
    if (!this.holdsNow() || this.renewedAt === undefined) return 0;
    return this.renewedAt + this.settings.renewDeadlineMs - this.now();
  }

  /**
   * Ends the contest: acquire() gives up and no write takes the lease any more, but a lease held is
   * still renewed (and its loss still reported) until release(). A leader that shuts down keeps its
   * lease until every operation of it is over, so that no standby leads while one still writes.
   */
  stopContending(): void {
    this.contending = false;
  }

  /** Ends the contest and the renewal, without handing the lease over. */
  stop(): void {
    this.contending = false;
    this.stopped = true;
  }

  /** Whether this replica may write the lease now: to renew what it holds, or to take it while it contends. */
  private mayWrite(): boolean {
    return !this.stopped && (this.contending || this.state === "leading");
  }

  /**
   * One try to acquire or renew: when the write that won or renewed the lease was sent, undefined
   * when none did. An API error is a failed try, logged once until the API answers again.
   */
  private async attempt(): Promise<number | undefined> {
    try {
      const sentAt = await this.tryAcquireOrRenew();
      this.observeCall("success");
      if (this.lastError) this.log.info("the lease API answers again");
      this.lastError = undefined;
      return sentAt;
    } catch (error) {
      this.observeCall("error");
      if (!this.lastError) this.log.warn("lease call failed; retrying", { error: briefError(error), retryInMs: this.settings.retryPeriodMs });
      this.lastError = briefError(error);
      return undefined;
    }
  }

  private spec(previous?: V1Lease): V1Lease["spec"] {
    const now = new V1MicroTime();
    const sameHolder = previous?.spec?.holderIdentity === this.settings.identity;
    return {
      holderIdentity: this.settings.identity,
      leaseDurationSeconds: this.settings.leaseDurationSeconds,
      acquireTime: sameHolder && previous?.spec?.acquireTime ? new V1MicroTime(previous.spec.acquireTime) : now,
      renewTime: now,
      leaseTransitions: (previous?.spec?.leaseTransitions ?? 0) + (sameHolder ? 0 : 1),
    };
  }

  /** The first candidate creates the lease; a conflict means another was first. When the winning create was sent, or undefined. */
  private async createLease(): Promise<number | undefined> {
    const { name, namespace } = this.settings;
    if (!this.mayWrite()) return undefined;
    try {
      const sentAt = this.now();
      await this.api.createNamespacedLease({ namespace, body: { metadata: { name, namespace, ...(this.settings.labels ? { labels: { ...this.settings.labels } } : {}) }, spec: this.spec() } });
      this.holder = this.settings.identity;
      return sentAt;
    } catch (error) {
      if (isConflict(error)) return undefined;
      throw error;
    }
  }

  /** Whether the holder has let the lease lapse: its record unchanged for a lease duration, by this clock. */
  private expired(lease: V1Lease): boolean {
    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseDurationSeconds, lease.metadata?.resourceVersion]);
    if (this.observed?.record !== record) this.observed = { record, at: this.now() };
    return this.now() - this.observed.at > (spec.leaseDurationSeconds ?? 0) * 1000;
  }

  /** When the write that won or renewed the lease was sent; undefined when this replica does not hold it. */
  private async tryAcquireOrRenew(): Promise<number | undefined> {
    const { name, namespace } = this.settings;
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return this.createLease();
    }
    this.holder = lease.spec?.holderIdentity ?? undefined;
    if (this.holder && this.holder !== this.settings.identity && !this.expired(lease)) return undefined;
    // Stopped while reading: a write now would take back a lease that was just released, or take
    // one that this stopping replica no longer wants.
    if (!this.mayWrite()) return undefined;
    try {
      const sentAt = this.now();
      // resourceVersion in the body makes this a compare-and-swap: one winner when two race.
      await this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec: this.spec(lease) } });
      this.holder = this.settings.identity;
      return sentAt;
    } catch (error) {
      if (isConflict(error)) return undefined;
      throw error;
    }
  }
}
