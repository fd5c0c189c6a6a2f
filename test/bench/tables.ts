// The Markdown tables the benchmark prints for docs/measurements.md, and the figures they are made of.
import { cpus } from "node:os";
import { defaultConcurrency } from "../../operator/manager/config.ts";
import { cpuTable, type CpuSplit } from "./cpu.ts";
import type { DriftRound } from "./drift.ts";
import type { CliTimes, PreviewRound } from "./previews.ts";
import { idleSeconds, previewCount, resyncSeconds, sizes, sweepSize } from "./settings.ts";

export interface Round {
  readonly n: number;
  readonly totalSeconds: number;
  readonly p50: number;
  readonly p95: number;
  /** Pulumi CLI processes seen and CPU seconds of the reaped children (engines, plugins) during the round. */
  readonly pulumiProcesses: number;
  readonly childCpuSeconds: number;
  /** CPU seconds during the round, by who spent them (cpu.ts). */
  readonly cpu: CpuSplit;
  /** appstack only: its Pulumi operations and failed reconciles during the round, by label, from its metrics. */
  readonly operations?: string;
}

export interface Measured {
  readonly rounds: Round[];
  /** The Apps of the largest round, all given a new image at once. */
  readonly update: Round;
  /** One App's spec changed, until it is Ready again: each run, in seconds. */
  readonly single: number[];
  readonly cpuOwn: number;
  readonly cpuChildren: number;
  readonly peakOwnMiB: number;
  readonly peakTreeMiB: number;
  readonly peakTreePssMiB: number;
  readonly pulumiProcesses: number;
  readonly idlePulumiProcesses?: number;
  /** Resyncs and reconciles during the idle period (from the operator's metrics). */
  readonly idleResyncs?: number;
  readonly idleReconciles?: number;
}


export function table(appstack: Measured, baseline: Measured): string {
  const f = (x: number, d = 1) => x.toFixed(d);
  const rows = appstack.rounds.map((a, i) => {
    const b = baseline.rounds[i]!;
    return `| ${a.n} | ${f(a.totalSeconds)} s | ${f(a.p50)} / ${f(a.p95)} s | ${f(b.totalSeconds)} s | ${f(b.p50)} / ${f(b.p95)} s | ${f(a.totalSeconds / b.totalSeconds)}x |`;
  });
  return [
    "| Apps at once | appstack: all Ready | appstack: p50 / p95 per App | baseline: all Ready | baseline: p50 / p95 | ratio (all Ready) |",
    "|---|---|---|---|---|---|",
    ...rows,
    "",
    "| whole run | appstack | baseline | ratio |",
    "|---|---|---|---|",
    `| CPU seconds, operator process | ${f(appstack.cpuOwn)} | ${f(baseline.cpuOwn)} | ${f(appstack.cpuOwn / Math.max(baseline.cpuOwn, 0.01))}x |`,
    `| CPU seconds, processes it started (Pulumi CLI and provider) | ${f(appstack.cpuChildren)} | ${f(baseline.cpuChildren)} | - |`,
    `| peak RSS, operator process | ${f(appstack.peakOwnMiB, 0)} MiB | ${f(baseline.peakOwnMiB, 0)} MiB | ${f(appstack.peakOwnMiB / baseline.peakOwnMiB)}x |`,
    `| peak RSS, operator and everything it started | ${f(appstack.peakTreeMiB, 0)} MiB | ${f(baseline.peakTreeMiB, 0)} MiB | ${f(appstack.peakTreeMiB / baseline.peakTreeMiB)}x |`,
    `| peak PSS (shared pages counted once), operator and everything it started | ${f(appstack.peakTreePssMiB, 0)} MiB | ${f(baseline.peakTreePssMiB, 0)} MiB | ${f(appstack.peakTreePssMiB / baseline.peakTreePssMiB)}x |`,
    `| Pulumi processes started while applying | ${appstack.pulumiProcesses} | 0 | - |`,
    `| Pulumi processes started in ${idleSeconds} s idle with ${sizes.reduce((a, b) => a + b, previewCount)} Apps (${previewCount} of them with updatePolicy Preview), resync every ${resyncSeconds} s: ${appstack.idleResyncs ?? "-"} resyncs, ${appstack.idleReconciles ?? "-"} reconciles | ${appstack.idlePulumiProcesses ?? "-"} | 0 | - |`,
  ].join("\n");
}

