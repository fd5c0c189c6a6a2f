// Two operator replicas as pods on a real node, their stacks in a shared PostgreSQL server (the
// cluster's, listening on the node's bridge where pods reach the host), installed with `npx
// appstack pulumi up` and `appstack:replicas 2`: each replica reconciles the objects the ring gives
// it; the leading replica's pod deleted mid-update (SIGTERM, its grace) and its container killed
// mid-update (SIGKILL, the kubelet restarts it) lose no change and leave no lock behind. One
// real-node cluster for the file. Needs root and Debian's packages (test/helpers/real-node-gate.ts).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AppsV1Api, CoordinationV1Api, CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import pg from "pg";
import { memberName, ringKey, shardOwnerLabel, shardRingLabel } from "../../operator/controller/shard-labels.ts";
import { HashRing } from "../../operator/manager/ring.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { startCluster, type LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { loadImage } from "../../toolchain/cluster/node.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { buildImages } from "../../toolchain/images/build.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { eventually } from "../helpers/cluster.ts";
import { holdWrites } from "../helpers/hold.ts";
import { isReady, killContainer, livePodsOf, operatorNamespace, operatorSelector, podGone, repositoryProgram } from "../helpers/operator-install.ts";
import { podMetrics } from "../helpers/operator-pod.ts";
import { installScraper } from "../helpers/metrics-reader.ts";
import { metricValue, Workloads } from "../helpers/operator.ts";
import { realNodeSkip } from "../helpers/real-node-gate.ts";
import { assertReadsThroughRbac } from "../helpers/person.ts";
import { installPluginBin } from "../../operator/cmd/plugin-bin.ts";

const skip = realNodeSkip("images and node");
const enabled = skip === false;
const namespace = "default";
const waitMs = 300_000;
/** The leader Lease's name, which also names the ring (operator/manager/config.ts). */
const ringName = "appstack-operator";

const stateDir = mkdtempSync(join(tmpdir(), "appstack-in-cluster-replicas-"));
const stack = `in-cluster-replicas-${process.pid}`;
const fileStarted = Date.now();
let cluster: LocalCluster | undefined;
/** A token that may read the replicas' /metrics. */
const scraper = installScraper(() => cluster!.kubeconfig);
let core: CoreV1Api;
let apps: AppsV1Api;
let leases: CoordinationV1Api;
let workloads: Workloads;
let database: pg.Client;
const figures: string[] = [];
/** The Apps the tests created, deleted at the end. */
const created: string[] = [];
const { ok: pulumiOk } = repositoryProgram(() => cluster!, stateDir);

function figure(line: string): void {
  figures.push(line);
  console.error(`figure: ${line}`);
}

const secondsSince = (start: number) => ((Date.now() - start) / 1000).toFixed(1);

before(async () => {
  if (!enabled) return;
  const images = await buildImages(() => undefined);
  cluster = await startCluster({ realNode: true, postgres: true, exitOnSignal: true, log: (line) => console.error(line) });
  for (const image of images) loadImage(cluster, image.archive);
  const kc = loadKubeConfig(cluster.kubeconfig);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  leases = kc.makeApiClient(CoordinationV1Api);
  workloads = new Workloads(cluster.kubeconfig);
  database = new pg.Client({ connectionString: cluster.postgresUrl, connectionTimeoutMillis: 15_000, query_timeout: 15_000 });
  await database.connect();
});

after(async () => {
  await database?.end().catch(() => undefined);
  if (cluster) await cluster.stop();
  rmSync(stateDir, { recursive: true, force: true });
  rmSync(join(repoRoot, `Pulumi.${stack}.yaml`), { force: true });
  if (enabled) console.error(`figures:\n  ${[...figures, `file duration ${secondsSince(fileStarted)} s`].join("\n  ")}`);
});

interface Replica {
  readonly pod: V1Pod;
  /** Its member name on the ring (from its shard Lease's holder: the pod's name and a per-process suffix). */
  readonly member: string;
}

