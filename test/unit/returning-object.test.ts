// What a replica remembers of an object must not outlive the object's stay in its share (issue 34,
// item 9). Two replicas' reconcilers, each with a watch cache of its own, against one in-memory
// API server (resourceVersions, JSON patches, the status subresource) and a file backend: replica
// A writes Ready, the object moves to C (A confirms the drain), C writes RollingOut and leaves the
// stack with pending operations, C goes, and the object returns to A. A's status write and its
// pending-operations check must go by what the cluster and the backend say, not by what A wrote
// and saw before the object left; and a status another writer changed is written again.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import type { V1Deployment, V1DeploymentStatus } from "@kubernetes/client-node";
import { childManifests } from "../../components/kinds.ts";
import type { Workload, WorkloadStatus } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import { createLogger } from "../../operator/base/log.ts";
import type { BindingGuard } from "../../operator/controller/binding-guard.ts";
import { encodeApplied, programVersion } from "../../operator/controller/drift.ts";
import { EventRecorder } from "../../operator/controller/events.ts";
import { finalizerName } from "../../operator/controller/finalizer.ts";
import { Reconciler } from "../../operator/controller/reconcile.ts";
import { ShardFence } from "../../operator/controller/shard-fence.ts";
import { shardDrainLabel, shardOwnerLabel } from "../../operator/controller/shard-labels.ts";
import type { Watcher } from "../../operator/controller/watch.ts";
import type { KubeClients } from "../../operator/kube/clients.ts";
import type { EngineBinaries } from "../../operator/pulumi/engine.ts";
import type { PlanStore } from "../../operator/pulumi/plans.ts";
import { projectName, stackName } from "../../operator/pulumi/stack-names.ts";
import { StackDriver } from "../../operator/pulumi/stacks.ts";

const log = createLogger({ level: "error", format: "json", write: () => undefined });
const dir = mkdtempSync(join(tmpdir(), "appstack-returning-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const key = "App/default/web";
const stack = stackName("App", "default", "web");
const ready: V1DeploymentStatus = { observedGeneration: 1, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 };
const rollingOut: V1DeploymentStatus = { observedGeneration: 1, replicas: 2, updatedReplicas: 1, readyReplicas: 2, availableReplicas: 2 };

function apiError(code: number): Error {
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code });
}

type Patch = { op: string; path: string; value?: unknown }[];

/** One App, its Deployment and the Events about it, as an API server keeps them. */
class FakeApi {
  /** Every version of the object, oldest first: a watch cache may be behind by any number of them. */
  readonly versions: Workload[] = [];
  deployment: V1Deployment;
  events = 0;
  statusWrites = 0;

  constructor() {
    this.put({
      apiVersion: "appstack.dev/v1alpha1",
      kind: "App",
      metadata: { name: "web", namespace: "default", uid: "uid-web", generation: 1, finalizers: [finalizerName], labels: { [shardOwnerLabel]: "replica-a" } },
      spec: { image: "nginx:1.27", replicas: 2 },
      // Applied by a replica before: nothing for Pulumi to do, only the status to report.
      status: { observedGeneration: 1, stack: { name: stack, appliedFingerprint: encodeApplied({ programVersion, generation: 1 }) } },
    });
    const manifest = childManifests(this.object).find((child) => child.kind === "Deployment")!.manifest as V1Deployment;
    // As appstack applied it (its controller reference names the App's uid), with the Deployment controller's status.
    this.deployment = { ...manifest, metadata: { ...manifest.metadata, uid: "uid-deployment", generation: 1 }, status: ready };
  }

  get object(): Workload {
    return this.versions.at(-1)!;
  }

  private put(object: Workload | App): void {
    this.versions.push(structuredClone({ ...object, metadata: { ...object.metadata, resourceVersion: String(this.versions.length + 1) } }));
  }

  /** The sharder's (or a person's) change to the object's labels. */
  label(labels: Record<string, string>): void {
    const object = structuredClone(this.object);
    object.metadata.labels = labels;
    this.put(object);
  }

  /** Another writer's status (a person's `kubectl edit --subresource=status`). */
  writeStatus(status: WorkloadStatus): void {
    this.put({ ...structuredClone(this.object), status });
  }

