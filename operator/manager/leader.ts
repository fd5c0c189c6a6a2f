// Leader election on a coordination.k8s.io Lease, as client-go's leaderelection does it: acquire
// when the lease is free or expired, renew every retry period, and give up leadership (the
// process stops reconciling) when renewing has failed for longer than the renew deadline.
import { CoordinationV1Api, V1MicroTime, type V1Lease } from "@kubernetes/client-node";
import { setTimeout as sleep } from "node:timers/promises";
import { isConflict, isNotFound, type KubeClients } from "../kube/clients.ts";
import type { Logger } from "./log.ts";

export interface LeaseSettings {
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationSeconds: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

export const defaultLeaseTiming = { leaseDurationSeconds: 15, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

export type LeadershipState = "unknown" | "leading" | "following";

export class LeaderElector {
  private readonly api: CoordinationV1Api;
  private stopped = false;
  /** The renewal under way, which a release must wait for: it could write the lease back. */
  private renewing: Promise<boolean> | undefined;
  state: LeadershipState = "unknown";
  /** Who holds the lease, as last seen. */
  holder: string | undefined;

  constructor(
    clients: KubeClients,
    private readonly settings: LeaseSettings,
    private readonly log: Logger,
  ) {
    this.api = clients.config.makeApiClient(CoordinationV1Api);
  }

  /** Resolves once this process holds the lease (or rejects when stopped first). */
  async acquire(): Promise<void> {
    for (;;) {
      if (this.stopped) throw new Error("leader election stopped before the lease was acquired");
      if (await this.tryAcquireOrRenew()) {
        this.state = "leading";
        this.log.info("became the leader", { lease: `${this.settings.namespace}/${this.settings.name}`, identity: this.settings.identity });
        return;
      }
      if (this.state !== "following") this.log.info("waiting for the lease", { holder: this.holder });
      this.state = "following";
      await sleep(this.settings.retryPeriodMs);
    }
  }

  /** Renews until stopped; calls `onLost` once renewing has failed past the renew deadline. */
  async keepRenewing(onLost: () => void): Promise<void> {
    let lastRenew = Date.now();
    while (!this.stopped) {
      await sleep(this.settings.retryPeriodMs);
      if (this.stopped) return;
      this.renewing = this.tryAcquireOrRenew().catch(() => false);
      if (await this.renewing) {
        lastRenew = Date.now();
        continue;
      }
      if (Date.now() - lastRenew > this.settings.renewDeadlineMs) {
        this.state = "following";
        this.log.error("lost the lease", { holder: this.holder });
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
        this.log.warn("could not release the lease; it expires by itself", { error: String(error) });
        break;
      }
    }
    this.state = "following";
  }

  stop(): void {
    this.stopped = true;
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

  /** The first candidate creates the lease; a conflict means another was first. */
  private async createLease(): Promise<boolean> {
    const { name, namespace } = this.settings;
    if (this.stopped) return false;
    try {
      await this.api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec: this.spec() } });
      this.holder = this.settings.identity;
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { name, namespace } = this.settings;
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return this.createLease();
    }
    this.holder = lease.spec?.holderIdentity ?? undefined;
    const renewedAt = lease.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : 0;
    const expired = renewedAt + (lease.spec?.leaseDurationSeconds ?? 0) * 1000 < Date.now();
    if (this.holder && this.holder !== this.settings.identity && !expired) return false;
    // Stopped while reading: a write now would take back a lease that was just released.
    if (this.stopped) return false;
    try {
      // resourceVersion in the body makes this a compare-and-swap: one winner when two race.
      await this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec: this.spec(lease) } });
      this.holder = this.settings.identity;
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  }
}
