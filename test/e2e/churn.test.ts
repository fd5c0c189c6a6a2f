// Churn: many objects of both kinds under random creates, image changes, scales (through the scale
// subresource, as kubectl scale), deletes and updatePolicy switches for a while, against one
// operator. Then every live object must match its spec exactly (its plans approved), every
// deleted one must be gone with its stack, and nothing else may be left. The operator's RSS at
// start, peak and end is reported. APPSTACK_CHURN_OBJECTS, APPSTACK_CHURN_SECONDS and
// APPSTACK_CHURN_SEED set the size, the length and the random source.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type { WorkloadKind } from "../../crds/types.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { eventually, useCluster } from "../helpers/cluster.ts";
import { counterTotal, disposeOperator, lockFiles, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { httpGet } from "../helpers/http.ts";
import { ProcessTreeSampler } from "../helpers/proctree.ts";
import { seedFrom } from "../helpers/random.ts";

const objects = Number(process.env["APPSTACK_CHURN_OBJECTS"] ?? "50");
const seconds = Number(process.env["APPSTACK_CHURN_SECONDS"] ?? "90");
const namespace = "default";
const images = ["nginx:1.27", "nginx:1.28", "nginx:1.29", "registry.example.test/app:2"];

let operator: OperatorProcess | undefined;
const cluster = useCluster(undefined, () => disposeOperator(operator));

interface Wanted {
  kind: WorkloadKind;
  image: string;
  replicas: number;
  preview: boolean;
}

const spec = (want: Wanted) =>
  want.kind === "App"
    ? { image: want.image, replicas: want.replicas, port: 80, updatePolicy: want.preview ? "Preview" : "Auto" }
    : { image: want.image, size: want.replicas, updatePolicy: want.preview ? "Preview" : "Auto" };

const mib = (kib: number) => `${Math.round(kib / 1024)} MiB`;

/** Every live object exactly as wanted (its plans approved), every deleted one gone with its stack, nothing else. */
async function assertConverged(workloads: Workloads, live: Map<string, Wanted>, deleted: Map<string, WorkloadKind>, stateDir: string): Promise<void> {
  for (const [name, want] of live) {
    const object = await workloads.readyApproving(want.kind, namespace, name, 600_000);
    const deployment = await cluster().apps.readNamespacedDeployment({ name, namespace });
    assert.equal(deployment.spec?.replicas, want.replicas, name);
    assert.equal(deployment.spec?.template.spec?.containers[0]?.image, want.image, name);
    assert.equal(deployment.metadata?.ownerReferences?.[0]?.uid, object.metadata.uid, name);
    assert.equal(object.status?.readyReplicas ?? 0, want.replicas, name);
    const service = await cluster().core.readNamespacedService({ name, namespace });
    assert.equal(service.metadata?.ownerReferences?.[0]?.uid, object.metadata.uid, name);
  }
  for (const [name, kind] of deleted) {
    await workloads.gone(kind, namespace, name, 600_000);
    assert.ok(!existsSync(join(stateDir, "backend", ".pulumi", "stacks", "appstack", `${stackName(kind, namespace, name)}.json`)), `${name}'s stack survived its object`);
  }
  const managed = { labelSelector: "app.kubernetes.io/managed-by=appstack" };
  const deployments = (await cluster().apps.listNamespacedDeployment({ namespace, ...managed })).items.map((d) => d.metadata!.name!).sort();
  const services = (await cluster().core.listNamespacedService({ namespace, ...managed })).items.map((s) => s.metadata!.name!).sort();
  assert.deepEqual(deployments, [...live.keys()].sort());
  assert.deepEqual(services, [...live.keys()].sort());
}

test(`churn: ${objects} objects under random creates, changes, scales, deletes and policy switches for ${seconds} s, then every spec met exactly`, { timeout: 60 * 60_000 }, async () => {
  const random = seedFrom("APPSTACK_CHURN_SEED", "churn");
  const { kubeconfig } = cluster().cluster;
  const workloads = new Workloads(kubeconfig);
  operator = await startOperatorProcess(kubeconfig);
  const sampler = new ProcessTreeSampler(operator.child.pid!);
  sampler.start(1_000);
  await eventually("the operator to serve", async () => ((await httpGet(`http://127.0.0.1:${operator!.healthPort}/readyz`)).status === 200 ? true : undefined));
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const startKiB = sampler.rootKiB;

  const live = new Map<string, Wanted>();
  const deleted = new Map<string, WorkloadKind>();
  const counts = { create: 0, image: 0, scale: 0, delete: 0, policy: 0, approve: 0 };
  let serial = 0;
  const create = async () => {
    const name = `c-${serial++}`;
    const want: Wanted = { kind: random.chance(0.7) ? "App" : "Memcached", image: random.pick(images), replicas: random.int(0, 3), preview: random.chance(0.2) };
    await workloads.create({ kind: want.kind, metadata: { name, namespace }, spec: spec(want) });
    live.set(name, want);
    counts.create++;
  };
  const some = () => {
    const name = random.pick([...live.keys()]);
    return { name, want: live.get(name)! };
  };
  const actions: Record<Exclude<keyof typeof counts, "create">, () => Promise<void>> = {
    image: async () => {
      const { name, want } = some();
      want.image = random.pick(images);
      await workloads.mergeSpec(want.kind, namespace, name, { image: want.image });
    },
    scale: async () => {
      const { name, want } = some();
      want.replicas = random.int(0, 3);
      await workloads.scale(want.kind, namespace, name, want.replicas);
    },
    delete: async () => {
      const { name, want } = some();
      await workloads.delete(want.kind, namespace, name);
      live.delete(name);
      deleted.set(name, want.kind);
    },
    policy: async () => {
      const { name, want } = some();
      want.preview = !want.preview;
      await workloads.mergeSpec(want.kind, namespace, name, { updatePolicy: want.preview ? "Preview" : "Auto" });
    },
    approve: async () => {
      const { name, want } = some();
      const preview = (await workloads.get(want.kind, namespace, name)).status?.preview;
      if (preview) await workloads.approve(want.kind, namespace, name, preview.planId);
    },
  };

  for (let i = 0; i < objects; i++) await create();
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    if (live.size < objects && random.chance(0.5)) await create();
    else {
      const action = random.pick(Object.keys(actions) as (keyof typeof actions)[]);
      await actions[action]();
      counts[action]++;
    }
    await new Promise((resolve) => setTimeout(resolve, random.int(50, 400)));
  }
  console.error(`churn: ${JSON.stringify(counts)}; ${live.size} objects live, ${deleted.size} deleted`);

  await assertConverged(workloads, live, deleted, operator.stateDir);

  const metrics = (await httpGet(`http://127.0.0.1:${operator.healthPort}/metrics`)).body;
  sampler.stop();
  console.error(`churn: operator RSS start ${mib(startKiB)}, peak ${mib(sampler.peakRootKiB)}, end ${mib(sampler.rootKiB)}; with its engines peak ${mib(sampler.peakTreeKiB)}; ${counterTotal(metrics, "appstack_pulumi_operations_total")} Pulumi operations`);
  assert.equal(operator.child.exitCode, null, "the operator exited");
  await operator.stop();
  assert.deepEqual(lockFiles(operator.stateDir), []);
});