/** Issue 10's targets, with this run's figures beside them. */
export function targetTable(appstack: Measured, baseline: Measured): string {
  const f = (x: number, d = 1) => x.toFixed(d);
  const round = (m: Measured, n: number) => m.rounds.find((r) => r.n === n);
  const ratio = (n: number) => {
    const a = round(appstack, n);
    const b = round(baseline, n);
    return a && b ? a.totalSeconds / b.totalSeconds : NaN;
  };
  const largest = sizes.at(-1)!;
  const created = round(appstack, largest)!;
  const median = (runs: number[]) => runs[Math.floor(runs.length / 2)]!;
  const row = (figure: string, now: string, target: string, met: boolean) => `| ${figure} | ${now} | ${target} | ${met ? "yes" : "no"} |`;
  const perNew = created.pulumiProcesses / created.n;
  const perUpdate = appstack.update.pulumiProcesses / appstack.update.n;
  const cpuNew = created.childCpuSeconds / created.n;
  const cpuUpdate = appstack.update.childCpuSeconds / appstack.update.n;
  const updateRatio = appstack.update.totalSeconds / baseline.update.totalSeconds;
  return [
    "| figure | this run | target | met |",
    "|---|---|---|---|",
    row(`${largest} new Apps, all Ready, ratio to the baseline`, `${f(ratio(largest), 2)}x`, "at most 2x", ratio(largest) <= 2),
    row(`${sizes[0]} new Apps, ratio`, `${f(ratio(sizes[0]!), 2)}x`, "at most 3x", ratio(sizes[0]!) <= 3),
    row(`${largest} existing Apps get a new image at once, all rolled out, ratio`, `${f(updateRatio, 2)}x (${f(appstack.update.totalSeconds)} s against ${f(baseline.update.totalSeconds)} s)`, "at most 1.5x", updateRatio <= 1.5),
    row("Pulumi CLI processes per new App / per update", `${f(perNew, 2)} / ${f(perUpdate, 2)}`, "at most 2 / 1", perNew <= 2 && perUpdate <= 1),
    row("engine CPU seconds per new App", f(cpuNew, 2), "at most 1.0", cpuNew <= 1),
    row("engine CPU seconds per update", f(cpuUpdate, 2), "at most 0.5", cpuUpdate <= 0.5),
    row(`single spec change to Ready, median of ${appstack.single.length}`, `${f(median(appstack.single))} s (baseline ${f(median(baseline.single))} s)`, "at most 2 s", median(appstack.single) <= 2),
    row(`peak RSS, operator and everything it started, up to ${largest} Apps`, `${f(appstack.peakTreeMiB, 0)} MiB`, "at most 600 MiB", appstack.peakTreeMiB <= 600),
    row(`Pulumi processes in ${idleSeconds} s idle, with a resync every ${resyncSeconds} s`, String(appstack.idlePulumiProcesses ?? "-"), "0", appstack.idlePulumiProcesses === 0),
  ].join("\n");
}

/** The CPU of one object's operation, split by who spent it, for the largest round and the new image. */
export function perObjectCpu(appstack: Measured, baseline: Measured): string {
  const largest = appstack.rounds.at(-1)!;
  const column = (title: string, round: Round) => ({ title, split: round.cpu, n: round.n, seconds: round.totalSeconds });
  return cpuTable([
    column(`appstack: ${largest.n} new Apps`, largest),
    column("baseline: the same", baseline.rounds.at(-1)!),
    column(`appstack: ${appstack.update.n} new images`, appstack.update),
    column("baseline: the same", baseline.update),
  ], cpus().length);
}

export interface SweepRound {
  readonly concurrency: number;
  readonly round: Round;
  /** The operator and everything it started, at their peak: the sum of RSS and the PSS. */
  readonly peakTreeMiB: number;
  readonly peakTreePssMiB: number;
}


export function sweepTable(rounds: SweepRound[]): string {
  return [
    `| concurrency | ${sweepSize} new Apps, all Ready | p50 / p95 per App | engine CPU s per App | peak RSS sum / PSS, operator and everything it started |`,
    "|---|---|---|---|---|",
    ...rounds.map(({ concurrency, round, peakTreeMiB, peakTreePssMiB }) => `| ${concurrency}${concurrency === defaultConcurrency() ? " (default here)" : ""} | ${round.totalSeconds.toFixed(1)} s | ${round.p50.toFixed(1)} / ${round.p95.toFixed(1)} s | ${(round.childCpuSeconds / round.n).toFixed(2)} | ${peakTreeMiB.toFixed(0)} / ${peakTreePssMiB.toFixed(0)} MiB |`),
  ].join("\n");
}

export function driftTable(round: DriftRound): string {
  const spread = (runs: number[]) => `${runs[Math.floor(runs.length / 2)]!.toFixed(1)} s (min ${runs[0]!.toFixed(1)}, max ${runs.at(-1)!.toFixed(1)})`;
  return [
    "| drift (a Deployment scaled by hand) | figure |",
    "|---|---|",
    `| one edit until repaired (replicas back, App Ready), median of ${round.single.length} | ${spread(round.single)} |`,
    `| ${round.n} edits at once until all are repaired | ${round.allSeconds.toFixed(1)} s |`,
  ].join("\n");
}

export function previewTable(round: PreviewRound, cli: CliTimes): string {
  const spread = (runs: number[]) => `${runs[Math.floor(runs.length / 2)]!.toFixed(1)} s (min ${runs[0]!.toFixed(1)}, max ${runs.at(-1)!.toFixed(1)})`;
  return [
    "| previews | figure |",
    "|---|---|",
    `| ${round.n} Apps with updatePolicy Preview created at once: until every one has status.preview | ${round.previewedSeconds.toFixed(1)} s |`,
    `| the ${round.n} plans approved at once: until every App is Ready | ${round.approvedSeconds.toFixed(1)} s |`,
    `| \`appstack preview -f\`, whole command, an App with a stack (scale change), median of ${cli.existing.length} | ${spread(cli.existing)} |`,
    `| \`appstack preview -f\`, whole command, a new App (throwaway backend), median of ${cli.created.length} | ${spread(cli.created)} |`,
  ].join("\n");
}