  private patch(patch: Patch, status: boolean): Workload {
    const object = structuredClone(this.object) as unknown as Record<string, unknown>;
    for (const { op, path, value } of patch) {
      const parts = path.split("/").slice(1).map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
      const last = parts.pop()!;
      let parent = object;
      for (const part of parts) parent = parent[part] as Record<string, unknown>;
      if (last === "resourceVersion" && op === "replace" && value !== parent[last]) throw apiError(409);
      if (op === "remove") delete parent[last];
      else parent[last] = structuredClone(value);
    }
    const changed = object as unknown as Workload;
    if (status) {
      this.statusWrites++;
      this.put({ ...this.object, status: changed.status });
    } else this.put({ ...changed, status: this.object.status });
    return structuredClone(this.object);
  }

  clients(): KubeClients {
    const read = () => Promise.resolve(structuredClone(this.object));
    return {
      custom: {
        getNamespacedCustomObject: read,
        patchNamespacedCustomObject: ({ body }: { body: Patch }) => Promise.resolve(this.patch(body, false)),
        patchNamespacedCustomObjectStatus: ({ body }: { body: Patch }) => Promise.resolve(this.patch(body, true)),
      },
      objects: { readChild: () => Promise.resolve(structuredClone(this.deployment)) },
      core: {
        createNamespacedEvent: () => {
          this.events++;
          return Promise.resolve({});
        },
      },
    } as unknown as KubeClients;
  }
}

/** One operator replica: its watch cache (only the objects labelled for it), its reconciler and its stack driver. */
class Replica {
  /** The object as this replica's informer has it, or undefined when it is not labelled for it. */
  cached: Workload | undefined;
  readonly driver: StackDriver;
  readonly member: string;
  private readonly api: FakeApi;
  private readonly reconciler: Reconciler;

  constructor(api: FakeApi, member: string, backendUrl: string) {
    this.api = api;
    this.member = member;
    const clients = api.clients();
    const watcher = {
      unreadable: () => false,
      workload: () => (this.cached ? structuredClone(this.cached) : undefined),
      child: (kind: string) => (kind === "Deployment" ? structuredClone(api.deployment) : undefined),
      podsOf: () => [],
    } as unknown as Watcher;
    this.driver = new StackDriver({ backendUrl, pulumiHome: join(dir, member, "home"), passphrase: "test", binaries: {} as EngineBinaries, workDir: join(dir, member, "work") }, log);
    const shard = new ShardFence({ clients, member, holdsLease: () => true, log });
    const bindingGuard = { releaseOwed: () => false, guarded: (_namespace: string, write: () => Promise<unknown>) => write() } as unknown as BindingGuard;
    // podStartTimeoutMs: the operator's setting; no pod plays a part here.
    const deps = { clients, watcher, driver: this.driver, plans: {} as PlanStore, events: new EventRecorder(clients, log), log, backoff: () => ({ attempt: 1, delayMs: 1_000 }), bindingGuard, shard, podStartTimeoutMs: 300_000 };
    this.reconciler = new Reconciler(deps);
  }

  /** The informer catches up with the API server's `version`-th version (the newest by default); its label selector decides. */
  sync(version = this.api.versions.length): void {
    const object = this.api.versions[version - 1]!;
    this.cached = object.metadata.labels?.[shardOwnerLabel] === this.member ? structuredClone(object) : undefined;
  }

  async reconcile(): Promise<string | undefined> {
    const result = await this.reconciler.reconcile(key);
    return result?.outcome;
  }
}

function readyCondition(object: Workload): string {
  const condition = object.status?.conditions?.find((c) => c.type === "Ready");
  return `${condition?.status} ${condition?.reason}`;
}

/** A file backend holding the stack's checkpoint, with pending operations or none. */
function backend(name: string): { url: string; checkpoint: (pending: unknown[]) => void } {
  const root = join(dir, name);
  const file = join(root, ".pulumi", "stacks", projectName, `${stack}.json`);
  mkdirSync(dirname(file), { recursive: true });
  const checkpoint = (pending: unknown[]) => writeFileSync(file, JSON.stringify({ version: 3, checkpoint: { stack, latest: { resources: [], pending_operations: pending } } }));
  checkpoint([]);
  return { url: pathToFileURL(root).href, checkpoint };
}

