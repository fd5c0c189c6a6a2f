// The sharding ring and the sharder's decisions: stable, balanced, about 1/N of the objects move
// when a member joins or leaves, and a live owner is drained before its object moves.
import assert from "node:assert/strict";
import { test } from "node:test";
import { assign } from "../../operator/manager/assignment.ts";
import { HashRing } from "../../operator/manager/ring.ts";
import { ringKey } from "../../operator/controller/shard-labels.ts";

const keys = Array.from({ length: 3000 }, (_, i) => ringKey(i % 2 ? "App" : "Memcached", `ns-${i % 7}`, `object-${i}`));
const owners = (ring: HashRing) => keys.map((key) => ring.owner(key));
const moved = (a: (string | undefined)[], b: (string | undefined)[]) => a.filter((owner, i) => owner !== b[i]).length;

test("the same members give the same owners, in whatever order they are listed", () => {
  assert.deepEqual(owners(new HashRing(["a", "b", "c"])), owners(new HashRing(["c", "a", "b", "a"])));
  assert.equal(new HashRing([]).owner("x"), undefined);
});

test("three members share the objects about evenly", () => {
  const counts = new Map<string, number>();
  for (const owner of owners(new HashRing(["replica-a", "replica-b", "replica-c"]))) counts.set(owner!, (counts.get(owner!) ?? 0) + 1);
  assert.equal(counts.size, 3);
  for (const [member, count] of counts) assert.ok(Math.abs(count - 1000) < 200, `${member} has ${count} of 3000`);
});

test("a member that joins takes about 1/N, only from the others; one that leaves gives up only its own", () => {
  const three = owners(new HashRing(["replica-a", "replica-b", "replica-c"]));
  const four = owners(new HashRing(["replica-a", "replica-b", "replica-c", "replica-d"]));
  const joined = moved(three, four);
  assert.ok(joined > 3000 / 4 - 250 && joined < 3000 / 4 + 250, `${joined} of 3000 moved when a fourth joined`);
  assert.ok(four.every((owner, i) => owner === three[i] || owner === "replica-d"), "every move goes to the new member");
  const two = owners(new HashRing(["replica-a", "replica-c"]));
  assert.ok(two.every((owner, i) => owner === three[i] || three[i] === "replica-b"), "only the leaver's objects move");
  const left = moved(three, two);
  assert.ok(left > 1000 - 200 && left < 1000 + 200, `${left} of 3000 moved when one of three left`);
});

test("the sharder assigns new objects, drains a live owner first, and moves a dead owner's at once", () => {
  const ring = new HashRing(["a", "b"]);
  const key = keys.find((k) => ring.owner(k) === "b")!;
  const alive = new Set(["a", "b"]);
  assert.deepEqual(assign({ owner: undefined, draining: false }, key, ring, alive), { action: "assign", to: "b", reason: "new" });
  assert.deepEqual(assign({ owner: "b", draining: false }, key, ring, alive), { action: "none" });
  assert.deepEqual(assign({ owner: "a", draining: false }, key, ring, alive), { action: "drain", from: "a" });
  // Drained already: the owner's confirmation (both labels removed) comes before any assignment.
  assert.deepEqual(assign({ owner: "a", draining: true }, key, ring, alive), { action: "none" });
  assert.deepEqual(assign({ owner: "a", draining: true }, key, ring, new Set(["b"])), { action: "assign", to: "b", reason: "owner-gone" });
  assert.deepEqual(assign({ owner: "gone", draining: false }, key, ring, alive), { action: "assign", to: "b", reason: "owner-gone" });
  assert.deepEqual(assign({ owner: undefined, draining: false }, key, new HashRing([]), alive), { action: "none" });
});
