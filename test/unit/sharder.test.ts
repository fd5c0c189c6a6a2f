// The sharder against in-memory objects and Leases with the API server's resourceVersion checks:
// new objects are assigned to live members, a live owner is drained before its object moves, a
// dead owner's objects move only once its lease has gone unrenewed for a lease duration by the
// sharder's own clock (then its Lease is deleted), and a sharder that no longer leads writes nothing.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V1MicroTime, type V1Lease } from "@kubernetes/client-node";
import type { Workload } from "../../crds/types.ts";
import { createLogger } from "../../operator/base/log.ts";
import { shardDrainLabel, shardOwnerLabel, shardRingLabel } from "../../operator/controller/shard-labels.ts";
import type { KubeClients } from "../../operator/kube/clients.ts";
import { eventually } from "../helpers/cluster.ts";
import { Sharder, type LeaseCalls, type ObjectSource } from "../../operator/manager/sharder.ts";

const log = createLogger({ level: "error", format: "json", write: () => undefined });

function apiError(code: number): Error {
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code });
}

type Patch = { op: string; path: string; value?: unknown }[];

class FakeCluster {
  readonly apps = new Map<string, Workload>();
  readonly leases = new Map<string, V1Lease>();
  patches = 0;
  private version = 0;

  addApp(name: string, labels: Record<string, string> = {}): void {
    this.apps.set(name, { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name, namespace: "default", resourceVersion: String(++this.version), labels }, spec: { image: "x" } } as Workload);
    this.told?.(structuredClone(this.apps.get(name)!));
  }

  /** What a replica's elector does: create or renew its shard Lease. */
  renew(member: string): void {
    const name = `appstack-operator-shard-${member}`;
    this.leases.set(name, { metadata: { name, resourceVersion: String(++this.version), labels: { [shardRingLabel]: "appstack-operator" } }, spec: { holderIdentity: member, leaseDurationSeconds: 15, renewTime: new V1MicroTime() } });
  }

  owner(name: string): string | undefined {
    return this.apps.get(name)?.metadata.labels?.[shardOwnerLabel];
  }

  draining(name: string): boolean {
    return this.apps.get(name)?.metadata.labels?.[shardDrainLabel] !== undefined;
  }

  /** What an owner does to confirm a drain. */
  confirm(name: string): void {
    const app = this.apps.get(name)!;
    const labels = { ...app.metadata.labels };
    delete labels[shardOwnerLabel];
    delete labels[shardDrainLabel];
    app.metadata = { ...app.metadata, labels, resourceVersion: String(++this.version) };
  }

  /** Whether the sharder's cache has listed (it holds every object). */
  listed = true;
  private told: ((object: Workload) => void) | undefined;

  /** The sharder's cache, as an informer would hold the objects now, telling of each new one. */
  readonly objectSource: ObjectSource = {
    objects: (kind) => (!this.listed ? undefined : kind === "App" ? [...this.apps.values()].map((app) => structuredClone(app)) : []),
    start: (onChange) => (this.told = onChange),
    stop: () => Promise.resolve(),
  };

  readonly clients = {
    custom: {
      patchNamespacedCustomObject: ({ name, body }: { name: string; body: Patch }) => {
        const app = this.apps.get(name);
        if (!app) return Promise.reject(apiError(404));
        const labels = { ...app.metadata.labels };
        for (const op of body) {
          if (op.path === "/metadata/resourceVersion") {
            if (op.value !== app.metadata.resourceVersion) return Promise.reject(apiError(409));
            continue;
          }
          const label = op.path.replace("/metadata/labels/", "").replace("~1", "/");
          if (op.path === "/metadata/labels") continue;
          if (op.op === "remove") delete labels[label];
          else labels[label] = op.value as string;
        }
        this.patches++;
        app.metadata = { ...app.metadata, labels, resourceVersion: String(++this.version) };
        return Promise.resolve(app);
      },
    },
  } as unknown as KubeClients;

  readonly leaseCalls: LeaseCalls = {
    listNamespacedLease: () => Promise.resolve({ items: [...this.leases.values()].map((lease) => structuredClone(lease)) }),
    deleteNamespacedLease: ({ name, body }: { name: string; body?: { preconditions?: { resourceVersion?: string } } }) => {
      const lease = this.leases.get(name);
      if (!lease) return Promise.reject(apiError(404));
      if (body?.preconditions?.resourceVersion !== lease.metadata?.resourceVersion) return Promise.reject(apiError(409));
      this.leases.delete(name);
      return Promise.resolve({});
    },
  };
}

