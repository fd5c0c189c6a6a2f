// The bench's rounds: objects written at once, timed until each is Ready, with the CPU and the
// processes of the reconciler's tree; shared by the bench (run.ts) and its scale round (scale.ts).
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { App } from "../../components/app.ts";
import { mergePatch, type KubeClients } from "../../operator/kube/clients.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { httpGet } from "../helpers/http.ts";
import { appsApi, ReadyWatch } from "./ready-watch.ts";
import type { TreeReadings } from "../helpers/proctree.ts";
import type { CpuMeter } from "./cpu.ts";
import type { Round } from "./tables.ts";

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** Where the operator's replicas serve /metrics: one port, or several (their series add up, see countersBetween); none for the baseline. */
export type MetricsPorts = number | readonly number[] | undefined;

/** The operator's metrics, its replicas' one after the other; empty for the baseline, which has none. */
export async function scrape(metricsPorts: MetricsPorts): Promise<string> {
  const ports = typeof metricsPorts === "number" ? [metricsPorts] : (metricsPorts ?? []);
  return (await Promise.all(ports.map(async (port) => (await httpGet(`http://127.0.0.1:${port}/metrics`)).body))).join("\n");
}

/** A reconciler's process tree, sampled, and the meter of its CPU and the control plane's. */
export interface Tree {
  readonly sampler: TreeReadings;
  readonly meter: CpuMeter;
}

/** Writes to `names` at once (`write` per name), then waits until each is Ready at its new generation. */
export async function writeAndWait(clients: KubeClients, namespace: string, names: string[], write: (name: string) => Promise<unknown>, { sampler, meter }: Tree, metricsPorts?: MetricsPorts): Promise<Round> {
  const metrics = () => scrape(metricsPorts);
  const metricsBefore = await metrics();
  sampler.resetPulumiCount();
  const cpuBefore = sampler.cpuSeconds()?.children ?? 0;
  const splitBefore = meter.snapshot();
  const watch = await ReadyWatch.start(clients, namespace);
  const started = Date.now();
  try {
    await Promise.all(names.map(async (name) => {
      const object = (await write(name)) as App;
      watch.expect(name, object.metadata.generation ?? 1, Date.now());
    }));
    await watch.untilAllReady(30 * 60_000);
  } finally {
    await watch.stop();
  }
  const perObject = watch.secondsToReady();
  return {
    n: names.length,
    totalSeconds: (Math.max(...watch.readyAt.values()) - started) / 1000,
    p50: percentile(perObject, 50),
    p95: percentile(perObject, 95),
    pulumiProcesses: sampler.pulumiProcesses,
    childCpuSeconds: (sampler.cpuSeconds()?.children ?? 0) - cpuBefore,
    cpu: meter.since(splitBefore),
    ...(metricsPorts ? { operations: countersBetween(metricsBefore, await metrics(), ["appstack_pulumi_operations_total", "appstack_reconcile_errors_total"]) } : {}),
  };
}

/** What each labelled series of the counters `names` grew by between two scrapes (of several replicas: summed), as "labels +n". */
export function countersBetween(before: string, after: string, names: string[]): string {
  const series = (body: string) => {
    const sums = new Map<string, number>();
    for (const line of body.split("\n").filter((l) => names.some((name) => l.startsWith(`${name}{`)))) {
      const key = line.slice(0, line.lastIndexOf(" "));
      sums.set(key, (sums.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
    }
    return sums;
  };
  const old = series(before);
  return [...series(after)].map(([key, value]) => [key, value - (old.get(key) ?? 0)] as const).filter(([, grew]) => grew > 0).map(([key, grew]) => `${key.replace(/^appstack_/, "")} +${grew}`).join(", ") || "none";
}

export const appNames = (n: number) => Array.from({ length: n }, (_, i) => `app-${i}`);

export async function applyAndWait(clients: KubeClients, namespace: string, n: number, tree: Tree, metricsPorts?: MetricsPorts): Promise<Round> {
  await clients.core.createNamespace({ body: { metadata: { name: namespace } } });
  return writeAndWait(clients, namespace, appNames(n), (name) => clients.custom.createNamespacedCustomObject({
    ...appsApi, namespace,
    body: { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name, namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } },
  }), tree, metricsPorts);
}

export function setImage(clients: KubeClients, namespace: string, image: string): (name: string) => Promise<unknown> {
  return (name) => clients.custom.patchNamespacedCustomObject({ ...appsApi, namespace, name, body: { spec: { image } } }, mergePatch);
}

/** Until the operator's `/readyz` answers 200 (leading, caches synced). */
export async function untilReady(port: number): Promise<void> {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(100)) {
    if ((await httpGet(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200) return;
  }
  throw new Error("the operator was not ready within 120 s");
}

/** A reconciler's process; with BENCH_CPU_PROFILE_DIR set, it writes a V8 CPU profile there when it exits (node --cpu-prof). */
export function node(script: string, env: Record<string, string>): ChildProcess {
  const profileDir = process.env["BENCH_CPU_PROFILE_DIR"];
  const profile = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  return spawn(process.execPath, [...profile, join(repoRoot, script)], { cwd: repoRoot, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, ...env } });
}

