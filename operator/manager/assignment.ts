// What the sharder does with one object, decided from its labels, the ring and which members are
// alive. Pure: the sharder (sharder.ts) reads the facts and writes the labels.
// - no owner: assign the ring's choice;
// - an owner that is no longer alive (its lease released, or unrenewed for a lease duration):
//   assign the ring's choice directly: nothing of the dead owner runs (its lease says so);
// - an owner alive that is not the ring's choice: set the drain label, and wait until the owner
//   has removed both labels (it finishes or stops its operation first) before assigning;
// - a drain already set: wait, unless the owner has died meanwhile.
import type { HashRing } from "./ring.ts";

export interface ObjectShard {
  readonly owner: string | undefined;
  readonly draining: boolean;
}

export type Assignment =
  | { readonly action: "none" }
  | { readonly action: "assign"; readonly to: string; readonly reason: "new" | "owner-gone" }
  | { readonly action: "drain"; readonly from: string };

export function assign(object: ObjectShard, ringKey: string, ring: HashRing, alive: ReadonlySet<string>): Assignment {
  const wanted = ring.owner(ringKey);
  if (wanted === undefined) return { action: "none" };
  if (object.owner === undefined) return { action: "assign", to: wanted, reason: "new" };
  if (!alive.has(object.owner)) return { action: "assign", to: wanted, reason: "owner-gone" };
  if (object.owner === wanted || object.draining) return { action: "none" };
  return { action: "drain", from: object.owner };
}
