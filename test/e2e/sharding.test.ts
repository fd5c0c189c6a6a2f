// Sharding (docs/sharding.md): operator replicas, each its own process with its own client
// certificate (so that admission sees which replica wrote), share one stack backend (a real PostgreSQL server) and the
// objects. A webhook records every write to the children. In order, on one cluster:
// - three replicas share the objects, each reconciling its own;
// - a replica killed (SIGKILL) loses its objects to the others once its lease expires, and they
//   converge, changes made meanwhile included;
// - a fourth replica takes about a quarter of the objects, each drained from its owner first;
// - a replica frozen (SIGSTOP) right before a Pulumi update, past its lease, resumes and writes
//   nothing: its object was moved and changed meanwhile, and the change stays;
// - a deleted object is finalized by its owner: its children and its stack go.
// Throughout, no child is written by two replicas in overlapping windows, and no change is lost.
// APPSTACK_SHARDING_OBJECTS sets the size (the soak runs 300).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CoordinationV1Api } from "@kubernetes/client-node";
import type { Workload } from "../../crds/types.ts";
import { memberName, ringKey, shardDrainLabel, shardOwnerLabel, shardRingLabel } from "../../operator/controller/shard-labels.ts";
import { HashRing } from "../../operator/manager/ring.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { startPostgres, type PostgresServer } from "../../toolchain/cluster/postgres.ts";
import { fakeNodesFor, loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients } from "../../operator/kube/clients.ts";
import { eventually, useCluster } from "../helpers/cluster.ts";
import { counterTotal, disposeOperator, metricValue, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { httpGet } from "../helpers/http.ts";
import { processesUnder, signalTree } from "../helpers/proctree.ts";
import { processStat } from "../../operator/base/procfs.ts";
import { interleavedWriters, recordWrites, replicaKubeconfig, type WriteLog } from "../helpers/write-log.ts";

const objects = Number(process.env["APPSTACK_SHARDING_OBJECTS"] ?? "18");
const namespace = "default";
const scratch = mkdtempSync(join(tmpdir(), "appstack-sharding-test-"));
/** The one stack backend every replica shares: a real PostgreSQL server, as replicas on several nodes would share. */
let postgres: PostgresServer | undefined;
const sharedBackend = () => postgres!.url;
const leaseSeconds = 15;

interface Replica {
  readonly letter: string;
  /** Its client certificate's user: what admission sees. */
  readonly user: string;
  readonly process: OperatorProcess;
}

const replicas: Replica[] = [];
/** When each replica's process ended, by its user. */
const goneAt = new Map<string, number>();
/** The replicas this file starts: three, then a fourth that joins. */
const letters = ["a", "b", "c", "d"];
const replicaUser = (letter: string) => `appstack-replica-${letter}`;
let log: WriteLog | undefined;
const cluster = useCluster(async ({ cluster: local }) => {
  // Each replica is a user of its own: the API (its shard labels' policy) names them all as the operator's.
  await installApi(kubeClients(local.kubeconfig), { operatorUsers: letters.map(replicaUser) });
  postgres = await startPostgres({ dir: scratch, log: (line) => console.error(line) });
  log = await recordWrites(local, namespace);
}, async () => {
  for (const replica of replicas) if (replica.process.child.exitCode === null && replica.process.child.signalCode === null) signalTree(replica.process.child.pid!, "SIGCONT");
  for (const replica of replicas) await disposeOperator(replica.process).catch(() => undefined);
  await log?.remove().catch(() => undefined);
  // The server's data is in the scratch folder: removed only once the server has stopped.
  await postgres?.stop();
  rmSync(scratch, { recursive: true, force: true });
// Room for every object at 3 pods (the join case's change) and the few at 4 and 5: at 300 objects
// the default two kwok nodes (500 pods) left hundreds Unschedulable, so never Ready.
}, { nodes: fakeNodesFor(objects * 3) });

const names = Array.from({ length: objects }, (_, i) => `shard-${String(i).padStart(3, "0")}`);
const isReplica = (user: string) => user.startsWith("appstack-replica-");

async function startReplica(letter: string): Promise<Replica> {
  const user = replicaUser(letter);
  const kubeconfig = replicaKubeconfig(cluster().cluster, user);
  const process = await startOperatorProcess(kubeconfig, {
    installApi: false,
    // Each replica freezes itself (SIGSTOP) right after the ownership check of a change (generation 2) of an App named for it.
    env: { APPSTACK_SHARDING: "true", APPSTACK_BACKEND_URL: sharedBackend(), POD_NAME: `replica-${letter}`, APPSTACK_CONCURRENCY: "2", APPSTACK_FAILPOINTS: `after-ownership-check=App/${namespace}/freeze-${letter}-*@2` },
  });
  const replica = { letter, user, process };
  replicas.push(replica);
  // When it ended: an object it wrote may go back to a replica that wrote it before, and that is no overlap.
  process.child.once("exit", () => goneAt.set(user, Date.now()));
  return replica;
}

const metrics = async (replica: Replica) => (await httpGet(`http://127.0.0.1:${replica.process.healthPort}/metrics`)).body;
const owner = (object: Workload) => object.metadata.labels?.[shardOwnerLabel];
/** The replica a member name (the owner label's value) belongs to. */
const ownedBy = (object: Workload, replica: Replica) => owner(object)?.startsWith(`replica-${replica.letter}-`) ?? false;
const alive = (replica: Replica) => replica.process.child.exitCode === null && replica.process.child.signalCode === null;

async function leader(): Promise<Replica> {
  return eventually("a leader", async () => {
    for (const replica of replicas.filter(alive)) if (metricValue(await metrics(replica), "appstack_leader") === 1) return replica;
    return undefined;
  });
}

/** Every object owned by a live replica of `among`, not draining, Ready at its generation with `replicas` replicas in its Deployment. */
/** Owned by one of `among` (with `ring`, by the member it puts the object on), not draining, Ready at its generation. */
function settled(object: Workload, among: readonly Replica[], ring: HashRing | undefined): boolean {
  if (!among.some((replica) => ownedBy(object, replica)) || object.metadata.labels?.[shardDrainLabel]) return false;
  if (ring && owner(object) !== ring.owner(ringKey("App", namespace, object.metadata.name))) return false;
  const ready = object.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
  return ready && object.status?.observedGeneration === object.metadata.generation;
}

/** Every object Ready at its spec and owned by one of `among`; with `ring`, by the member that ring puts it on. */
async function converged(workloads: Workloads, among: readonly Replica[], wanted: (name: string) => number, ring?: HashRing, timeoutMs = Math.max(300_000, objects * 3_000)): Promise<Workload[]> {
  return eventually("every object Ready at its spec, owned by a live replica", async () => {
    const listed = await workloads.list("App", namespace);
    if (listed.length !== objects) return undefined;
    if (!listed.every((object) => settled(object, among, ring))) return undefined;
    for (const object of listed) {
      const deployment = await cluster().apps.readNamespacedDeployment({ name: object.metadata.name, namespace });
      if (deployment.spec?.replicas !== wanted(object.metadata.name)) return undefined;
    }
    return listed;
  }, timeoutMs);
}

/** The members whose shard Lease is held now. */
async function liveMembers(): Promise<string[]> {
  const leases = (await loadKubeConfig(cluster().cluster.kubeconfig).makeApiClient(CoordinationV1Api).listNamespacedLease({ namespace, labelSelector: `${shardRingLabel}=appstack-operator` })).items;
  return leases.filter((lease) => lease.spec?.holderIdentity).map((lease) => memberName(lease.spec!.holderIdentity!));
}

/** The ring of the members whose shard Lease is held now. */
const liveRing = async () => new HashRing(await liveMembers());

function assertNoInterleaving(): void {
  assert.deepEqual(interleavedWriters(log!.writes, isReplica, goneAt), [], "children written by two replicas in overlapping windows");
}

const scale = new Map<string, number>();
const wanted = (name: string) => scale.get(name) ?? 1;

async function setReplicas(workloads: Workloads, name: string, count: number): Promise<void> {
  scale.set(name, count);
  await workloads.mergeSpec("App", namespace, name, { replicas: count });
}

test("three replicas share the objects, each reconciling its own", async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  for (const letter of ["a", "b", "c"]) await startReplica(letter);
  // Every member's lease exists before the first object: none is assigned to a ring of fewer (and drained again).
  for (const replica of replicas) await eventually(`replica ${replica.letter}'s shard lease`, async () => (metricValue(await metrics(replica).catch(() => ""), "appstack_shard_lease") === 1 ? true : undefined));
  const lead = await leader();
  await eventually("the sharder to see three members", async () => (metricValue(await metrics(lead), "appstack_shard_members") === 3 ? true : undefined));
  for (const name of names) await workloads.create({ kind: "App", metadata: { name, namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
  const listed = await converged(workloads, replicas, wanted);
  // Each object where the ring of the three members puts it (a member's share may be small: the ring's, not the test's, to judge).
  const ring = await liveRing();
  for (const object of listed) assert.equal(owner(object), ring.owner(ringKey("App", namespace, object.metadata.name)), object.metadata.name);
  for (const replica of replicas) {
    const share = listed.filter((object) => ownedBy(object, replica)).length;
    await eventually(`replica ${replica.letter}'s shard size metric`, async () => (metricValue(await metrics(replica), "appstack_shard_objects") === share ? true : undefined));
    // Each replica wrote exactly the children of its own objects.
    const written = new Set(log!.writes.filter((w) => w.user === replica.user).map((w) => w.object.split("/")[1]));
    assert.deepEqual([...written].sort(), listed.filter((object) => ownedBy(object, replica)).map((o) => o.metadata.name).sort(), `replica ${replica.letter} wrote others' children`);
  }
  assertNoInterleaving();
});

test("a killed replica's objects move to the others and converge, changes made meanwhile included", async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  const lead = await leader();
  const victim = replicas.find((replica) => replica !== lead && alive(replica))!;
  const before = await workloads.list("App", namespace);
  const victims = before.filter((object) => ownedBy(object, victim)).map((object) => object.metadata.name);
  const movesBefore = counterTotal(await metrics(lead), "appstack_shard_moves_total");
  const killedAt = Date.now();
  await victim.process.stop("SIGKILL");
  for (const name of victims) await setReplicas(workloads, name, 2);
  const survivors = replicas.filter(alive);
  // The move itself waits only for the lease to lapse; each object then waits its turn for one operation.
  await eventually("the killed replica's objects given to live replicas", async () => {
    const listed = await workloads.list("App", namespace);
    return victims.every((name) => survivors.some((replica) => ownedBy(listed.find((o) => o.metadata.name === name)!, replica))) ? true : undefined;
  }, (leaseSeconds + 60) * 1000);
  const movedSeconds = (Date.now() - killedAt) / 1000;
  const after = await converged(workloads, survivors, wanted);
  const seconds = (Date.now() - killedAt) / 1000;
  console.error(`${victims.length} objects of a killed replica moved in ${movedSeconds.toFixed(1)} s and converged in ${seconds.toFixed(1)} s (lease ${leaseSeconds} s)`);
  assert.ok(victims.every((name) => !ownedBy(after.find((o) => o.metadata.name === name)!, victim)));
  // Only the dead replica's objects moved.
  for (const object of before.filter((o) => !victims.includes(o.metadata.name))) assert.equal(owner(after.find((o) => o.metadata.name === object.metadata.name)!), owner(object));
  assert.ok(counterTotal(await metrics(lead), "appstack_shard_moves_total") - movesBefore >= victims.length);
  // The sharder's clock starts at the last renewal it saw, and it acts within a pass of the lapse.
  assert.ok(movedSeconds < leaseSeconds + 10, `moved ${movedSeconds} s after the kill`);
  assert.ok(seconds < leaseSeconds + 90, `converged in ${seconds} s`);
  // Its shard Lease goes too: each restart of a replica is a new member, and dead ones must not pile up.
  const leases = loadKubeConfig(cluster().cluster.kubeconfig).makeApiClient(CoordinationV1Api);
  await eventually("the killed replica's shard lease deleted", async () => {
    const names = (await leases.listNamespacedLease({ namespace, labelSelector: `${shardRingLabel}=appstack-operator` })).items.map((lease) => lease.metadata?.name ?? "");
    return names.length === survivors.length && !names.some((name) => name.includes(`-shard-replica-${victim.letter}-`)) ? true : undefined;
  });
  assertNoInterleaving();
});

test("a replica that joins takes about a quarter, each object drained from its owner first", async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  const before = await workloads.list("App", namespace);
  const joining = await startReplica("d");
  // The ring with the new member in it: convergence means every object is where it puts it, so the
  // wait below cannot end before the sharder has seen the new member (nor before the moves).
  const members = await eventually("the joining replica's shard Lease", async () => {
    const live = await liveMembers();
    return live.some((member) => member.startsWith("replica-d-")) ? live : undefined;
  });
  const ring = new HashRing(members);
  // Changes while the objects move: each must be applied once, by one replica at a time.
  for (const name of names) await setReplicas(workloads, name, 3);
  const survivors = replicas.filter(alive);
  const after = await converged(workloads, survivors, wanted, ring);
  const moved = after.filter((object) => owner(object) !== owner(before.find((o) => o.metadata.name === object.metadata.name)!));
  console.error(`${moved.length} of ${objects} objects moved to the new replica`);
  assert.ok(moved.every((object) => ownedBy(object, joining)), "an object moved between old replicas");
  // How many move is the ring's to say (about a quarter on average): each object is where the ring of the live members puts it.
  for (const object of after) assert.equal(owner(object), ring.owner(ringKey("App", namespace, object.metadata.name)), object.metadata.name);
  const lead = await leader();
  assert.ok(metricValue(await metrics(lead), "appstack_shard_moves_total", { reason: "drained" })! >= moved.length);
  let confirmed = 0;
  for (const replica of survivors.filter((r) => r !== joining)) confirmed += counterTotal(await metrics(replica), "appstack_shard_drains_total");
  assert.ok(confirmed >= moved.length, `${confirmed} drains confirmed for ${moved.length} moves`);
  assertNoInterleaving();
});

test("a replica frozen right before a Pulumi update, past its lease, resumes and writes nothing", async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  const lead = await leader();
  const frozen = replicas.find((replica) => replica !== lead && alive(replica) && replica.letter !== "d") ?? replicas.find((replica) => replica !== lead && alive(replica))!;
  const target = (await workloads.list("App", namespace)).find((object) => ownedBy(object, frozen))!;
  const name = target.metadata.name;
  // The replica's reconcile of the change stops at its status write, right before its `pulumi up`.
  const hold = log!.holdStatusWrite(frozen.user, name);
  await setReplicas(workloads, name, 4);
  await hold.held;
  signalTree(frozen.process.child.pid!, "SIGSTOP");
  const frozenAt = Date.now();
  hold.release();
  // Meanwhile its lease expires, the object moves, and changes again: the new owner applies it.
  await setReplicas(workloads, name, 5);
  await converged(workloads, replicas.filter((replica) => alive(replica) && replica !== frozen), wanted);
  signalTree(frozen.process.child.pid!, "SIGCONT");
  // It finds its lease lapsed and exits.
  await eventually("the frozen replica to exit", async () => (alive(frozen) ? undefined : true), 60_000);
  const late = log!.writes.filter((write) => write.user === frozen.user && write.at >= frozenAt);
  assert.deepEqual(late, [], "the frozen replica wrote after it resumed");
  assert.equal((await cluster().apps.readNamespacedDeployment({ name, namespace })).spec?.replicas, 5, "the change made while it was frozen was lost");
  assertNoInterleaving();
});

