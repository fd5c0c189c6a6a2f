// The sharder against in-memory objects and Leases with the API server's resourceVersion checks:
// new objects are assigned to live members, a live owner is drained before its object moves, a
// dead owner's objects move only once its lease has gone unrenewed for a lease duration by the
// sharder's own clock (then its Lease is deleted), a sharder that no longer leads writes nothing, and
// an object whose label write is refused fails alone: logged, counted, and retried after a backoff.
import assert from "node:assert/strict";
import { test } from "node:test";
import { performance } from "node:perf_hooks";
import { V1MicroTime, type V1Lease } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type { Workload } from "../../crds/types.ts";
import { createLogger } from "../../operator/base/log.ts";
import { shardDrainLabel, shardOwnerLabel, shardRingLabel } from "../../operator/controller/shard-labels.ts";
import type { KubeClients } from "../../operator/kube/clients.ts";
import { eventually } from "../helpers/cluster.ts";
import { ShardMetrics } from "../../operator/manager/shard-metrics.ts";
import { Sharder, type LeaseCalls, type ObjectSource, type SharderSettings } from "../../operator/manager/sharder.ts";

const log = createLogger({ level: "error", format: "json", write: () => undefined });

function apiError(code: number): Error {
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code });
}

type Patch = { op: string; path: string; value?: unknown }[];

class FakeCluster {
  readonly apps = new Map<string, Workload>();
  readonly leases = new Map<string, V1Lease>();
  /** Per object, the HTTP code its label writes are refused with (a webhook down, a policy, an object deleted since the cache read). */
  readonly refusing = new Map<string, number>();
  patches = 0;
  refusals = 0;
  private version = 0;

  addApp(name: string, labels: Record<string, string> = {}): void {
    this.apps.set(name, { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name, namespace: "default", resourceVersion: String(++this.version), labels }, spec: { image: "x" } } as unknown as Workload);
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
        const refused = this.refusing.get(name);
        if (refused !== undefined) {
          this.refusals++;
          return Promise.reject(apiError(refused));
        }
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

function sharder(cluster: FakeCluster, clock: { now: number }, leading = () => true, periodMs = 1_000, extra: Partial<SharderSettings> = {}): Sharder {
  return new Sharder({ clients: cluster.clients, namespaces: "all", leaseNamespace: "default", ring: "appstack-operator", periodMs, leading, log, leases: cluster.leaseCalls, now: () => clock.now, objects: cluster.objectSource, ...extra });
}

/** A sharder whose warnings and metrics the test reads. */
function observed(cluster: FakeCluster, clock: { now: number }, periodMs = 1_000): { running: Sharder; warnings: Record<string, unknown>[]; failures: () => Promise<string> } {
  const warnings: Record<string, unknown>[] = [];
  const registry = new Registry();
  const metrics = new ShardMetrics(registry, () => 0);
  const logged = createLogger({ level: "warn", format: "json", write: (line) => warnings.push(JSON.parse(line) as Record<string, unknown>) });
  const running = sharder(cluster, clock, () => true, periodMs, { log: logged, metrics });
  const failures = async () => (await registry.getSingleMetricAsString("appstack_shard_placement_failures_total")).split("\n").filter((line) => !line.startsWith("#")).join("\n");
  return { running, warnings, failures };
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

test("an object whose label write fails does not stop the pass: the objects after it are placed, the failure is logged and counted, and the object is placed on a later pass", async () => {
  const cluster = new FakeCluster();
  const clock = { now: 0 };
  cluster.renew("a");
  for (const name of names) cluster.addApp(name);
  // A webhook that is down for app-10, a policy that denies app-20: both in the middle of the list.
  cluster.refusing.set("app-10", 500);
  cluster.refusing.set("app-20", 403);
  const { running, warnings, failures } = observed(cluster, clock);
  await running.pass();
  assert.deepEqual(names.filter((name) => !cluster.owner(name)), ["app-10", "app-20"]);
  assert.deepEqual(warnings.map((line) => [line.object, line.error]), [["App/default/app-10", "HTTP 500"], ["App/default/app-20", "HTTP 403"]]);
  assert.match(await failures(), /appstack_shard_placement_failures_total\{code="500"\} 1\nappstack_shard_placement_failures_total\{code="403"\} 1/);

  // The writes succeed again: the objects are placed once their backoff has passed, not before.
  cluster.refusing.clear();
  await running.pass();
  assert.deepEqual(names.filter((name) => !cluster.owner(name)), ["app-10", "app-20"]);
  clock.now += 30_000;
  cluster.renew("a");
  await running.pass();
  assert.ok(names.every((name) => cluster.owner(name) === "a"), "a failed object was not retried");
});

test("an object deleted since the cache read (404) is skipped, not a failure; the pass goes on", async () => {
  const cluster = new FakeCluster();
  cluster.renew("a");
  for (const name of names) cluster.addApp(name);
  cluster.refusing.set("app-5", 404);
  const { running, warnings, failures } = observed(cluster, { now: 0 });
  await running.pass();
  assert.deepEqual(names.filter((name) => !cluster.owner(name)), ["app-5"]);
  assert.deepEqual(warnings, []);
  assert.doesNotMatch(await failures(), /code=/);
});

test("an object refused as invalid (422) is not skipped for ever: logged, counted, and retried", async () => {
  const cluster = new FakeCluster();
  const clock = { now: 0 };
  cluster.renew("a");
  for (const name of names) cluster.addApp(name);
  cluster.refusing.set("app-3", 422);
  const { running, warnings, failures } = observed(cluster, clock);
  await running.pass();
  assert.deepEqual(names.filter((name) => !cluster.owner(name)), ["app-3"]);
  assert.deepEqual(warnings.map((line) => [line.object, line.error]), [["App/default/app-3", "HTTP 422"]]);
  assert.match(await failures(), /\{code="422"\} 1/);
  clock.now += 30_000;
  cluster.renew("a");
  await running.pass();
  assert.match(await failures(), /\{code="422"\} 2/, "a 422 was not retried");
  // Someone fixes the object: changed, it is tried again at once, without waiting for its backoff.
  cluster.refusing.clear();
  cluster.addApp("app-3");
  await running.pass();
  assert.equal(cluster.owner("app-3"), "a");
});

test("a failed object is retried after a short backoff, not at the sharder's next period", async () => {
  const cluster = new FakeCluster();
  cluster.renew("a");
  cluster.addApp("refused");
  cluster.refusing.set("refused", 500);
  // The sharder's monotonic clock is the real one here: the backoff passes in real time.
  const clock = { get now() { return performance.now(); } };
  // A period no test waits out: after the first pass, only the retry can bring another.
  const running = sharder(cluster, clock, () => true, 3_600_000);
  running.start();
  try {
    await eventually("the first attempt", () => Promise.resolve(cluster.refusals > 0 || undefined));
    cluster.refusing.clear();
    await eventually("the refused object's owner", () => Promise.resolve(cluster.owner("refused")), 10_000);
  } finally {
    await running.stop();
  }
});
