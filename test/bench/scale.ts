// `npm run bench:scale`: one round of BENCH_SCALE_APPS new Apps (1,000 by default) on one replica,
// against the baseline's copies of them in the same run, on a cluster with kwok nodes for all of
// them; then what those objects cost appstack once they exist: its memory, a quiet minute, a
// restart (every object reconciled again, as a resync does), its state on disk and the backend's
// `pulumi stack ls`. Prints Markdown for docs/measurements.md; nothing here asserts on time.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients, type KubeClients } from "../../operator/kube/clients.ts";
import { defaultConcurrency } from "../../operator/manager/config.ts";
import { buildToolchain } from "../../toolchain/build.ts";
import { startCluster } from "../../toolchain/cluster/cluster.ts";
import { freeLoopbackPorts } from "../../toolchain/cluster/ports.ts";
import { counterTotal } from "../helpers/operator.ts";
import { ProcessTreeSampler } from "../helpers/proctree.ts";
import { countRequests, countRequestsByKind, requestKindTable } from "./apiserver-requests.ts";
import { CpuMeter, type Component } from "./cpu.ts";
import type { ReplicaFigures } from "./replica-table.ts";
import { Replicas, stopProcess } from "./replicas.ts";
import { applyAndWait, node, scrape } from "./rounds.ts";
import { appsApi } from "./ready-watch.ts";
import { scaleTable, type BackendSize, type ScaleFigures } from "./scale-table.ts";
import { benchNodes, idleSeconds } from "./settings.ts";
import { folderSize, postgresBackendSize, stackLsSeconds, type FolderSize } from "./state-size.ts";

const n = Number(process.env["BENCH_SCALE_APPS"] ?? "1000");
const replicaCount = Number(process.env["BENCH_SCALE_REPLICAS"] ?? "1");
/** A round of this many new Apps first, on the same replicas: the cost of one operation at both sizes, side by side (0: none). */
const referenceN = Number(process.env["BENCH_SCALE_REFERENCE_APPS"] ?? "100");
/** Replicas share one PostgreSQL backend; one replica keeps its file backend unless BENCH_SCALE_BACKEND=postgres. */
const onPostgres = replicaCount > 1 || process.env["BENCH_SCALE_BACKEND"] === "postgres";

/** What the stacks take: the replicas' state folders and the backend, and the time of `stack ls` against it. */
async function storage(replicas: Replicas): Promise<Pick<ScaleFigures, "state" | "backend" | "stackLs">> {
  const folders = replicas.members.map((replica) => folderSize(replica.stateDir));
  const state: FolderSize = { bytes: folders.reduce((sum, f) => sum + f.bytes, 0), diskBytes: folders.reduce((sum, f) => sum + f.diskBytes, 0), files: folders.reduce((sum, f) => sum + f.files, 0) };
  const url = replicas.settings.backendUrl;
  const first = replicas.members[0]!.stateDir;
  const backend: BackendSize = url ? { kind: "postgres", table: await postgresBackendSize(url) } : { kind: "file", folder: folderSize(join(first, "backend")) };
  // With the engines' home and workspace of the first replica, as `appstack stacks` in its pod would run it.
  return { state, backend, stackLs: stackLsSeconds(first, "bench", 3, url) };
}

async function readyCount(clients: KubeClients, namespace: string): Promise<number> {
  const list = (await clients.custom.listNamespacedCustomObject({ ...appsApi, namespace })) as { items: { metadata: { generation?: number }; status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] } }[] };
  return list.items.filter((app) => app.status?.observedGeneration === app.metadata.generation && app.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")).length;
}