/** Whether any process of the replica's tree is stopped (state T): where a failpoint froze it. */
function stoppedInTree(replica: Replica): boolean {
  const root = replica.process.child.pid!;
  return [root, ...processesUnder(root)].some((pid) => processStat(pid)?.fields[0] === "T");
}

test("a replica frozen right after its ownership check, past its lease, resumes and writes nothing (no status, apply, finalizer or Event); its Preview App's plan is approved and applied by the new owner", async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  const lead = await leader();
  const victim = replicas.find((replica) => replica !== lead && alive(replica))!;
  const ring = await liveRing();
  const member = (await liveMembers()).find((name) => name.startsWith(`replica-${victim.letter}-`))!;
  const onVictim = (prefix: string) => Array.from({ length: 1_000 }, (_, i) => `${prefix}-${victim.letter}-${i}`).find((candidate) => ring.owner(ringKey("App", namespace, candidate)) === member)!;
  // A Preview App the victim previews: its plan waits for approval when the victim freezes.
  const gated = onVictim("gated");
  await workloads.create({ kind: "App", metadata: { name: gated, namespace }, spec: { image: "nginx:1.27", replicas: 1, updatePolicy: "Preview" } });
  const { preview } = await workloads.previewOf("App", namespace, gated);
  // An App the ring puts on the victim; its change (generation 2) passes the ownership check and
  // freezes the victim there, before any of the writes that carry no precondition (its status).
  const name = onVictim("freeze");
  await workloads.create({ kind: "App", metadata: { name, namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
  await workloads.ready("App", namespace, name);
  await setReplicas(workloads, name, 2);
  await eventually(`replica ${victim.letter} frozen at the failpoint`, async () => stoppedInTree(victim) || undefined, 60_000);
  // The rest of its tree too (its engines of other objects), as a frozen VM stops all of it.
  signalTree(victim.process.child.pid!, "SIGSTOP");
  const frozenAt = Date.now();
  // Meanwhile its lease lapses and its objects move; the new owner applies this one, changed.
  await setReplicas(workloads, name, 3);
  await eventually(`${name} Ready at 3 replicas on another replica`, async () => {
    const object = await workloads.get("App", namespace, name);
    const ready = object.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") && object.status?.observedGeneration === object.metadata.generation;
    const deployment = await cluster().apps.readNamespacedDeployment({ name, namespace }).catch(() => undefined);
    return ready && !ownedBy(object, victim) && deployment?.spec?.replicas === 3 ? object : undefined;
  }, 300_000);
  // The victim's plan, approved once another replica owns the App: applied there, as previewed.
  await eventually(`${gated} owned by a live replica`, async () => {
    const object = await workloads.get("App", namespace, gated);
    return owner(object) && !ownedBy(object, victim) && !object.metadata.labels?.[shardDrainLabel] ? object : undefined;
  }, 300_000);
  await workloads.approve("App", namespace, gated, preview.planId);
  const applied = await workloads.ready("App", namespace, gated, 300_000);
  assert.equal(applied.status?.stack?.appliedPlan, preview.planId, "the new owner applied the victim's plan, not a fresh preview");
  const settledStatus = (await workloads.get("App", namespace, name)).status;
  signalTree(victim.process.child.pid!, "SIGCONT");
  // It resumes inside the reconcile, past the check: every write it then tries is refused before it is sent, and it exits.
  await eventually("the frozen replica to exit", async () => (alive(victim) ? undefined : true), 60_000);
  const late = [...log!.writes, ...log!.otherWrites].filter((write) => write.user === victim.user && write.at >= frozenAt);
  assert.deepEqual(late, [], "the frozen replica wrote after it resumed");
  const object = await workloads.get("App", namespace, name);
  assert.deepEqual(object.status?.conditions, settledStatus?.conditions, "the frozen replica's status write went through");
  assert.equal((await cluster().apps.readNamespacedDeployment({ name, namespace })).spec?.replicas, 3, "the change made while it was frozen was lost");
  assertNoInterleaving();
  for (const app of [name, gated]) await workloads.delete("App", namespace, app);
  for (const app of [name, gated]) await workloads.gone("App", namespace, app);
});

test("a deleted object is finalized by its owner: its children and its stack go", async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  const doomed = names.slice(0, 3);
  for (const name of doomed) await workloads.delete("App", namespace, name);
  for (const name of doomed) await workloads.gone("App", namespace, name);
  for (const name of doomed) {
    await eventually(`${name}'s Deployment gone`, async () => (await cluster().apps.listNamespacedDeployment({ namespace })).items.every((d) => d.metadata?.name !== name) || undefined);
    const stackRows = await postgres!.query<{ key: string }>("SELECT key FROM pulumi_state WHERE key = $1", [`postgres/.pulumi/stacks/appstack/${stackName("App", namespace, name)}.json`]);
    assert.deepEqual(stackRows, [], `${name}'s stack survived its object`);
  }
  assertNoInterleaving();
});
