// Kills at random moments: the operator's whole process group is SIGKILLed 20 times (more, if fewer
// than half of those landed inside a running operation) while objects are created, scaled, changed
// by hand (drift: refresh), previewed and deleted; after each kill a new operator starts on the
// same state. At the end every object matches its spec, and nothing is
// left behind: no lock, no pending operation, no stack of a deleted object, no stray Deployment,
// no plugin process. The random source is seeded; the seed is printed (APPSTACK_KILL_SEED replays it).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients, mergePatch } from "../../operator/kube/clients.ts";
import { orphanedPlugins } from "../../operator/pulumi/orphans.ts";
import { eventually, useCluster } from "../helpers/cluster.ts";
import { seedFrom } from "../helpers/random.ts";
import { checkpointPath, disposeOperator, firstPassDone, lockFiles, metricValue, pendingOperations, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { httpGet } from "../helpers/http.ts";

const kills = Number(process.env["APPSTACK_KILLS"] ?? "20");
const namespace = "default";
const env = { APPSTACK_LEADER_ELECT: "false" };

let operator: OperatorProcess | undefined;
const cluster = useCluster(undefined, () => disposeOperator(operator));


test(`${kills} SIGKILLs at random moments of up, destroy, refresh and preview: every object converges and nothing is left behind`, async () => {
  const random = seedFrom("APPSTACK_KILL_SEED", "kill test");
  const next = random.next;
  const pick = random.pick;
  const { kubeconfig } = cluster().cluster;
  const workloads = new Workloads(kubeconfig);
  const live = new Map<string, { replicas: number; preview: boolean }>();
  const deleted = new Set<string>();
  let created = 0;
  let duringOperation = 0;

  const create = async () => {
    const name = `k-${created++}`;
    const preview = next() < 0.2;
    const replicas = 1 + Math.floor(next() * 2);
    await workloads.create({ kind: "App", metadata: { name, namespace }, spec: { image: "nginx:1.27", replicas, port: 80, ...(preview ? { updatePolicy: "Preview" } : {}) } });
    live.set(name, { replicas, preview });
  };
  const actions = [
    create,
    create,
    async () => {
      const name = pick([...live.keys()]);
      const replicas = 1 + Math.floor(next() * 3);
      await workloads.mergeSpec("App", namespace, name, { replicas });
      live.get(name)!.replicas = replicas;
    },
    async () => {
      // Drift: the next operation on it is a refresh and an up (or a refreshed preview).
      const name = pick([...live.keys()]);
      await cluster().apps.patchNamespacedDeployment({ name, namespace, body: { spec: { replicas: 4 } } }, mergePatch).catch(() => undefined);
    },
    async () => {
      const name = pick([...live.keys()]);
      await workloads.delete("App", namespace, name);
      live.delete(name);
      deleted.add(name);
    },
  ];

  await installApi(kubeClients(kubeconfig));
  for (let i = 0; i < 6; i++) await create();
  // At least `kills` kills, and at least half of them inside a running operation: an operation can
  // end during the random pause before its kill (more often on a faster machine), so instead of
  // hoping that enough kills land inside one, the test goes on killing, up to three times as
  // often, until they have.
  let attempts = 0;
  const enoughKills = () => attempts >= kills && (duringOperation >= kills / 2 || attempts >= kills * 3);
  while (!enoughKills()) {
    attempts++;
    operator = await startOperatorProcess(kubeconfig, { stateDir: operator?.stateDir, env });
    for (let n = 1 + Math.floor(next() * 3); n > 0; n--) await pick(live.size > 4 ? actions : [create])();
    // The kill lands at a random point of an operation: once one runs (if one comes within 8 s).
    const running = async () => metricValue(await httpGet(`http://127.0.0.1:${operator!.healthPort}/metrics`).then((r) => r.body, () => ""), "appstack_pulumi_operations_running") ?? 0;
    await eventually("an operation to run", async () => ((await running()) > 0 ? true : undefined), 8_000).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, next() * 1_500));
    if ((await running()) > 0) duringOperation++;
    await operator.stop("SIGKILL");
  }
  console.error(`kill test: ${attempts} kills, ${duringOperation} while a Pulumi operation ran; ${created} objects created, ${deleted.size} deleted`);
  assert.ok(duringOperation >= kills / 2, `only ${duringOperation} of ${attempts} kills hit a running operation`);

  operator = await startOperatorProcess(kubeconfig, { stateDir: operator?.stateDir, env });
  // A hand edit made just before the last kill is this operator's to find: until its first pass,
  // a status can still be the Ready an earlier operator wrote before the edit.
  await firstPassDone(operator, live.size);
  for (const [name, want] of live) {
    const ready = await workloads.readyApproving("App", namespace, name, 180_000);
    const deployment = await cluster().apps.readNamespacedDeployment({ name, namespace });
    assert.equal(deployment.spec?.replicas, want.replicas, name);
    assert.equal(deployment.metadata?.ownerReferences?.[0]?.uid, ready.metadata.uid, name);
  }
  for (const name of deleted) {
    await workloads.gone("App", namespace, name, 180_000);
    assert.ok(!existsSync(checkpointPath(operator.stateDir, "App", namespace, name)), `${name}'s stack survived its object`);
  }
  // No Deployment or Service without its live object, none twice.
  await eventually("the deleted objects' children to be gone", async () => {
    const deployments = (await cluster().apps.listNamespacedDeployment({ namespace, labelSelector: "app.kubernetes.io/managed-by=appstack" })).items.map((d) => d.metadata!.name!).sort();
    const services = (await cluster().core.listNamespacedService({ namespace, labelSelector: "app.kubernetes.io/managed-by=appstack" })).items.map((s) => s.metadata!.name!).sort();
    const want = [...live.keys()].sort();
    return JSON.stringify(deployments) === JSON.stringify(want) && JSON.stringify(services) === JSON.stringify(want) ? true : undefined;
  });
  await operator.stop();
  assert.deepEqual(lockFiles(operator.stateDir), []);
  for (const name of live.keys()) {
    assert.deepEqual(pendingOperations(operator.stateDir, "App", namespace, name), [], `${name} has pending operations`);
  }
  assert.deepEqual(orphanedPlugins(join(operator.stateDir, "pulumi-home")), []);
});
