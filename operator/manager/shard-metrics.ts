// The sharding's metrics (docs/sharding.md), in the operator's registry.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export class ShardMetrics {
  readonly moves: Counter;
  readonly placementFailures: Counter;
  readonly drains: Counter;
  readonly drainSeconds: Histogram;
  readonly assigned: Gauge;
  readonly lease: Gauge;
  readonly members: Gauge;

  /** `ownObjects`: how many objects this replica's caches hold (its share). */
  constructor(registry: Registry, ownObjects: () => number) {
    const registers = [registry];
    new Gauge({ name: "appstack_shard_objects", help: "Objects labelled for this replica, as its watch caches hold them (its share).", registers, collect() { this.set(ownObjects()); } });
    this.lease = new Gauge({ name: "appstack_shard_lease", help: "1 while this replica holds its shard lease (sharding).", registers });
    this.members = new Gauge({ name: "appstack_shard_members", help: "Live replicas (held, renewed shard Leases) in the sharder's last pass; on the leader.", registers });
    this.assigned = new Gauge({ name: "appstack_shard_assigned_objects", help: "Objects per replica (shard label), as the sharder (the leader) last listed them.", labelNames: ["shard"], registers });
    this.moves = new Counter({ name: "appstack_shard_moves_total", help: "Objects the sharder assigned, by why: new (no owner), drained (its live owner let it go), owner-gone (its owner's lease expired or was released).", labelNames: ["reason"], registers });
    this.placementFailures = new Counter({ name: "appstack_shard_placement_failures_total", help: "Owner or drain label writes of the sharder the API server refused, by its HTTP status (none: no answer); each object is retried after a backoff.", labelNames: ["code"], registers });
    this.drains = new Counter({ name: "appstack_shard_drains_total", help: "Drains this replica confirmed: objects it let go to another replica once nothing of them ran.", registers });
    this.drainSeconds = new Histogram({ name: "appstack_shard_drain_duration_seconds", help: "From the sharder's drain label to the old owner's confirmation (seen by the sharder).", buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300], registers });
  }
}