/** The replicas now: every live operator pod Ready, each holding a shard Lease, one of them the leader. */
async function replicas(count: number): Promise<{ all: Replica[]; leader: Replica; ring: HashRing }> {
  return eventually(`${count} operator replicas Ready, each with its shard Lease, one leading`, async () => {
    const pods = await livePodsOf(core, operatorNamespace, operatorSelector);
    if (pods.length !== count || !pods.every(isReady)) return undefined;
    const shardLeases = (await leases.listNamespacedLease({ namespace: operatorNamespace, labelSelector: `${shardRingLabel}=${ringName}` })).items;
    const members = shardLeases.map((lease) => lease.spec?.holderIdentity).filter((holder): holder is string => Boolean(holder)).map(memberName);
    const all = pods.map((pod) => ({ pod, member: members.find((member) => member.startsWith(`${pod.metadata!.name!}-`)) }));
    if (members.length !== count || all.some((replica) => !replica.member)) return undefined;
    const holder = (await leases.readNamespacedLease({ name: ringName, namespace: operatorNamespace })).spec?.holderIdentity;
    const leader = all.find((replica) => holder && replica.member === memberName(holder));
    return leader ? { all: all as Replica[], leader: leader as Replica, ring: new HashRing(members) } : undefined;
  }, waitMs);
}

/** The first name `web-<n>` that the ring gives to `member`. */
function nameOwnedBy(ring: HashRing, member: string, taken: readonly string[]): string {
  for (let n = 0; n < 1_000; n++) {
    const name = `web-${n}`;
    if (!taken.includes(name) && ring.owner(ringKey("App", namespace, name)) === member) return name;
  }
  throw new Error(`no name of 1,000 on member ${member}`);
}

const ownerOf = async (name: string) => (await workloads.get("App", namespace, name)).metadata.labels?.[shardOwnerLabel];

/** An App of the http image whose name the ring gives to `member`, Ready and labelled for it. */
async function appOn(ring: HashRing, member: string): Promise<string> {
  const name = nameOwnedBy(ring, member, created);
  created.push(name);
  const started = Date.now();
  await workloads.create({ kind: "App", metadata: { name, namespace }, spec: { image: "localhost/appstack/http:0.1.0", replicas: 1, port: 80 } });
  await workloads.ready("App", namespace, name, waitMs);
  figure(`App ${name} created to Ready on replica ${member}: ${secondsSince(started)} s`);
  assert.equal(await ownerOf(name), member, `App ${name} on the ring's member`);
  return name;
}

/** The App converged on `replicas`: its status for the latest generation, its Deployment and that many pods Ready, no lock reported. */
async function converged(name: string, replicaCount: number): Promise<void> {
  const app = await workloads.ready("App", namespace, name, waitMs);
  assert.equal((app.spec as { replicas?: number }).replicas, replicaCount);
  assert.equal(app.status?.observedGeneration, app.metadata.generation);
  assert.ok(!JSON.stringify(app.status?.conditions).includes("StackLocked"), JSON.stringify(app.status?.conditions));
  assert.equal((await apps.readNamespacedDeployment({ name, namespace })).spec?.replicas, replicaCount);
  await eventually(`${replicaCount} pods of ${name} Ready`, async () => {
    const pods = await livePodsOf(core, namespace, `app.kubernetes.io/instance=${name}`);
    return pods.length === replicaCount && pods.every(isReady) ? true : undefined;
  }, 120_000);
}

/** The backend's rows under `.pulumi/<folder>/` (Pulumi prefixes its keys with the database's name). */
async function stateKeys(folder: "stacks" | "locks"): Promise<string[]> {
  const rows = await database.query<{ key: string }>("SELECT key FROM pulumi_state WHERE key LIKE $1 ORDER BY key", [`%/.pulumi/${folder}/%`]);
  return rows.rows.map((row) => row.key);
}

let leaderApp = "";
let otherApp = "";

