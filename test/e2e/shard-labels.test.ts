// The labels shard.appstack.dev/* say which replica reconciles an object (docs/sharding.md); only
// the operator's own user may set, change or remove them. A person's `kubectl replace` that leaves
// them out (what Argo CD's Replace=true sends during a drain), a `kubectl label` of one, and an
// object created with one are refused by the API server, naming the labels; every other change of
// the person's goes through, and the operator's sharder labels the objects as before. The operator
// runs sharded with a client certificate of its own user; the person is the cluster's admin.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { shardDrainLabel, shardOwnerLabel } from "../../operator/controller/shard-labels.ts";
import { startPostgres, type PostgresServer } from "../../toolchain/cluster/postgres.ts";
import { toolPath } from "../../toolchain/tools.ts";
import type { Workload } from "../../crds/types.ts";
import { eventually, useCluster } from "../helpers/cluster.ts";
import { disposeOperator, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { replicaKubeconfig } from "../helpers/write-log.ts";

const namespace = "default";
const scratch = mkdtempSync(join(tmpdir(), "appstack-shard-labels-"));
let operator: OperatorProcess | undefined;
let postgres: PostgresServer | undefined;
let workloads: Workloads;
const cluster = useCluster(async ({ cluster: local }) => {
  // Sharded only on PostgreSQL: the operator refuses any other backend.
  postgres = await startPostgres({ dir: scratch, log: (line) => console.error(line) });
  // The operator's own user: it installs the API (and so the policy) for itself, as `npm start` does.
  operator = await startOperatorProcess(replicaKubeconfig(local, "appstack-shard-operator"), { env: { APPSTACK_SHARDING: "true", POD_NAME: "replica-a", APPSTACK_BACKEND_URL: postgres.url } });
  workloads = new Workloads(local.kubeconfig);
}, async () => {
  await disposeOperator(operator);
  // The server's data is in the scratch folder: removed only once the server has stopped.
  await postgres?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const execFileAsync = promisify(execFile);

/** The pinned kubectl as a person types it, with the cluster admin's kubeconfig: its output, or its error's. */
async function kubectl(...args: string[]): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout } = await execFileAsync(toolPath("kubectl"), [`--kubeconfig=${cluster().cluster.kubeconfig}`, `--namespace=${namespace}`, ...args], { encoding: "utf8", timeout: 30_000, env: { PATH: process.env["PATH"] ?? "", KUBECACHEDIR: join(scratch, "kube-cache") } });
    return { ok: true, output: stdout };
  } catch (error) {
    return { ok: false, output: String((error as { stderr?: string }).stderr ?? error) };
  }
}

let files = 0;
/** `kubectl replace -f` of `object`, as a person who edited the YAML (or Argo CD with Replace=true) sends it. */
function replace(object: object): Promise<{ ok: boolean; output: string }> {
  const file = join(scratch, `object-${files++}.json`);
  writeFileSync(file, JSON.stringify(object));
  return kubectl("replace", "-f", file);
}

const shardLabelsOf = (object: Workload) => Object.keys(object.metadata.labels ?? {}).filter((key) => key.startsWith("shard.appstack.dev/"));

test("only the operator sets or changes the shard labels: a person's replace without them, a label of one and a create with one are refused, naming them", async () => {
  await workloads.create({ kind: "App", metadata: { name: "sharded", namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
  // The operator's sharder labels it, then its owner reconciles it.
  const labelled = await eventually("the sharder to label the App", async () => {
    const object = await workloads.get("App", namespace, "sharded");
    return object.metadata.labels?.[shardOwnerLabel] ? object : undefined;
  });
  const owner = labelled.metadata.labels![shardOwnerLabel]!;
  await workloads.ready("App", namespace, "sharded");

  // The manifest a person kept, without the labels the sharder added: replaced as such, they would go.
  const live = await workloads.get("App", namespace, "sharded");
  const others = Object.fromEntries(Object.entries(live.metadata.labels ?? {}).filter(([key]) => !key.startsWith("shard.appstack.dev/")));
  const stripped = await replace({ ...live, metadata: { ...live.metadata, labels: others } });
  assert.equal(stripped.ok, false, `a replace without the shard labels went through:\n${stripped.output}`);
  assert.match(stripped.output, /shard\.appstack\.dev\/owner/);
  assert.match(stripped.output, /only the appstack operator sets, changes or removes them/);
  const relabelled = await kubectl("label", "app", "sharded", `${shardOwnerLabel}=someone-else`, "--overwrite");
  assert.equal(relabelled.ok, false, relabelled.output);
  assert.match(relabelled.output, /shard\.appstack\.dev\/owner/);
  const drained = await kubectl("label", "app", "sharded", `${shardDrainLabel}=someone-else`);
  assert.equal(drained.ok, false, drained.output);
  assert.match(drained.output, /shard\.appstack\.dev\/drain/);
  const manifest = join(scratch, "preassigned.json");
  writeFileSync(manifest, JSON.stringify({ apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: "preassigned", namespace, labels: { [shardOwnerLabel]: owner } }, spec: { image: "nginx:1.27" } }));
  const created = await kubectl("create", "-f", manifest);
  assert.equal(created.ok, false, created.output);
  assert.match(created.output, /shard\.appstack\.dev\/owner/);
  assert.deepEqual(shardLabelsOf(await workloads.get("App", namespace, "sharded")), [shardOwnerLabel], "the refused writes changed the labels");

  // Every other change of the person's goes through: a replace that keeps the labels, a label of its own.
  const kept = await replace({ ...live, spec: { ...(live.spec as object), replicas: 2 } });
  assert.equal(kept.ok, true, kept.output);
  assert.equal((await kubectl("label", "app", "sharded", "team=web")).ok, true);
  const changed = await eventually("the App Ready with its new spec", async () => {
    const object = await workloads.ready("App", namespace, "sharded");
    return (object.spec as { replicas?: number }).replicas === 2 ? object : undefined;
  });
  assert.equal(changed.metadata.labels?.[shardOwnerLabel], owner);
  assert.equal(changed.metadata.labels?.["team"], "web");

  await workloads.delete("App", namespace, "sharded");
  await workloads.gone("App", namespace, "sharded");
});
