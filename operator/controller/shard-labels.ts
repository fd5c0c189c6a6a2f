// The labels that say which replica reconciles an object when the operator is sharded (see
// docs/sharding.md): the sharder (the leader) writes the owner and the drain; the owner removes
// both to confirm a drain. Each replica's informers select the objects labelled with its name.
import type { Workload } from "../../crds/types.ts";
import { groupOfKind } from "../../components/kinds.ts";

/** The replica (its shard Lease's member name) that reconciles the object. */
export const shardOwnerLabel = "shard.appstack.dev/owner";
/** Set by the sharder on an object that moves: its owner finishes what it runs, then removes both labels. */
export const shardDrainLabel = "shard.appstack.dev/drain";
/** On every shard Lease: which ring (the leader Lease's name) the replica is a member of. */
export const shardRingLabel = "shard.appstack.dev/ring";

/** The ring's key of an object: its kind's group/kind/namespace/name, as the consistent hash places it. */
export function ringKey(kind: string, namespace: string, name: string): string {
  return `${groupOfKind(kind)}/${kind}/${namespace}/${name}`;
}

export function shardOwner(object: Pick<Workload, "metadata">): string | undefined {
  return object.metadata.labels?.[shardOwnerLabel];
}

export function draining(object: Pick<Workload, "metadata">): boolean {
  return object.metadata.labels?.[shardDrainLabel] !== undefined;
}

/** A member name usable as a label value and in a Lease's name: lower case, [a-z0-9-], at most 63. */
export function memberName(identity: string): string {
  const cleaned = identity.toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "");
  return cleaned.slice(-63).replace(/^-+/, "") || "replica";
}