test("`pulumi up` with appstack:replicas 2 and a postgres:// backendUrl: two pods Ready, each with a shard Lease; an App the ring gives each replica is reconciled there, its stack a row in PostgreSQL", { skip, timeout: 900_000 }, async () => {
  let started = Date.now();
  await pulumiOk("stack", "init", stack);
  await pulumiOk("config", "set", "--secret", "appstack:passphrase", "in-cluster-passphrase", "--stack", stack);
  await pulumiOk("config", "set", "--secret", "appstack:backendUrl", cluster!.postgresUrl!, "--stack", stack);
  await pulumiOk("config", "set", "appstack:replicas", "2", "--stack", stack);
  await pulumiOk("config", "set", "appstack:image", "appstack:0.1.0", "--stack", stack);
  figure(`stack init and four config sets ${secondsSince(started)} s`);
  started = Date.now();
  await pulumiOk("up", "--yes", "--skip-preview", "--stack", stack);
  const { all, leader, ring } = await replicas(2);
  figure(`install of two replicas: pulumi up to both pods Ready with their shard Leases ${secondsSince(started)} s`);
  // The password stays in the Secret: the Deployment names it only by reference.
  const deployment = await apps.readNamespacedDeployment({ name: "appstack-operator", namespace: operatorNamespace });
  assert.ok(!JSON.stringify(deployment.spec).includes(cluster!.postgresUrl!), "the backend URL in the Deployment");
  assert.deepEqual({ ...deployment.spec?.strategy?.rollingUpdate }, { maxSurge: 1, maxUnavailable: 0 });

  const other = all.find((replica) => replica !== leader)!;
  leaderApp = await appOn(ring, leader.member);
  otherApp = await appOn(ring, other.member);
  // Each replica's informers hold its own object only.
  for (const replica of all) assert.equal(metricValue(await podMetrics(replica.pod, await scraper()), "appstack_shard_objects"), 1, replica.pod.metadata?.name);
  const stacks = await stateKeys("stacks");
  for (const name of [leaderApp, otherApp]) assert.ok(stacks.some((key) => key.endsWith(`/${stackName("App", namespace, name)}.json`)), `${name}'s stack in ${stacks.join(", ")}`);
  assert.deepEqual(await stateKeys("locks"), []);
});

test("a person with a Role in default only and nothing but a kubeconfig reads an App's history and the status through the API server (the stacks are in PostgreSQL); refused in another namespace", { skip, timeout: 300_000 }, async () => {
  await assertReadsThroughRbac(loadKubeConfig(cluster!.kubeconfig), cluster!.kubeconfig, installPluginBin(join(stateDir, "bin")), "bob", namespace, otherApp, "kube-system");
});

test("the leading replica's pod deleted while it updates its App (held at admission): it stops within its grace, the held change and one made during its shutdown are both applied, the other replica's App untouched", { skip, timeout: 900_000 }, async () => {
  const { leader } = await replicas(2);
  assert.equal(await ownerOf(leaderApp), leader.member);
  const untouched = (await apps.readNamespacedDeployment({ name: otherApp, namespace })).metadata?.generation;
  const hold = await holdWrites(cluster!, "deployments", "UPDATE", namespace, leaderApp, /^appstack$/);
  const oldName = leader.pod.metadata!.name!;
  let deleted = 0;
  try {
    await workloads.mergeSpec("App", namespace, leaderApp, { replicas: 2 });
    await hold.held;
    deleted = Date.now();
    await core.deleteNamespacedPod({ name: oldName, namespace: operatorNamespace });
    await eventually("the leader's pod terminating", async () => ((await core.readNamespacedPod({ name: oldName, namespace: operatorNamespace })).metadata?.deletionTimestamp ? true : undefined), 30_000);
    // A change while the old replica shuts down: it must not be lost between the two owners.
    await workloads.mergeSpec("App", namespace, leaderApp, { replicas: 3 });
  } finally {
    await hold.release();
  }
  await podGone(core, oldName, operatorNamespace, 120_000);
  const stopSeconds = (Date.now() - deleted) / 1000;
  figure(`leading replica's pod deleted mid-update: gone ${stopSeconds.toFixed(1)} s after the delete (grace 90 s)`);
  // Before the kubelet's SIGKILL at the end of terminationGracePeriodSeconds (90): it stopped on SIGTERM.
  assert.ok(stopSeconds < 80, `the old pod took ${stopSeconds} s: SIGTERM not honoured`);
  const { all, ring } = await replicas(2);
  assert.ok(all.every((replica) => replica.pod.metadata?.name !== oldName));
  await converged(leaderApp, 3);
  figure(`leading replica's pod deleted mid-update: the App Ready with both changes ${secondsSince(deleted)} s after the delete`);
  await converged(otherApp, 1);
  assert.equal((await apps.readNamespacedDeployment({ name: otherApp, namespace })).metadata?.generation, untouched);
  // Both objects where the ring of the live replicas puts them.
  for (const name of [leaderApp, otherApp]) assert.equal(await eventually(`${name} on its ring member`, async () => ((await ownerOf(name)) === ring.owner(ringKey("App", namespace, name)) ? true : undefined), 60_000), true);
  assert.deepEqual(await stateKeys("locks"), []);
});