async function main(): Promise<void> {
  buildToolchain();
  const concurrency = process.env["APPSTACK_CONCURRENCY"] ?? String(defaultConcurrency());
  // Both reconcilers' Apps stay until the end (appstack's finalizers need appstack): a pod each.
  const nodes = benchNodes(2 * n);
  const cluster = await startCluster({ exitOnSignal: true, log: (line) => console.error(line), nodes, postgres: onPostgres });
  const stateRoot = mkdtempSync(join(tmpdir(), "appstack-scale-"));
  const load: number[] = [];
  const loadTimer = setInterval(() => load.push(loadavg()[0]!), 10_000);
  let replicas: Replicas | undefined;
  try {
    const clients = kubeClients(cluster.kubeconfig);
    await installApi(clients);
    const components: readonly Component[] = cluster.components;
    const env = { KUBECONFIG: cluster.kubeconfig };
    const requests = () => countRequests(cluster.kubeconfig);

    // The baseline first: its round is the short one, and its ratio stands even if appstack's does not finish.
    const baselineChild = node("test/bench/baseline.ts", { ...env, BASELINE_CONCURRENCY: concurrency, BASELINE_NAMESPACE_PREFIX: "scale-baseline-" });
    const baselineSampler = new ProcessTreeSampler(baselineChild.pid!);
    baselineSampler.start();
    await sleep(3_000);
    const baselineRequests = await requests();
    const baseline = await applyAndWait(clients, `scale-baseline-${n}`, n, { sampler: baselineSampler, meter: new CpuMeter(baselineSampler, components) });
    const baselineRate = await baselineRequests();
    baselineSampler.stop();
    await stopProcess(baselineChild);
    console.error(`baseline: ${n} Apps Ready in ${baseline.totalSeconds.toFixed(1)} s`);

    const namespace = `scale-appstack-${n}`;
    const referenceNamespace = `scale-appstack-reference-${referenceN}`;
    // The default resync period (10 minutes): the quiet minute is the operator left alone.
    const replicaEnv = { ...env, APPSTACK_PASSPHRASE: "bench", APPSTACK_CONCURRENCY: concurrency, APPSTACK_LOG_LEVEL: "warn", APPSTACK_NAMESPACES: referenceN ? `${referenceNamespace},${namespace}` : namespace };
    replicas = new Replicas({ count: replicaCount, env: replicaEnv, stateRoot, backendUrl: onPostgres ? cluster.postgresUrl : undefined, ports: await freeLoopbackPorts(replicaCount) });
    await replicas.untilReady();
    await sleep(1_000); // a PSS sample of the ready operator with no object (one in ten samples reads it)
    const { group } = replicas;
    const ready = replicas.readings();
    // Before the large round, in a namespace of its own: the operator and its backend at this small size.
    const reference = referenceN ? await applyAndWait(clients, referenceNamespace, referenceN, { sampler: group, meter: new CpuMeter(group, components) }, replicas.ports) : undefined;
    if (reference) console.error(`appstack: ${referenceN} Apps Ready in ${reference.totalSeconds.toFixed(1)} s (the reference round)`);
    const roundRequests = await requests();
    const roundKinds = await countRequestsByKind(cluster.kubeconfig);
    const created = await applyAndWait(clients, namespace, n, { sampler: group, meter: new CpuMeter(group, components) }, replicas.ports);
    const roundRate = await roundRequests();
    const kinds = await roundKinds();
    const afterRound = replicas.readings();
    console.error(`appstack: ${n} Apps Ready in ${created.totalSeconds.toFixed(1)} s on ${replicaCount} replica(s)`);
    const peak = { rootKiB: group.peakRootKiB, treeKiB: group.peakTreeKiB, treePssKiB: group.peakTreePssKiB };
    const peaks = replicas.members.map(({ sampler }) => ({ rssKiB: sampler.peakRootKiB, pssKiB: sampler.peakTreePssKiB }));

    // A quiet minute with every object Ready: what the operator and the control plane spend.
    const meter = new CpuMeter(group, components);
    const quietBefore = meter.snapshot();
    const metricsBefore = await scrape(replicas.ports);
    const quietRequests = await requests();
    group.resetPulumiCount();
    await sleep(idleSeconds * 1000);
    const quietRate = await quietRequests();
    const metricsAfter = await scrape(replicas.ports);
    const quiet = meter.since(quietBefore);
    const quietPulumi = group.pulumiProcesses;
    const quietReconciles = counterTotal(metricsAfter, "appstack_reconcile_total") - counterTotal(metricsBefore, "appstack_reconcile_total");
    const quietReadings = replicas.readings();
    const shares = await replicas.shares(n);
    console.error(`appstack: quiet minute: ${quiet.reconciler.toFixed(1)} CPU s operator, ${quietPulumi} Pulumi processes`);
    const figuresOf = replicas.members.map((replica, i): ReplicaFigures => ({ name: replica.name, share: shares[i]!, ready: ready[i]!, afterRound: afterRound[i]!, quiet: quietReadings[i]!, peak: peaks[i]! }));

    const stored = await storage(replicas);
    console.error(`appstack: state folders ${(stored.state.bytes / 2 ** 20).toFixed(1)} MiB, stack ls ${stored.stackLs.seconds[1]?.toFixed(1)} s`);

    // A restart with every object in place: the operator goes through each once more, as a resync does.
    await replicas.stop();
    const restartStarted = Date.now();
    const restartRequests = await requests();
    replicas = replicas.again();
    const restartMeter = new CpuMeter(replicas.group, components);
    const restartBefore = restartMeter.snapshot();
    await replicas.untilFirstPass(n);
    const restartSeconds = (Date.now() - restartStarted) / 1000;
    const restart = restartMeter.since(restartBefore);
    const restartRate = await restartRequests();
    const restartMetrics = await scrape(replicas.ports);
    const restartPulumi = replicas.group.pulumiProcesses;
    const readyAfterRestart = await readyCount(clients, namespace);
    await replicas.stop();
    console.error(`appstack: restart, every object reconciled in ${restartSeconds.toFixed(1)} s`);

    const figures: ScaleFigures = {
      n, replicas: figuresOf, nodes, concurrency: Number(concurrency), baseline, created, reference, peak,
      startRssKiB: sumOf(ready, (r) => r.rssKiB), startPssKiB: sumOf(ready, (r) => r.pssKiB), idleRssKiB: sumOf(quietReadings, (r) => r.rssKiB), idlePssKiB: sumOf(quietReadings, (r) => r.pssKiB),
      quiet: { split: quiet, pulumiProcesses: quietPulumi, reconciles: quietReconciles, seconds: idleSeconds },
      restart: { split: restart, seconds: restartSeconds, pulumiProcesses: restartPulumi, reconciles: counterTotal(restartMetrics, "appstack_reconcile_total"), operations: counterTotal(restartMetrics, "appstack_pulumi_operations_total"), ready: readyAfterRestart },
      ...stored, load,
      requests: { baseline: baselineRate, round: roundRate, quiet: quietRate, restart: restartRate },
    };
    const backend = onPostgres ? "one PostgreSQL backend" : "a file backend";
    console.log(`\nMeasured ${new Date().toISOString().slice(0, 10)} on ${cpus().length} cores (${cpus()[0]?.model ?? "unknown CPU"}), ${nodes} kwok nodes, ${replicaCount} appstack replica(s) on ${backend}, concurrency ${concurrency} for the baseline and each replica.\n`);
    console.log(scaleTable(figures));
    console.log(`\n${requestKindTable(`appstack's round of ${n} new Apps`, kinds, n)}`);
  } finally {
    clearInterval(loadTimer);
    await replicas?.stop();
    await cluster.stop();
    rmSync(stateRoot, { recursive: true, force: true });
  }
}

const sumOf = <T>(items: readonly T[], pick: (item: T) => number) => items.reduce((sum, item) => sum + pick(item), 0);

await main();
