// `npm run bench:scale`: one round of BENCH_SCALE_APPS new Apps (1,000 by default) on one replica,
// against the baseline's copies of them in the same run, on a cluster with kwok nodes for all of
// them; then what those objects cost appstack once they exist: its memory, a quiet minute, a
// restart (every object reconciled again, as a resync does), its state on disk and the backend's
// `pulumi stack ls`. Prints Markdown for docs/benchmark.md; nothing here asserts on time.
import { type ChildProcess } from "node:child_process";
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
import { counterTotal, metricValue } from "../helpers/operator.ts";
import { ProcessTreeSampler } from "../helpers/proctree.ts";
import { CpuMeter, type Component } from "./cpu.ts";
import { applyAndWait, appsApi, node, scrape, untilReady } from "./rounds.ts";
import { scaleTable, type ScaleFigures } from "./scale-table.ts";
import { benchNodes, idleSeconds } from "./settings.ts";
import { folderSize, stackLsSeconds } from "./state-size.ts";

const n = Number(process.env["BENCH_SCALE_APPS"] ?? "1000");

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** Until a just-started operator has reconciled every one of `objects` once and has nothing queued or running. */
async function untilFirstPass(port: number, objects: number): Promise<void> {
  await untilReady(port);
  for (const deadline = Date.now() + 30 * 60_000; Date.now() < deadline; await sleep(250)) {
    const metrics = await scrape(port);
    const idle = metricValue(metrics, "appstack_queue_depth") === 0 && metricValue(metrics, "appstack_queue_active") === 0;
    if (idle && counterTotal(metrics, "appstack_reconcile_total") >= objects) return;
  }
  throw new Error(`the restarted operator had not reconciled ${objects} objects within 30 minutes`);
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
  const cluster = await startCluster({ exitOnSignal: true, log: (line) => console.error(line), nodes });
  const stateDir = mkdtempSync(join(tmpdir(), "appstack-scale-"));
  const load: number[] = [];
  const loadTimer = setInterval(() => load.push(loadavg()[0]!), 10_000);
  try {
    const clients = kubeClients(cluster.kubeconfig);
    await installApi(clients);
    const components: readonly Component[] = cluster.components;
    const env = { KUBECONFIG: cluster.kubeconfig };

    // The baseline first: its round is the short one, and its ratio stands even if appstack's does not finish.
    const baselineChild = node("test/bench/baseline.ts", { ...env, BASELINE_CONCURRENCY: concurrency, BASELINE_NAMESPACE_PREFIX: "scale-baseline-" });
    const baselineSampler = new ProcessTreeSampler(baselineChild.pid!);
    baselineSampler.start();
    await sleep(3_000);
    const baseline = await applyAndWait(clients, `scale-baseline-${n}`, n, { sampler: baselineSampler, meter: new CpuMeter(baselineSampler, components) });
    baselineSampler.stop();
    await stopProcess(baselineChild);
    console.error(`baseline: ${n} Apps Ready in ${baseline.totalSeconds.toFixed(1)} s`);

    const namespace = `scale-appstack-${n}`;
    const [metricsPort] = (await freeLoopbackPorts(1)) as [number];
    // The default resync period (10 minutes): the quiet minute is the operator left alone.
    const operatorEnv = { ...env, APPSTACK_STATE_DIR: stateDir, APPSTACK_PASSPHRASE: "bench", APPSTACK_CONCURRENCY: concurrency, APPSTACK_LOG_LEVEL: "warn", APPSTACK_HEALTH_ADDR: `127.0.0.1:${metricsPort}`, APPSTACK_NAMESPACES: namespace, APPSTACK_LEADER_ELECT: "false" };
    let operator = node("operator/cmd/main.ts", operatorEnv);
    let sampler = new ProcessTreeSampler(operator.pid!);
    sampler.start();
    await untilReady(metricsPort);
    await sleep(1_000); // a PSS sample of the ready operator with no object (one in ten samples reads it)
    const startRssKiB = sampler.rootKiB;
    const startPssKiB = sampler.treePssKiB;
    const created = await applyAndWait(clients, namespace, n, { sampler, meter: new CpuMeter(sampler, components) }, metricsPort);
    console.error(`appstack: ${n} Apps Ready in ${created.totalSeconds.toFixed(1)} s`);
    const peak = { rootKiB: sampler.peakRootKiB, treeKiB: sampler.peakTreeKiB, treePssKiB: sampler.peakTreePssKiB };

    // A quiet minute with every object Ready: what the operator and the control plane spend.
    const meter = new CpuMeter(sampler, components);
    const quietBefore = meter.snapshot();
    const metricsBefore = await scrape(metricsPort);
    sampler.resetPulumiCount();
    await sleep(idleSeconds * 1000);
    const metricsAfter = await scrape(metricsPort);
    const quiet = meter.since(quietBefore);
    const quietPulumi = sampler.pulumiProcesses;
    const quietReconciles = counterTotal(metricsAfter, "appstack_reconcile_total") - counterTotal(metricsBefore, "appstack_reconcile_total");
    const idleRssKiB = sampler.rootKiB;
    const idlePssKiB = sampler.treePssKiB;
    console.error(`appstack: quiet minute: ${quiet.reconciler.toFixed(1)} CPU s operator, ${quietPulumi} Pulumi processes`);

    const state = folderSize(stateDir);
    const backend = folderSize(join(stateDir, "backend"));
    const stackLs = stackLsSeconds(stateDir, "bench", 3);
    console.error(`appstack: state ${(state.bytes / 2 ** 20).toFixed(1)} MiB, stack ls ${stackLs.seconds[1]?.toFixed(1)} s`);

    // A restart with every object in place: the operator goes through each once more, as a resync does.
    sampler.stop();
    await stopProcess(operator);
    const restartStarted = Date.now();
    operator = node("operator/cmd/main.ts", operatorEnv);
    sampler = new ProcessTreeSampler(operator.pid!);
    const restartMeter = new CpuMeter(sampler, components);
    const restartBefore = restartMeter.snapshot();
    sampler.start();
    await untilFirstPass(metricsPort, n);
    const restartSeconds = (Date.now() - restartStarted) / 1000;
    const restart = restartMeter.since(restartBefore);
    const restartMetrics = await scrape(metricsPort);
    const restartPulumi = sampler.pulumiProcesses;
    const readyAfterRestart = await readyCount(clients, namespace);
    sampler.stop();
    await stopProcess(operator);
    console.error(`appstack: restart, every object reconciled in ${restartSeconds.toFixed(1)} s`);

    const figures: ScaleFigures = {
      n, nodes, concurrency: Number(concurrency), baseline, created, peak, startRssKiB, startPssKiB, idleRssKiB, idlePssKiB,
      quiet: { split: quiet, pulumiProcesses: quietPulumi, reconciles: quietReconciles, seconds: idleSeconds },
      restart: { split: restart, seconds: restartSeconds, pulumiProcesses: restartPulumi, reconciles: counterTotal(restartMetrics, "appstack_reconcile_total"), operations: counterTotal(restartMetrics, "appstack_pulumi_operations_total"), ready: readyAfterRestart },
      state, backend, stackLs, load,
    };
    console.log(`\nMeasured ${new Date().toISOString().slice(0, 10)} on ${cpus().length} cores (${cpus()[0]?.model ?? "unknown CPU"}), ${nodes} kwok nodes, concurrency ${concurrency} for both.\n`);
    console.log(scaleTable(figures));
  } finally {
    clearInterval(loadTimer);
    await cluster.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

await main();