test("the leading replica's container killed while it updates its App (held at admission): the kubelet restarts it, its lock is broken, the change is applied, no lock row stays", { skip, timeout: 900_000 }, async () => {
  const { leader, ring } = await replicas(2);
  const name = await appOn(ring, leader.member);
  const hold = await holdWrites(cluster!, "deployments", "UPDATE", namespace, name, /^appstack$/);
  const podName = leader.pod.metadata!.name!;
  let killed = 0;
  try {
    await workloads.mergeSpec("App", namespace, name, { replicas: 2 });
    await hold.held;
    assert.equal((await stateKeys("locks")).length, 1, "the engine's lock row while it is held");
    killed = Date.now();
    killContainer(cluster!, leader.pod);
    await eventually("the killed container restarted and Ready", async () => {
      const pod = await core.readNamespacedPod({ name: podName, namespace: operatorNamespace });
      return (pod.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 && isReady(pod) ? true : undefined;
    }, 180_000);
  } finally {
    await hold.release();
  }
  await converged(name, 2);
  figure(`leading replica's container killed mid-update: the App Ready with the change ${secondsSince(killed)} s after the kill (lease 15 s)`);
  const { all } = await replicas(2);
  const logs = await Promise.all(all.map((replica) => core.readNamespacedPodLog({ name: replica.pod.metadata!.name!, namespace: operatorNamespace })));
  const appStack = stackName("App", namespace, name);
  const broken = logs.join("\n").split("\n").find((line) => /"msg":"breaking a (stale )?stack lock/.test(line) && line.includes(appStack));
  assert.ok(broken, `no replica broke the killed engine's lock on ${appStack}:\n${logs.join("\n")}`);
  assert.deepEqual(await stateKeys("locks"), []);
});

test("the Apps deleted, then `pulumi destroy`: children and stack rows gone, nothing of the install left", { skip, timeout: 900_000 }, async () => {
  await Promise.all(created.map((name) => workloads.delete("App", namespace, name)));
  await Promise.all(created.map((name) => workloads.gone("App", namespace, name, waitMs)));
  for (const name of created) assert.equal((await livePodsOf(core, namespace, `app.kubernetes.io/instance=${name}`)).length, 0);
  const stacks = await stateKeys("stacks");
  for (const name of created) assert.ok(!stacks.some((key) => key.endsWith(`/${stackName("App", namespace, name)}.json`)), `${name}'s stack row left: ${stacks.join(", ")}`);
  assert.deepEqual(await stateKeys("locks"), []);
  await pulumiOk("destroy", "--yes", "--skip-preview", "--stack", stack);
  await eventually("the operator's namespace gone", async () => ((await core.listNamespace()).items.some((ns) => ns.metadata?.name === operatorNamespace) ? undefined : true), waitMs);
});
