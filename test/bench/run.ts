// `npm run bench`: appstack against a minimal client-node SSA reconciler on the same local
// cluster. N Apps are applied at once; the clock runs until every one is Ready. Prints a Markdown
// table for docs/measurements.md. A benchmark, not a test: nothing here asserts on time.
import { type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients, type KubeClients } from "../../operator/kube/clients.ts";
import { buildToolchain } from "../../toolchain/build.ts";
import { startCluster } from "../../toolchain/cluster/cluster.ts";
import { freeLoopbackPorts } from "../../toolchain/cluster/ports.ts";
import { counterTotal } from "../helpers/operator.ts";
import { driftRound, type DriftRound } from "./drift.ts";
import { cliTimes, previewRound, type CliTimes, type PreviewRound } from "./previews.ts";
import { ProcessTreeSampler } from "../helpers/proctree.ts";
import { CpuMeter, type Component } from "./cpu.ts";
import { defaultConcurrency } from "../../operator/manager/config.ts";
import { applyAndWait, appNames, node, scrape, setImage, untilReady, writeAndWait } from "./rounds.ts";
import { benchNodes, idleSeconds, previewCount, resyncSeconds, singleRuns, sizes, sweep, sweepSize } from "./settings.ts";
import { driftTable, perObjectCpu, previewTable, sweepTable, table, targetTable, type Measured, type Round, type SweepRound } from "./tables.ts";

/** `afterRounds` runs once the figures of the rounds are taken, before the idle period. */
async function measure(label: string, start: () => ChildProcess, clients: KubeClients, components: readonly Component[], withIdle: boolean, afterRounds?: () => Promise<void>, metricsPort?: number): Promise<Measured> {
  const child = start();
  const sampler = new ProcessTreeSampler(child.pid!);
  const tree = { sampler, meter: new CpuMeter(sampler, components) };
  sampler.start();
  // The rounds measure reconciling, not start-up: appstack says when it is ready (its caches
  // synced, which a new CRD's storage can hold up for a few seconds); the baseline gets 3 s.
  if (metricsPort) await untilReady(metricsPort);
  else await sleep(3_000);
  const rounds: Round[] = [];
  let pulumiProcesses = 0;
  for (const n of sizes) {
    rounds.push(await applyAndWait(clients, `bench-${label}-${n}`, n, tree, metricsPort));
    pulumiProcesses += rounds.at(-1)!.pulumiProcesses;
    console.error(`${label}: ${n} Apps Ready in ${rounds.at(-1)!.totalSeconds.toFixed(1)} s`);
  }
  const largest = sizes.at(-1)!;
  const update = await writeAndWait(clients, `bench-${label}-${largest}`, appNames(largest), setImage(clients, `bench-${label}-${largest}`, "nginx:1.28"), tree, metricsPort);
  console.error(`${label}: ${largest} Apps given a new image, all rolled out in ${update.totalSeconds.toFixed(1)} s`);
  const single: number[] = [];
  for (let i = 0; i < singleRuns; i++) {
    const round = await writeAndWait(clients, `bench-${label}-${largest}`, ["app-0"], setImage(clients, `bench-${label}-${largest}`, `nginx:1.${29 + i}`), tree);
    single.push(round.totalSeconds);
  }
  single.sort((a, b) => a - b);
  const cpu = sampler.cpuSeconds() ?? { own: 0, children: 0 };
  const peakOwnMiB = sampler.peakRootKiB / 1024;
  const peakTreeMiB = sampler.peakTreeKiB / 1024;
  const peakTreePssMiB = sampler.peakTreePssKiB / 1024;
  await afterRounds?.();
  let idle: Pick<Measured, "idlePulumiProcesses" | "idleResyncs" | "idleReconciles"> = {};
  if (withIdle) {
    const metrics = () => scrape(metricsPort);
    const before = await metrics();
    sampler.resetPulumiCount();
    await sleep(idleSeconds * 1000);
    const after = await metrics();
    const delta = (name: string) => counterTotal(after, name) - counterTotal(before, name);
    idle = { idlePulumiProcesses: sampler.pulumiProcesses, idleResyncs: delta("appstack_resync_total"), idleReconciles: delta("appstack_reconcile_total") };
  }
  sampler.stop();
  child.kill("SIGTERM");
  await new Promise((resolve) => child.once("exit", resolve));
  return { rounds, update, single, cpuOwn: cpu.own, cpuChildren: cpu.children, peakOwnMiB, peakTreeMiB, peakTreePssMiB, pulumiProcesses, ...idle };
}

async function deleteNamespaces(clients: KubeClients, label: string): Promise<void> {
  for (const n of sizes) await clients.core.deleteNamespace({ name: `bench-${label}-${n}` }).catch(() => undefined);
}