function sharder(cluster: FakeCluster, clock: { now: number }, leading = () => true, periodMs = 1_000): Sharder {
  return new Sharder({ clients: cluster.clients, namespaces: "all", leaseNamespace: "default", ring: "appstack-operator", periodMs, leading, log, leases: cluster.leaseCalls, now: () => clock.now, objects: cluster.objectSource });
}

const names = Array.from({ length: 30 }, (_, i) => `app-${i}`);

/** Members a and b live, the objects created and a first pass made: each has an owner. */
async function twoMembersAssigned(): Promise<{ cluster: FakeCluster; clock: { now: number }; running: Sharder }> {
  const cluster = new FakeCluster();
  const clock = { now: 0 };
  cluster.renew("a");
  cluster.renew("b");
  for (const name of names) cluster.addApp(name);
  const running = sharder(cluster, clock);
  await running.pass();
  return { cluster, clock, running };
}

test("new objects are assigned to the live members; a live owner the ring no longer wants is drained first", async () => {
  const { cluster, running } = await twoMembersAssigned();
  assert.ok(names.every((name) => ["a", "b"].includes(cluster.owner(name)!)));
  assert.ok(names.some((name) => cluster.owner(name) === "a") && names.some((name) => cluster.owner(name) === "b"));

  // A third member joins: the objects the ring now gives it are drained from their owners, not taken.
  cluster.renew("c");
  await running.pass();
  const drained = names.filter((name) => cluster.draining(name));
  assert.ok(drained.length > 0 && drained.length < names.length / 2, `${drained.length} drained`);
  assert.ok(drained.every((name) => cluster.owner(name) !== "c"), "moved before its owner let it go");
  await running.pass();
  assert.ok(drained.every((name) => cluster.draining(name) && cluster.owner(name) !== "c"), "moved before its owner let it go");
  for (const name of drained) cluster.confirm(name);
  await running.pass();
  assert.ok(drained.every((name) => cluster.owner(name) === "c" && !cluster.draining(name)));
});

test("a dead owner's objects move once its lease has gone unrenewed for a lease duration by the sharder's clock, and its lease is deleted", async () => {
  const { cluster, clock, running } = await twoMembersAssigned();
  const ofB = names.filter((name) => cluster.owner(name) === "b");
  // b stops renewing; a renews. Within the lease duration nothing moves.
  clock.now += 14_000;
  cluster.renew("a");
  await running.pass();
  assert.ok(ofB.every((name) => cluster.owner(name) === "b" && !cluster.draining(name)));
  assert.ok(cluster.leases.has("appstack-operator-shard-b"));
  clock.now += 2_000;
  cluster.renew("a");
  await running.pass();
  assert.ok(ofB.every((name) => cluster.owner(name) === "a"), "a dead owner's objects stayed");
  assert.ok(!cluster.leases.has("appstack-operator-shard-b"), "the dead member's lease stayed");
});

test("a sharder that no longer leads writes nothing", async () => {
  const cluster = new FakeCluster();
  cluster.renew("a");
  for (const name of names) cluster.addApp(name);
  await assert.rejects(sharder(cluster, { now: 0 }, () => false).pass(), /no longer the leader/);
  assert.equal(cluster.patches, 0);
});

test("a sharder whose cache has not yet listed every object places none", async () => {
  const cluster = new FakeCluster();
  cluster.renew("a");
  for (const name of names) cluster.addApp(name);
  cluster.listed = false;
  await sharder(cluster, { now: 0 }).pass();
  assert.equal(cluster.patches, 0);
});

test("an object that arrives is placed at once, not at the sharder's next period", async () => {
  const cluster = new FakeCluster();
  cluster.renew("a");
  cluster.addApp("early");
  // A period no test waits out: after the first pass, only the arrival can bring another.
  const running = sharder(cluster, { now: 0 }, () => true, 3_600_000);
  running.start();
  try {
    await eventually("the sharder's first pass", () => Promise.resolve(cluster.owner("early")));
    cluster.addApp("late");
    await eventually("the new object's owner", () => Promise.resolve(cluster.owner("late")));
    assert.equal(cluster.owner("late"), "a");
  } finally {
    await running.stop();
  }
});
