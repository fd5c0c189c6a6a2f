// What a sharded replica checks before it acts on an object (docs/sharding.md): that it still holds
// its shard Lease (by its own monotonic clock) and that the object, read afresh from the API server,
// is still labelled for it. An object the sharder has drained is let go here: this runs only when
// no operation of the object runs (the queue runs one key at a time), so the old owner has finished
// its operation when it removes the owner and drain labels, and only then may the sharder assign the
// object to another replica. An object that has left this replica's watch (its cache says deleted)
// is forgotten, never destroyed: its stack and children are the new owner's.
import type { Workload } from "../../crds/types.ts";
import type { Logger } from "../base/log.ts";
import { isConflict, keyString, patchWorkload, readWorkload, type KubeClients, type ObjectKey } from "../kube/clients.ts";
import { OperationInterrupted } from "../pulumi/stack-errors.ts";
import { draining, shardDrainLabel, shardOwner, shardOwnerLabel } from "./shard-labels.ts";

/** A label's key in a JSON pointer ("/" is "~1"). */
export function labelPath(label: string): string {
  return `/metadata/labels/${label.replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

export interface ShardFenceSettings {
  readonly clients: KubeClients;
  /** This replica's member name: the owner label's value on its objects. */
  readonly member: string;
  /** Whether this replica holds its shard Lease now, by its own clock. */
  readonly holdsLease: () => boolean;
  readonly log: Logger;
  /** Told of each drain this replica confirmed. */
  readonly onDrained?: () => void;
}

export class ShardFence {
  private readonly settings: ShardFenceSettings;

  constructor(settings: ShardFenceSettings) {
    this.settings = settings;
  }

  get member(): string {
    return this.settings.member;
  }

  /** Throws OperationInterrupted unless this replica holds its shard Lease now. */
  assertLease(): void {
    if (!this.settings.holdsLease()) throw new OperationInterrupted("this replica no longer holds its shard lease");
  }

  /**
   * Whether this replica may act on `key` now (`cached`: its cache's copy, undefined when it left
   * the cache). False for an object another replica owns, one the sharder drained (confirmed here),
   * and one the cache still has that the API server no longer does (its deletion event follows).
   * True for an object deleted for good that this replica's cache had: its stack is forgotten.
   */
  async admit(key: ObjectKey, cached: Workload | undefined): Promise<boolean> {
    this.assertLease();
    const fresh = await readWorkload(this.settings.clients, key);
    if (!fresh) return cached === undefined;
    if (shardOwner(fresh) !== this.settings.member) return false;
    if (!draining(fresh)) return true;
    await this.confirmDrain(key, fresh);
    return false;
  }

  /** Removes the owner and drain labels, only from the object as read (its resourceVersion): the sharder then assigns it. */
  private async confirmDrain(key: ObjectKey, fresh: Workload): Promise<void> {
    this.assertLease();
    try {
      await patchWorkload(this.settings.clients, key, [
        // A patch that names the resourceVersion fails with a conflict when the object changed since.
        { op: "replace", path: "/metadata/resourceVersion", value: fresh.metadata.resourceVersion },
        { op: "remove", path: labelPath(shardOwnerLabel) },
        { op: "remove", path: labelPath(shardDrainLabel) },
      ]);
    } catch (error) {
      // Changed meanwhile: its next event brings the key back here.
      if (isConflict(error)) return;
      throw error;
    }
    this.settings.onDrained?.();
    this.settings.log.info("drained: let the object go to another replica", { object: keyString(key) });
  }
}