/** The first size again on a fresh operator per concurrency setting, in namespaces of their own. */
async function concurrencySweep(clients: KubeClients, components: readonly Component[], operatorEnv: Record<string, string>): Promise<SweepRound[]> {
  const results: SweepRound[] = [];
  for (const concurrency of sweep) {
    const namespace = `bench-sweep-${concurrency}`;
    const child = node("operator/cmd/main.ts", { ...operatorEnv, APPSTACK_CONCURRENCY: String(concurrency), APPSTACK_NAMESPACES: namespace, APPSTACK_LEADER_ELECT: "false", APPSTACK_HEALTH_ADDR: "127.0.0.1:0" });
    const sampler = new ProcessTreeSampler(child.pid!);
    sampler.start();
    await sleep(3_000);
    const round = await applyAndWait(clients, namespace, sweepSize, { sampler, meter: new CpuMeter(sampler, components) });
    sampler.stop();
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
    console.error(`sweep: concurrency ${concurrency}, ${sweepSize} Apps Ready in ${round.totalSeconds.toFixed(1)} s`);
    results.push({ concurrency, round, peakTreeMiB: sampler.peakTreeKiB / 1024, peakTreePssMiB: sampler.peakTreePssKiB / 1024 });
  }
  return results;
}

/**
 * The most pods the run has at once: every round's Apps of both reconcilers (appstack's stay until
 * the end, their finalizers need it), the previews and the sweep, and one more pod per App of the
 * largest round while the new image rolls out (a surge of one, as the Deployments have it).
 */
const benchPods = 2 * sizes.reduce((a, b) => a + b, 0) + previewCount + sweep.length * sweepSize + sizes.at(-1)!;

async function main(): Promise<void> {
  buildToolchain();
  const concurrency = process.env["APPSTACK_CONCURRENCY"] ?? String(defaultConcurrency());
  const cluster = await startCluster({ exitOnSignal: true, log: (line) => console.error(line), nodes: benchNodes(benchPods) });
  const stateDir = mkdtempSync(join(tmpdir(), "appstack-bench-"));
  try {
    const clients = kubeClients(cluster.kubeconfig);
    await installApi(clients);
    const env = { KUBECONFIG: cluster.kubeconfig };
    let previews: { round: PreviewRound; cli: CliTimes } | undefined;
    let drift: DriftRound | undefined;
    const measurePreviews = async () => {
      const first = sizes[0]!;
      drift = await driftRound(clients, `bench-appstack-${first}`, Array.from({ length: first }, (_, i) => `app-${i}`));
      console.error(`appstack: one drift repaired in ${drift.single[0]!.toFixed(1)} s; ${drift.n} at once in ${drift.allSeconds.toFixed(1)} s`);
      const round = await previewRound(clients, "bench-appstack-preview", previewCount);
      console.error(`appstack: ${previewCount} previews in ${round.previewedSeconds.toFixed(1)} s, approved to Ready in ${round.approvedSeconds.toFixed(1)} s`);
      previews = { round, cli: cliTimes(cluster.kubeconfig, stateDir, "bench", { namespace: `bench-appstack-${sizes[0]}`, name: "app-0" }) };
    };
    const [metricsPort] = await freeLoopbackPorts(1);
    const operatorEnv = { ...env, APPSTACK_STATE_DIR: stateDir, APPSTACK_PASSPHRASE: "bench", APPSTACK_CONCURRENCY: concurrency, APPSTACK_LOG_LEVEL: "warn", APPSTACK_HEALTH_ADDR: `127.0.0.1:${metricsPort}`, APPSTACK_RESYNC_SECONDS: String(resyncSeconds) };
    const components = cluster.components;
    const appstack = await measure("appstack", () => node("operator/cmd/main.ts", operatorEnv), clients, components, true, measurePreviews, metricsPort);
    const swept = await concurrencySweep(clients, components, operatorEnv);
    // The baseline gets fresh copies of the same objects; appstack's finalizers need appstack
    // gone before their namespaces can go, so they stay until the end.
    const baseline = await measure("baseline", () => node("test/bench/baseline.ts", { ...env, BASELINE_CONCURRENCY: concurrency, BASELINE_NAMESPACE_PREFIX: "bench-baseline-" }), clients, components, false);
    console.log(`\nMeasured ${new Date().toISOString().slice(0, 10)} on ${cpus().length} cores (${cpus()[0]?.model ?? "unknown CPU"}), local control plane with kwok nodes, concurrency ${concurrency} for both.\n`);
    console.log(targetTable(appstack, baseline));
    console.log(`\nWhat appstack's Pulumi operations were (from its metrics): ${sizes.at(-1)} new Apps: ${appstack.rounds.at(-1)!.operations ?? "-"}; the new image: ${appstack.update.operations ?? "-"}.`);
    console.log(`\n${table(appstack, baseline)}`);
    console.log(`\n${perObjectCpu(appstack, baseline)}`);
    console.log(`\n${sweepTable(swept)}`);
    if (drift) console.log(`\n${driftTable(drift)}`);
    if (previews) console.log(`\n${previewTable(previews.round, previews.cli)}`);
    await deleteNamespaces(clients, "baseline");
  } finally {
    await cluster.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

await main();