/** The object moves from `from` to `to`: the sharder drains it, `from` lets it go, the sharder assigns it to `to`. */
async function move(api: FakeApi, from: Replica, to: Replica): Promise<void> {
  api.label({ [shardOwnerLabel]: from.member, [shardDrainLabel]: "true" });
  from.sync();
  assert.equal(await from.reconcile(), "moved", "the old owner confirms the drain");
  assert.equal(api.object.metadata.labels?.[shardOwnerLabel], undefined);
  from.sync();
  // Its informer saw the object leave the selection: the key is queued once more.
  assert.equal(await from.reconcile(), "moved");
  api.label({ [shardOwnerLabel]: to.member });
  to.sync();
  from.sync();
}

test("an object that comes back to a replica gets the status the cluster calls for, not the one the replica wrote before it left", async () => {
  const api = new FakeApi();
  const { url } = backend("status");
  const a = new Replica(api, "replica-a", url);
  const c = new Replica(api, "replica-c", url);
  a.sync();
  await a.reconcile();
  assert.equal(readyCondition(api.object), "True Available", "A writes Ready");

  await move(api, a, c);
  api.deployment = { ...api.deployment, status: rollingOut };
  await c.reconcile();
  assert.equal(readyCondition(api.object), "False RollingOut", "C writes RollingOut");

  // C finishes the rollout's wait and is scaled down; the object comes back to A, Ready again.
  api.deployment = { ...api.deployment, status: ready };
  await move(api, c, a);
  await a.reconcile();
  assert.equal(readyCondition(api.object), "True Available", "A writes Ready again: `appstack status` must not read RollingOut until the spec changes");
});

test("a stack another replica left with pending operations is checked again when its object comes back", async () => {
  const api = new FakeApi();
  const { url, checkpoint } = backend("pending");
  const a = new Replica(api, "replica-a", url);
  const c = new Replica(api, "replica-c", url);
  a.sync();
  await a.reconcile();
  assert.equal(await a.driver.hasPendingOperations(stack), false, "A has read the checkpoint: no pending operations");

  await move(api, a, c);
  // C's engine is killed mid-operation as C is scaled down: the state keeps its pending operations.
  checkpoint([{ resource: { urn: "urn:pulumi:x::appstack::kubernetes:apps/v1:Deployment::web" }, type: "updating" }]);
  await move(api, c, a);
  assert.equal(await a.driver.hasPendingOperations(stack), true, "A must read the checkpoint again, or the interrupted operation is never finished");
});

test("a status another writer changed is written again, though the replica never let the object go", async () => {
  const api = new FakeApi();
  const a = new Replica(api, "replica-a", backend("other-writer").url);
  a.sync();
  await a.reconcile();
  assert.equal(readyCondition(api.object), "True Available");
  const ours = structuredClone(api.object.status!);
  const condition = (c: NonNullable<WorkloadStatus["conditions"]>[number]) => (c.type === "Ready" ? { ...c, status: "False" as const, reason: "RollingOut", message: "1 of 2 replicas updated" } : c);
  api.writeStatus({ ...ours, conditions: ours.conditions!.map(condition), lastUpdateTime: new Date(Date.now() + 1_000).toISOString() });
  a.sync();
  await a.reconcile();
  assert.equal(readyCondition(api.object), "True Available", "the other writer's status is replaced by what the cluster says");
});

test("while the watch cache has not shown the replica's own writes, a reconcile starts from what it wrote last", async () => {
  const api = new FakeApi();
  const a = new Replica(api, "replica-a", backend("behind").url);
  a.sync();
  const before = api.versions.length;
  await a.reconcile();
  assert.equal(api.statusWrites, 1);
  // The cache still has the object as it was before the write: nothing is written again.
  await a.reconcile();
  assert.equal(api.statusWrites, 1, "the same status is not written twice");
  api.deployment = { ...api.deployment, status: rollingOut };
  await a.reconcile();
  assert.equal(api.statusWrites, 2);
  // The cache shows the first of the two writes: still behind.
  a.sync(before + 1);
  await a.reconcile();
  assert.equal(api.statusWrites, 2, "a cache one write behind is not taken for another writer");
  a.sync();
  await a.reconcile();
  assert.equal(api.statusWrites, 2, "a cache that caught up writes nothing either");
  assert.equal(readyCondition(api.object), "False RollingOut");
});

test("an Event the replica recorded before the object left is recorded again after it comes back", async () => {
  const api = new FakeApi();
  const { url } = backend("events");
  const a = new Replica(api, "replica-a", url);
  const c = new Replica(api, "replica-c", url);
  api.deployment = { ...api.deployment, spec: { ...api.deployment.spec!, paused: true } };
  a.sync();
  await a.reconcile();
  assert.equal(api.events, 1, "A records DeploymentPaused");
  await a.reconcile();
  assert.equal(api.events, 1, "and not twice in a row");
  await move(api, a, c);
  await move(api, c, a);
  await a.reconcile();
  assert.equal(api.events, 2, "after its stay with C, A says again that the Deployment is paused");
});

test("a dead owner's object, reassigned at once (its cache dropped it before its reconcile let it go): its Events are news again when it comes back", async () => {
  const api = new FakeApi();
  const { url } = backend("dead-owner-events");
  const a = new Replica(api, "replica-a", url);
  api.deployment = { ...api.deployment, spec: { ...api.deployment.spec!, paused: true } };
  a.sync();
  await a.reconcile();
  assert.equal(api.events, 1, "A records DeploymentPaused");
  // The sharder took A for dead and gave the object to C, no drain: A's cache drops it first.
  api.label({ [shardOwnerLabel]: "replica-c" });
  a.sync();
  assert.equal(a.cached, undefined);
  assert.equal(await a.reconcile(), "moved");
  api.label({ [shardOwnerLabel]: "replica-a" });
  a.sync();
  await a.reconcile();
  assert.equal(api.events, 2, "back with A, which says again that the Deployment is paused");
});

test("a first finalizer refused because the object changed since the cache read it is tried again soon, not reported as a failure", async () => {
  const api = new FakeApi();
  const a = new Replica(api, "replica-a", backend("finalizer").url);
  const bare = structuredClone(api.object);
  bare.metadata.finalizers = undefined;
  api.writeStatus(bare.status!);
  api.versions[api.versions.length - 1]!.metadata.finalizers = undefined;
  a.sync();
  // Another controller adds its finalizer before A's patch arrives: A's read is one version behind.
  const theirs = structuredClone(api.object);
  theirs.metadata.finalizers = ["other.example/cleanup"];
  api.label(theirs.metadata.labels!);
  api.versions[api.versions.length - 1]!.metadata.finalizers = ["other.example/cleanup"];
  const before = { events: api.events, statusWrites: api.statusWrites };
  assert.equal(await a.reconcile(), "requeued");
  assert.deepEqual(api.object.metadata.finalizers, ["other.example/cleanup"], "the other controller's finalizer stays");
  assert.deepEqual({ events: api.events, statusWrites: api.statusWrites }, before, "no ReconcileFailed Event, no Stalled status for a lost race");
});


test("a status computed from a read that another writer's status has overtaken is not written over it (issue 45, item 8)", async () => {
  const api = new FakeApi();
  const a = new Replica(api, "replica-a", backend("overtaken").url);
  a.sync();
  await a.reconcile();
  assert.equal(readyCondition(api.object), "True Available");
  // Another writer (the replica that took the object over while this one's write waited) writes
  // its status; this replica's cache has not seen it, and its next status differs from both.
  const theirs = { ...structuredClone(api.object.status!), lastUpdateTime: new Date(Date.now() + 1_000).toISOString() };
  api.writeStatus(theirs);
  api.deployment = { ...api.deployment, status: rollingOut };
  const writes = api.statusWrites;
  assert.equal(await a.reconcile(), "requeued", "reconciled again once the cache shows the other status");
  assert.equal(api.statusWrites, writes, "the stale status write did not land");
  assert.deepEqual(api.object.status, theirs, "the other writer's status stands");
  a.sync();
  await a.reconcile();
  assert.equal(readyCondition(api.object), "False RollingOut", "read afresh, the object gets the status the cluster calls for");
});

test("a status write whose object changed only in its labels since the read is written at the new resourceVersion", async () => {
  const api = new FakeApi();
  const a = new Replica(api, "replica-a", backend("relabelled").url);
  a.sync();
  await a.reconcile();
  api.label({ [shardOwnerLabel]: "replica-a", team: "payments" });
  api.deployment = { ...api.deployment, status: rollingOut };
  assert.equal(await a.reconcile(), undefined);
  assert.equal(readyCondition(api.object), "False RollingOut", "the status is written, not lost to the label change");
  assert.equal(api.object.metadata.labels?.["team"], "payments");
});
